"""The verdict timeline of `loopguard replay FILE.jsonl`, printed row by row as the steps are replayed, in
bounded memory, and exactly as the table of a full load and replay (`report.timeline_table`) reads.

A table's column widths depend on every row, so the file is replayed twice: a first pass only measures
each column (its widest line), the second prints each row as its step is replayed, laid out by tabulate
beside a row as wide as the widest of each column, so every row gets the widths the whole table would.
Replay is deterministic, so both passes see the same verdicts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core._model import Step, StepResult
from ..io._stream import StreamedRun, replay_jsonl
from ..report._console import fit_widths, terminal_width
from ..report._tables import TIMELINE_HEADERS, outcome_line, timeline_row
from ._common import table_text, trace_warnings

__all__ = ["stream_timeline"]

_GAP = 2  # tabulate's `simple` format puts two spaces between columns
_LINES = re.compile(r"[\r\n]")  # where tabulate breaks a cell into lines


def _width(cell: str) -> int:
    """A cell's width as tabulate lays it out: the cell stripped, then its longest line."""
    return max(map(len, _LINES.split(cell.strip())))


def _table(rows: list[list[str]], **options: Any) -> list[str]:
    return table_text(rows, TIMELINE_HEADERS, "simple", disable_numparse=True, **options).split("\n")


def stream_timeline(path: str, policy: Any, out: Callable[[str], None]) -> StreamedRun | None:
    """Print the timeline of the JSONL trace at `path` as it is replayed; the streamed run (None: a scenario,
    which `replay` does not stream)."""
    widths = [0] * len(TIMELINE_HEADERS)

    def measure(step: Step, got: StepResult) -> None:
        for i, cell in enumerate(timeline_row(step, got)):
            longest = _width(cell)
            if longest > widths[i]:
                widths[i] = longest

    with trace_warnings():  # a torn last line is reported once, from the second pass's result
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
