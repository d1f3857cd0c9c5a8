"""`loopguard replay FILE.jsonl`: the verdict timeline printed row by row as the steps are replayed, in
bounded memory, and exactly as the table of a full load and replay (`report.timeline_table`) reads.

A table's column widths depend on every row, so the file is replayed twice: a first pass only measures
each column (its widest line), the second prints each row as its step is replayed, laid out by tabulate
beside a row as wide as the widest of each column, so every row gets the widths the whole table would.
Replay is deterministic, so both passes see the same verdicts.
"""

from __future__ import annotations

import argparse
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tabulate import tabulate

from ..core._expect import Mismatch
from ..core._model import Step, StepResult
from ..errors import LoopguardWarning
from ..io._stream import StreamedRun, replay_jsonl
from ..report._console import fit_widths, terminal_width
from ..report._tables import TIMELINE_HEADERS, outcome_line, timeline_row

__all__ = ["mismatch_lines", "run", "stream_timeline", "streams"]

_GAP = 2  # tabulate's `simple` format puts two spaces between columns
_LINES = re.compile(r"[\r\n]")  # where tabulate breaks a cell into lines


def streams(args: argparse.Namespace) -> bool:
    """Whether `loopguard replay` streams this file: a plain .jsonl path, printing the timeline (--json and
    --html need the whole result)."""
    return str(args.file).lower().endswith(".jsonl") and "::" not in str(args.file) and not (args.json or args.html)


def _width(cell: str) -> int:
    """A cell's width as tabulate lays it out: the cell stripped, then its longest line."""
    return max(map(len, _LINES.split(cell.strip())))


def _table(rows: list[list[str]], **options: Any) -> list[str]:
    text: str = tabulate(rows, headers=TIMELINE_HEADERS, tablefmt="simple", disable_numparse=True, **options)
    return text.split("\n")


def stream_timeline(path: str, policy: Any, out: Callable[[str], None]) -> StreamedRun | None:
    """Print the timeline of the JSONL trace at `path` as it is replayed; the streamed run (None: a scenario,
    which `replay` does not stream)."""
    widths = [0] * len(TIMELINE_HEADERS)

    def measure(step: Step, got: StepResult) -> None:
        for i, cell in enumerate(timeline_row(step, got)):
            longest = _width(cell)
            if longest > widths[i]:
                widths[i] = longest

    with warnings.catch_warnings():  # a torn last line is reported once, from the second pass's result
        warnings.simplefilter("ignore", LoopguardWarning)
        first = replay_jsonl(path, policy, on_step=measure)
    if first is None:
        return None
    if not first.result.counts():  # no steps: the table is its header alone
        out("\n".join(_table([])))
        out(outcome_line(first.result))
        return first
    options: dict[str, Any] = {}
    width = terminal_width()
    natural = [max(w, len(h) + _GAP) for w, h in zip(widths, TIMELINE_HEADERS, strict=True)]
    if width is not None and sum(natural) + _GAP * (len(natural) - 1) > width:
        # too wide for the terminal: cells wrap to the widths a full table would get (console.fit_table); a
        # wrapped column may come out a little narrower there, where no row fills its limit
        limits = fit_widths(natural, width, keep=[len(h) + _GAP for h in TIMELINE_HEADERS])
        options = {"maxcolwidths": limits,
                   "maxheadercolwidths": [None if n is None else max(n - _GAP, 1) for n in limits]}
        widths = [w if n is None else min(w, n) for w, n in zip(widths, limits, strict=True)]
    widest = ["x" * w for w in widths]
    head = _table([widest], **options)
    out("\n".join(head[:2]))

    def show(step: Step, got: StepResult) -> None:
        lines = _table([timeline_row(step, got), widest], **options)
        out("\n".join(lines[2:-1]))

    run = replay_jsonl(Path(path), policy, on_step=show)
    assert run is not None  # the first pass read the same header
    out(outcome_line(run.result))
    return run


def mismatch_lines(mismatches: Sequence[Mismatch]) -> list[str]:
    """What `loopguard replay` prints under the timeline about unmet expectations (nothing when all hold)."""
    if not mismatches:
        return []
    return [f"expectations: {len(mismatches)} mismatch{'es' if len(mismatches) != 1 else ''}",
            *(f"  {m}" for m in mismatches)]


def run(args: argparse.Namespace, out: Callable[[str], None], err: Callable[[str], None]) -> int | None:
    """The streamed `loopguard replay` (see `streams`); None for a scenario, which the caller simulates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoopguardWarning)
        streamed = stream_timeline(args.file, args.policy, out)
    if streamed is None:
        return None
    for text in streamed.result.trace.warnings:
        err(f"loopguard: warning: {text}")
    for line in mismatch_lines(streamed.mismatches):
        out(line)
    return 0
