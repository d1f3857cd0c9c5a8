"""`loopguard validate PATHS`: load every trace file under PATHS and report every bad one."""

from __future__ import annotations

import argparse

from ._common import EXIT_BAD_INPUT, EXIT_OK, error, out, validate_traces


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATHS")


def run(args: argparse.Namespace) -> int:
    from ..errors import TraceError
    from ..runtime._replay import policy_for

    traces, errors = validate_traces(args.paths)
    ok = []
    for trace in traces:  # a policy file a header names is read when the trace replays under it: read it here
        try:
            policy_for(trace)
        except TraceError as exc:
            errors.append(exc)
            continue
        ok.append(trace)
    traces = ok
    for problem in errors:
        error(problem)
    files = len({t.path for t in traces})
    out(f"{len(traces)} traces in {files} files ok, {len(errors)} bad")
    return EXIT_BAD_INPUT if errors else EXIT_OK
