"""`loopguard matrix PATHS --policies a,b`: the first intervention of each trace under each policy."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import LoopguardError, TraceError
from ._common import EXIT_BAD_INPUT, EXIT_OK, OFF, as_trace_error, out, print_json, report_errors, validate_traces

if TYPE_CHECKING:
    from ..core._model import ReplayResult, Trace



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATHS")
    p.add_argument("--policies", required=True, help="comma-separated presets or policy files")
    p.add_argument("--json", action="store_true")


def _first_intervention(result: ReplayResult) -> str:
    step = result.first_intervention()
    if step is None:
        return OFF
    reason = next((v.reason for v in step.verdicts if v.action == step.action), "")
    return f"step {step.index}: {step.action} {reason}".rstrip()


def run(args: argparse.Namespace) -> int:
    from ..io._runner import execute
    from ..report._console import fit_table, progress
    from ..runtime._policy import resolve_policy

    names = [n.strip() for n in args.policies.split(",") if n.strip()]
    if not names:
        raise TraceError("--policies needs at least one preset or policy file", field="--policies")
    policies = [resolve_policy(n) for n in names]
    traces, errors = validate_traces(args.paths)
    table: list[tuple[Trace, list[ReplayResult]]] = []
    for trace in progress(traces, "replaying"):
        try:
            table.append((trace, [execute(trace, p) for p in policies]))
        except LoopguardError as exc:
            errors.append(as_trace_error(exc, trace))
    if args.json:
        print_json([
            {
                "trace": trace.name,
                "file": trace.path,
                "policies": {
                    name: {
                        "outcome": r.outcome,
                        "first_intervention": (
                            None if (s := r.first_intervention()) is None
                            else {"index": s.index, "action": s.action,
                                  "reason": next((v.reason for v in s.verdicts if v.action == s.action), None)}
                        ),
                    }
                    for name, r in zip(names, results, strict=True)
                },
            }
            for trace, results in table
        ])
    else:
        rows = [[trace.name, *(_first_intervention(r) for r in results)] for trace, results in table]
        out(fit_table(rows, ["trace", *names]))
    report_errors(errors)
    return EXIT_BAD_INPUT if errors else EXIT_OK
