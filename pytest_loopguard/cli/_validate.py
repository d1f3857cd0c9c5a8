"""`loopguard validate PATHS`: load every trace file under PATHS and report every bad one."""

from __future__ import annotations

import argparse

from ._common import EXIT_BAD_INPUT, EXIT_OK, error, out, validate_traces


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATHS")


def run(args: argparse.Namespace) -> int:
    traces, errors = validate_traces(args.paths)
    for problem in errors:
        error(problem)
    files = len({t.path for t in traces})
    out(f"{len(traces)} traces in {files} files ok, {len(errors)} bad")
    return EXIT_BAD_INPUT if errors else EXIT_OK
