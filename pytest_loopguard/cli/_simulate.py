"""`loopguard simulate FILE`: run a scenario (`mode: simulate`) and record the trace it produces."""

from __future__ import annotations

import argparse

from ..errors import TraceError
from ._common import EXIT_OK, load_one, out, policy_type, print_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="a scenario file; FILE::NAME picks one of several")
    p.add_argument("-o", "--output", metavar="OUT", help="write the recorded trace here (.yaml, .json, .jsonl)")
    p.add_argument("--policy", type=policy_type,
                   help="a preset, policy file or inline {mapping} (default: the scenario's own)")
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..io._format import dump
    from ..io._runner import simulate
    from ..report._tables import timeline_table

    trace = load_one(args.file)
    if trace.mode != "simulate":
        raise TraceError("not a scenario (a scenario has `mode: simulate`); use `loopguard replay`",
                         file=trace.path, field="mode")
    simulation = simulate(trace, args.policy)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        dump(simulation.recorded, args.output)
    result = simulation.result
    if args.json:
        print_json(result.to_dict())
    else:
        out(timeline_table(result))
        if args.output:
            out(f"recorded trace written to {args.output}")
    return EXIT_OK
