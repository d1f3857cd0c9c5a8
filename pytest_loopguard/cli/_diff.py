"""`loopguard diff PATHS --before P --after Q`: replay a corpus under two policies and show what moved.

Exit status: 0 nothing moved, 1 something did (a CI gate), 2 bad input (which wins over 1, as in `run`).
"""

from __future__ import annotations

import argparse

from ._common import EXIT_BAD_INPUT, report_errors


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATHS",
                   help="trace files or folders; default: the loopguard_paths ini option, as pytest reads it; else "
                        "traces (as `loopguard run`)")
    p.add_argument("--before", required=True, metavar="P", help="the old policy: preset, policy file or git:REV:PATH")
    p.add_argument("--after", required=True, metavar="Q", help="the new policy, in the same forms")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print a JSON object")
    form.add_argument("--markdown", action="store_true", help="print Markdown (for a pull-request comment)")
    p.add_argument("--all", action="store_true", help="list the traces where nothing moved too")


def run(args: argparse.Namespace) -> int:
    from ._policy_diff import compare  # YAML and git for git:REV:PATH, the diff itself, Markdown

    if not args.paths:
        from pathlib import Path

        from ._inifile import trace_paths  # pytest's ini files: only when no PATHS are given

        args.paths = trace_paths(Path.cwd())

    status, errors = compare(args)
    report_errors(errors)
    return EXIT_BAD_INPUT if errors else status
