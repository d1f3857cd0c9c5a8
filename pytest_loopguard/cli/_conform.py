"""`loopguard conform GUARD_CMD [PATHS] [--against PRESET|expectations]`: an external guard's verdicts, step by step.

Every trace under PATHS is replayed through the guard process (one process, reused) and compared with the
reference: a preset's verdicts on the same trace, or the trace's own expectations. A line per trace (the
first difference, where there is one) and a summary; exit 1 on any difference, 2 when the guard broke the
protocol on a trace or a trace could not be read.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._common import (
    EXIT_BAD_INPUT,
    EXIT_MISMATCH,
    EXIT_OK,
    err,
    out,
    report_errors,
    validate_traces,
)

if TYPE_CHECKING:
    from ..core._model import Trace


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
    from ._backend import add_arguments as backend_arguments

    backend_arguments(p, "conform")


# traces per batch: each batch starts the guard process afresh on its worker
MIN_TRACES: Final = 16
MAX_TRACES: Final = 256


@dataclass(frozen=True)
class Check:
    """What every batch is conformed with: the command's folder (where a relative guard command is found)
    and its options."""

    cwd: str
    command: list[str]
    against: str
    timeout_s: float
    guard_cwd: str | None
    reasons: bool
    messages: bool


def conform_one(trace: Trace, check: Check) -> tuple[str, str]:
    """One trace's line: (`ok`, `diff`, `error` or `skip`, the line)."""
    from ..errors import LoopguardError
    from ..io._conform import conform_trace

    label = f"{trace.path}::{trace.name}" if trace.path else trace.name
    if trace.mode != "replay":
        return "skip", (f"skip  {label}: a scenario (conform replays recorded traces; record it with "
                        "`loopguard simulate`)")
    try:
        difference = conform_trace(trace, check.command, check.against, timeout_s=check.timeout_s,
                                   cwd=check.guard_cwd, reasons=check.reasons, messages=check.messages)
    except LoopguardError as exc:  # GuardProcessError among them: the guard broke the protocol
        return "error", f"ERROR {label}: {exc}"
    if difference is None:
        return "ok", f"ok    {label}"
    return "diff", f"DIFF  {label}: {difference.line()}"


def conform_batch(traces: Sequence[Trace], check: Check) -> list[tuple[str, str]]:
    """A batch of traces on another process (`-j N`, `--backend dask`), in the command's folder; the guard
    processes it started end with it (a cluster's worker outlives the run)."""
    import os
    import sys

    os.chdir(check.cwd)
    try:
        return [conform_one(trace, check) for trace in traces]
    finally:
        pipe = sys.modules.get("pytest_loopguard.engines._pipe")
        if pipe is not None:
            pipe.shutdown_all()


def _lines(args: argparse.Namespace, traces: list[Trace], check: Check) -> Iterator[tuple[str, str]]:
    if args.jobs <= 1 and args.backend == "local":
        for trace in traces:
            yield conform_one(trace, check)
        return
    from ._backend import batched, ordered

    chunks: list[Sequence[Trace]] = []

    def make(workers: int) -> list[tuple[Sequence[Trace], Check]]:
        chunks[:] = batched(traces, workers, MIN_TRACES, MAX_TRACES)
        return [(chunk, check) for chunk in chunks]

    def describe(b: int) -> str:
        names = [str(t.path or t.name) for t in chunks[b]]
        return names[0] if len(names) == 1 else f"{len(names)} traces, {names[0]} .. {names[-1]}"

    for batch in ordered(conform_batch, make, args, describe):
        yield from batch


def run(args: argparse.Namespace) -> int:
    from ._backend import run_checked

    return run_checked(_conform, args)


def _conform(args: argparse.Namespace) -> int:
    import os

    from ..io._conform import EXPECTATIONS
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
    check = Check(os.getcwd(), command, args.against, args.timeout, args.cwd, args.reasons, args.messages)
    counts = dict.fromkeys(("ok", "diff", "error", "skip"), 0)
    for status, line in _lines(args, traces, check):
        counts[status] += 1
        out(line)
    agree, differ, broken, simulated = counts["ok"], counts["diff"], counts["error"], counts["skip"]
    against = "its expectations" if args.against == EXPECTATIONS else f"preset {args.against}"
    tail = f", {simulated} scenario(s) not replayed" if simulated else ""
    out(f"conform: {agree + differ + broken} trace(s) against {against}: {agree} agree, {differ} differ, "
        f"{broken} error(s){tail} — guard `{args.guard}`")
    if broken or errors:
        return EXIT_BAD_INPUT
    return EXIT_MISMATCH if differ else EXIT_OK
