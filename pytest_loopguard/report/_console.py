"""Terminal output that fits: tables wrapped to the terminal's width, colour and progress bars where a person watches.

Colour and progress come from rich when it is installed (the `rich` extra) and the stream is a terminal;
`NO_COLOR` turns colour off. Without rich, or when the output is piped, the text is plain and byte-for-byte
what the tables render — scripts and CI logs never see escape codes or a bar.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence, Sized
from typing import Any, Final, TextIO, TypeVar

from ..errors import needs_extra

__all__ = [
    "MIN_COLUMN", "colour_enabled", "emit", "fit_table", "fit_widths", "plain_table", "progress", "terminal_width",
]

T = TypeVar("T")
MIN_COLUMN: Final = 8  # a column is never wrapped narrower than this (or its natural width)
GAP: Final = 2  # tabulate's "simple" format puts two spaces between columns
PROGRESS_AFTER: Final = 20  # fewer items finish before a bar would be worth drawing
# Words the highlighter colours: the actions by severity, and a table's verdict on a trace.
_STYLES: Final = {
    "warn": "yellow",
    "block": "dark_orange",
    "stop": "bold red",
    "fail": "bold red",
    "compact": "cyan",
    "retry": "magenta",
    "compact_retry": "magenta",
    "mismatch": "bold red",
    "mismatches": "bold red",
    "mismatched": "bold red",
}


def _rich() -> Any:
    try:
        import rich
    except ImportError:
        return None
    return rich


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The terminal's width (`COLUMNS` overrides it) when `stream` is a terminal; None (no limit) otherwise.

    Piped output is never fitted: files and CI logs keep whole cells, and pytest-xdist workers, which set
    COLUMNS for their captured output, render the same tables as a single process.
    """
    out = stream if stream is not None else sys.stdout
    if out.isatty():
        import shutil  # a terminal only: piped output (CI, scripts) never needs it

        return shutil.get_terminal_size().columns
    return None


def fit_widths(natural: Sequence[int], width: int, keep: Sequence[int] = ()) -> list[int | None]:
    """Column limits that make a table of these natural widths fit `width`: the widest shrinks first.

    Columns shrink first down to `keep` (e.g. their header's width, so headers stay whole), and only if that
    is not enough down to MIN_COLUMN; a table that does not fit even then stays wider than `width`.
    """
    limits = list(natural)
    total = sum(limits) + GAP * (len(limits) - 1)
    stages = ([max(min(n, k), MIN_COLUMN) for n, k in zip(natural, keep, strict=True)] if keep else [],
              [min(n, MIN_COLUMN) for n in natural])
    for floor in (f for f in stages if f):
        floor = [min(f, n) for f, n in zip(floor, natural, strict=True)]
        while total > width:
            widest = max(range(len(limits)), key=lambda i: limits[i] - floor[i])
            if limits[widest] <= floor[widest]:
                break
            limits[widest] -= 1
            total -= 1
    return [None if limit == n else limit for limit, n in zip(limits, natural, strict=True)]


def fit_table(
    rows: Sequence[Sequence[Any]], headers: Sequence[str], stream: TextIO | None = None, *,
    droppable: Collection[str] = (),
) -> str:
    """A `simple` tabulate table; on a terminal, long cells wrap so the table fits its width.

    Columns named in `droppable` whose cells are all 0 (or empty) are left out first when the table is too
    wide: a count no row has says nothing, and the room goes to the names.
    """
    width = terminal_width(stream)
    text = plain_table(rows, headers)
    if text is None:
        with needs_extra("loopguard's table output"):
            from tabulate import tabulate  # loaded only for cells the plain rendering leaves to it

        text = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)
    if width is None or not rows or max(len(line) for line in text.splitlines()) <= width:
        return text
    with needs_extra("loopguard's table output"):
        from tabulate import tabulate

    empty = {i for i, h in enumerate(headers) if h in droppable and all(str(r[i]) in ("0", "") for r in rows)}
    if empty:
        headers = [h for i, h in enumerate(headers) if i not in empty]
        rows = [[c for i, c in enumerate(r) if i not in empty] for r in rows]
    columns = max(len(headers), *(len(row) for row in rows))
    cells = [[*headers, *[""] * (columns - len(headers))]]
    cells += [[*(str(c) for c in row), *[""] * (columns - len(row))] for row in rows]
    natural = [
        max(len(line) for cell in column for line in (cell.splitlines() or [""])) for column in zip(*cells, strict=True)
    ]
    # tabulate keeps a column two wider than its header: a narrow column wraps its header too
    natural = [max(n, len(h) + 2) for n, h in zip(natural, cells[0], strict=True)]
    limits = fit_widths(natural, width, keep=[len(h) + 2 for h in cells[0]])
    # None leaves a header as it is; tabulate accepts it (its type stubs say Iterable[int] only)
    header_limits: Any = [None if limit is None else max(limit - 2, 1) for limit in limits]
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True, maxcolwidths=limits,
                    maxheadercolwidths=header_limits)


def plain_table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str | None:
    """tabulate's `simple` table (numbers not parsed) for rows of plain cells, rendered directly; None otherwise.

    Plain: every cell a string of printable ASCII without spaces at either end, every row as long as the
    headers (an `Action` or `Outcome` is a string whose text is its value, as tabulate writes it too). Such
    cells are one column wide per character and tabulate changes none of them, so a column is
    as wide as its widest cell or its header plus two, cells are padded on the right, columns are two spaces
    apart and each line ends without spaces: byte-for-byte what tabulate renders (a property test compares),
    for a corpus summary of a thousand rows in a tenth of tabulate's time. Anything else (wide or control
    characters, escape codes, line breaks, cells tabulate would strip) is tabulate's to render.
    """
    n = len(headers)
    if not rows or not all(len(row) == n for row in rows):
        return None
    columns = list(zip(*rows, strict=True))
    for column in (headers, *columns):
        if not all(isinstance(cell, str) for cell in column):
            return None
        text = "".join(column)
        if not text.isascii() or not text.isprintable():
            return None
        if " " in text:  # tabulate strips the spaces around a cell: is any cell bounded by one?
            joined = "\x00".join(column)
            if " \x00" in joined or "\x00 " in joined or joined[:1] == " " or joined[-1:] == " ":
                return None
    widths = [max(len(h) + 2, *map(len, column)) for h, column in zip(headers, columns, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(map(str.ljust, row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def colour_enabled(stream: TextIO) -> bool:
    """Colour only for a person: rich installed, the stream a terminal, NO_COLOR unset, TERM not dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return stream.isatty() and _rich() is not None


def emit(text: str = "", stream: TextIO | None = None) -> None:
    """Print `text`; on a colour terminal the action words (warn, block, stop …) are coloured by rich."""
    out = stream if stream is not None else sys.stdout
    if not colour_enabled(out):
        print(text, file=out)
        return
    from rich.console import Console
    from rich.text import Text

    styled = Text(text)
    for word, style in _STYLES.items():
        styled.highlight_regex(rf"(?<![\w.-]){word}(?![\w.-])", style)  # not inside names like then-block
    # soft_wrap: the table is already fitted; rich must not re-wrap or pad it
    Console(file=out, soft_wrap=True, highlight=False).print(styled)


def progress(
    items: Iterable[T], label: str, stream: TextIO | None = None, *, min_items: int = PROGRESS_AFTER
) -> Iterator[T]:
    """Iterate `items`, drawing a progress bar on stderr when a person watches a long run (rich, a terminal).

    A sequence gets a bar only from `min_items` items; an iterator (read lazily, its length unknown) always
    gets one, without a total.
    """
    out = stream if stream is not None else sys.stderr
    few = isinstance(items, Sized) and len(items) < min_items
    if few or not out.isatty() or _rich() is None or os.environ.get("TERM") == "dumb":
        yield from items
        return
    from rich.console import Console
    from rich.progress import track

    # transient: the bar disappears when done, leaving only the command's own output
    yield from track(items, description=label, console=Console(file=out), transient=True)
