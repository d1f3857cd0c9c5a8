"""`loopguard view PATHS [--policy P ...] [-o FILE]`: every trace under PATHS as a page to read step by step."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._common import EXIT_BAD_INPUT, EXIT_OK, as_trace_error, out, policy_type, report_errors

if TYPE_CHECKING:
    from ..core._model import Step, Verdict

DEFAULT_OUTPUT = "loopguard-view.html"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATHS", help="trace files or folders (FILE::NAME picks one trace)")
    p.add_argument("--policy", type=policy_type, action="append", metavar="P",
                   help="a preset, policy file or inline {mapping}; repeat it to see policies side by side "
                        "(default: each trace's own)")
    p.add_argument("-o", "--output", metavar="FILE", default=DEFAULT_OUTPUT,
                   help=f"the page to write (default: {DEFAULT_OUTPUT})")


def scan_loops(steps: Sequence[Step], verdicts: Sequence[tuple[Verdict, ...]], ends: set[int]) -> list[dict[str, Any]]:
    """The loops of a replayed run as `loopguard scan` finds them, each with its first and last step position."""
    from ..scan._loops import CALL_KINDS, loops_of

    calls = [i for i, step in enumerate(steps) if step.kind in CALL_KINDS]
    return [{"first": lp.step, "last": calls[lp.end_call], "what": lp.what, "calls": lp.calls, "tokens": lp.tokens,
             "action": lp.action, "reasons": list(lp.reasons), "stopped": lp.stopped}
            for lp in loops_of(steps, verdicts, ends)]


def run(args: argparse.Namespace) -> int:
    from ..errors import LoopguardError, TraceError
    from ..io._runner import execute
    from ..report._console import progress
    from ..report._view import run_data, view_page
    from ._common import load_one, policy_arg, validate_traces

    policies: list[Any] = args.policy or [None]
    for spec in policies:
        policy_arg(spec)  # a bad name fails here, once, before any replay
    picked = [p for p in args.paths if "::" in p]
    traces, errors = validate_traces([p for p in args.paths if "::" not in p])
    for spec in picked:
        try:
            traces.append(load_one(spec))
        except LoopguardError as exc:
            errors.append(exc if isinstance(exc, TraceError) else TraceError(str(exc), file=spec))
    runs: list[dict[str, Any]] = []
    for trace in progress(traces, "replaying"):
        try:
            runs += run_data([(execute(trace, p), p) for p in policies], scan_loops)
        except LoopguardError as exc:
            errors.append(as_trace_error(exc, trace))
    title = f"loopguard view: {len(runs)} run{'s' if len(runs) != 1 else ''}"
    from pathlib import Path

    target = Path(args.output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(view_page(runs, title), encoding="utf-8")
    out(f"{len(runs)} run{'s' if len(runs) != 1 else ''} under {len(policies)} "
        f"polic{'ies' if len(policies) != 1 else 'y'} written to {target}")
    report_errors(errors)
    return EXIT_BAD_INPUT if errors else EXIT_OK

