"""`loopguard replay FILE[::NAME]`: one trace's verdict timeline (a JSONL trace streamed, in bounded memory)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._common import EXIT_OK, load_one, out, policy_type, print_json, report_warnings, trace_warnings

if TYPE_CHECKING:
    from ..core._expect import Mismatch



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="a trace file; FILE::NAME picks one trace of several")
    p.add_argument("--policy", type=policy_type,
                   help="a preset, policy file or inline {mapping} (default: the trace's own)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--html", metavar="OUT", help="also write the timeline as a self-contained HTML page to OUT")


def streams(args: argparse.Namespace) -> bool:
    """Whether this file's timeline is streamed: a plain .jsonl path, printing the timeline (--json and --html
    need the whole result)."""
    return str(args.file).lower().endswith(".jsonl") and "::" not in str(args.file) and not (args.json or args.html)


def mismatch_lines(mismatches: Sequence[Mismatch]) -> list[str]:
    """What is printed under the timeline about unmet expectations (nothing when all hold)."""
    if not mismatches:
        return []
    return [f"expectations: {len(mismatches)} mismatch{'es' if len(mismatches) != 1 else ''}",
            *(f"  {m}" for m in mismatches)]


def run(args: argparse.Namespace) -> int:
    if streams(args):
        from ._timeline import stream_timeline  # tabulate, row by row

        with trace_warnings():
            streamed = stream_timeline(args.file, args.policy, out)
        if streamed is not None:  # None: a scenario, simulated below as a whole
            report_warnings([streamed.result.trace])
            if (note := streamed.result.what_if_note()) is not None:
                out(note)
            for line in mismatch_lines(streamed.mismatches):
                out(line)
            return EXIT_OK
    from ..core._expect import check
    from ..io._runner import execute
    from ..report._tables import timeline_table

    trace = load_one(args.file)
    result = execute(trace, args.policy)
    if args.html:
        from ..report._run_report import replay_html

        replay_html(args.html, result, args.policy)
    if args.json:
        print_json(result.to_dict())
        return EXIT_OK
    out(timeline_table(result))
    if (note := result.what_if_note()) is not None:
        out(note)
    for line in mismatch_lines(check(result)):
        out(line)
    return EXIT_OK
