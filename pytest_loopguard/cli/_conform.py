"""`loopguard conform GUARD_CMD [PATHS] [--against PRESET|expectations]`: an external guard's verdicts, step by step.

Every trace under PATHS is replayed through the guard process (one process, reused) and compared with the
reference: a preset's verdicts on the same trace, or the trace's own expectations. A line per trace (the
first difference, where there is one) and a summary; exit 1 on any difference, 2 when the guard broke the
protocol on a trace or a trace could not be read.
"""

from __future__ import annotations

import argparse
import shlex

from ._common import EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK, err, out, report_errors, validate_traces


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("guard", metavar="GUARD_CMD", help="the guard's command line, e.g. \"node guard.js\"")
    p.add_argument("paths", nargs="*", default=["traces"], metavar="PATHS",
                   help="trace files or folders, or a corpus (its manifest, archive or installed name; its traces: "
                        "docs/corpora.md) (default: traces)")
    p.add_argument("--against", default="expectations", metavar="PRESET|expectations",
                   help="compare with a preset's verdicts, or with each trace's expectations (the default)")
    p.add_argument("--reasons", action="store_true", help="compare reason codes too (a port that reuses ours)")
    p.add_argument("--messages", action="store_true", help="compare the message the agent is shown too")
    p.add_argument("--timeout", type=float, default=5.0, metavar="S", help="seconds per reply (default 5)")
    p.add_argument("--cwd", help="where the guard runs (default: here)")


def run(args: argparse.Namespace) -> int:
    from ..errors import GuardProcessError, LoopguardError
    from ..io._conform import EXPECTATIONS, conform_trace
    from ..runtime._policy import resolve_policy

    try:
        command = shlex.split(args.guard)
    except ValueError as exc:
        err(f"loopguard: GUARD_CMD: {exc}")
        return EXIT_BAD_INPUT
    if not command:
        err("loopguard: GUARD_CMD is empty; give the guard's command line, e.g. \"node guard.js\"")
        return EXIT_BAD_INPUT
    if not 0 < args.timeout <= 3600:
        err(f"loopguard: --timeout: expected seconds above 0 and at most 3600, got {args.timeout:g}")
        return EXIT_BAD_INPUT
    if args.against != EXPECTATIONS:
        resolve_policy(args.against)  # a bad preset fails before any guard starts
    from ._corpus_refs import corpora_in

    paths, _ = corpora_in(args.paths)  # a corpus (manifest, archive, installed name) conforms with its traces
    traces, errors = validate_traces([str(p) for p in paths])
    report_errors(errors)
    agree = differ = broken = simulated = 0
    for trace in traces:
        label = f"{trace.path}::{trace.name}" if trace.path else trace.name
        if trace.mode != "replay":
            simulated += 1
            out(f"skip  {label}: a scenario (conform replays recorded traces; record it with `loopguard simulate`)")
            continue
        try:
            difference = conform_trace(trace, command, args.against, timeout_s=args.timeout, cwd=args.cwd,
                                       reasons=args.reasons, messages=args.messages)
        except GuardProcessError as exc:
            broken += 1
            out(f"ERROR {label}: {exc}")
            continue
        except LoopguardError as exc:
            broken += 1
            out(f"ERROR {label}: {exc}")
            continue
        if difference is None:
            agree += 1
            out(f"ok    {label}")
        else:
            differ += 1
            out(f"DIFF  {label}: {difference.line()}")
    against = "its expectations" if args.against == EXPECTATIONS else f"preset {args.against}"
    tail = f", {simulated} scenario(s) not replayed" if simulated else ""
    out(f"conform: {agree + differ + broken} trace(s) against {against}: {agree} agree, {differ} differ, "
        f"{broken} error(s){tail} — guard `{args.guard}`")
    if broken or errors:
        return EXIT_BAD_INPUT
    return EXIT_MISMATCH if differ else EXIT_OK
