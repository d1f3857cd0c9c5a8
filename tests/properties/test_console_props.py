"""The plain rendering of a `simple` table is tabulate's, byte for byte, wherever it renders one; and it does
render every table of plain cells (printable ASCII, no spaces at either end)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tabulate import tabulate

from pytest_loopguard.report._console import plain_table

PLAIN = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12).map(str.strip)
# what tabulate treats specially: spaces around a cell, numbers, wide and combining characters, tabs, line
# breaks, escape codes, NUL (plain_table's own marker), and cells that are not strings
AWKWARD = st.one_of(
    st.sampled_from([" a", "a ", " ", "a\nb", "\x1b[31mred\x1b[0m", "界", "e\u0301", "a\tb", "\x00", "\x7f", "…",
                     "1", "-0", "1e5", "nan", "inf", "True", "None", "0x1f", " 2 ", "1,000", ""]),
    st.lists(st.sampled_from([" ", "a", "1", ".", "\t", "\n", "\x00", "\x1b[31m", "\x1b[0m", "界", "é", "\u0301"]),
             max_size=8).map("".join),
    st.integers(-5, 5), st.none(), st.floats(allow_nan=True),
)


def rendered(rows: list[list[Any]], headers: list[str]) -> str:
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


@st.composite
def tables(draw: st.DrawFn, cells: st.SearchStrategy[Any]) -> tuple[list[list[Any]], list[str]]:
    width = draw(st.integers(1, 6))
    headers = draw(st.lists(PLAIN, min_size=width, max_size=width))
    rows = draw(st.lists(st.lists(cells, min_size=width, max_size=width), min_size=1, max_size=8))
    return rows, headers


@given(tables(PLAIN))
def test_plain_cells_render_as_tabulate_renders_them(table: tuple[list[list[str]], list[str]]) -> None:
    rows, headers = table
    assert plain_table(rows, headers) == rendered(rows, headers)


@given(tables(PLAIN), st.data())
def test_a_table_with_an_awkward_cell_is_tabulates_or_left_to_it(table: tuple[list[list[Any]], list[str]],
                                                                    data: st.DataObject) -> None:
    rows, headers = table
    awkward = data.draw(AWKWARD)
    if data.draw(st.booleans(), label="in the header"):
        headers[data.draw(st.integers(0, len(headers) - 1))] = awkward
    else:
        row = data.draw(st.sampled_from(rows))
        row[data.draw(st.integers(0, len(row) - 1))] = awkward
    text = plain_table(rows, headers)
    if text is not None:
        assert text == rendered(rows, headers)


def test_ragged_rows_and_an_empty_table_are_left_to_tabulate() -> None:
    assert plain_table([["a", "b"], ["c"]], ["x", "y"]) is None
    assert plain_table([], ["x", "y"]) is None
