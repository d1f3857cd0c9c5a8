"""`loopguard serve [--policy P] [--record PATH]`: the Guard behind the guard protocol on stdin/stdout.

An agent in any language starts it and sends each event as one JSON line; each reply is one line with the
verdicts (docs/protocol.md). Nothing else is written to stdout; problems go to stderr. With `--record`, each
run is written as a trace (redacted JSONL): a `.jsonl` path for one run (later runs get `-2`, `-3`...), else a
folder with a file per run named after it.
"""

from __future__ import annotations

import argparse
import sys

from ._common import EXIT_OK, policy_type


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", type=policy_type,
                   help="a preset, policy file or inline {mapping} (default: the run_start's `policy`, else default)")
    p.add_argument("--record", metavar="PATH",
                   help="write each run as a trace: a .jsonl file (one run), else a folder (a file per run)")
    p.add_argument("--no-redact", action="store_true", help="record strings as they are (default: redacted)")


def run(args: argparse.Namespace) -> int:
    from ..live._serve import GuardServer, serve

    server = GuardServer(args.policy, record=args.record, redact=not args.no_redact)
    # line-buffered text streams: a reply leaves as soon as it is written
    with open(sys.stdin.fileno(), encoding="utf-8", errors="surrogateescape", closefd=False) as stdin, \
            open(sys.stdout.fileno(), "w", encoding="utf-8", closefd=False, buffering=1) as stdout:
        serve(stdin, stdout, server)
    if server.recorded:
        sys.stderr.write(f"loopguard serve: recorded {len(server.recorded)} run(s): "
                         f"{', '.join(str(p) for p in server.recorded)}\n")
    return EXIT_OK
