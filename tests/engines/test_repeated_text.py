"""The rule-free text machinery of the stuck detector's content check: the chunk index and markdown structure."""

from __future__ import annotations

import pytest

from pytest_loopguard.engines._repeated_text import DIVIDER, STRUCTURE, ChunkIndex


def test_positions_are_absolute_and_the_front_is_cut() -> None:
    index = ChunkIndex(size=2, limit=6)
    offered: list[list[int]] = []
    assert index.add("abcab", 2, lambda positions, buffer, base: offered.append(list(positions)) or False) is None
    assert offered == [[0, 3]]  # "ab" at 0 and 3; a chunk seen once is never offered
    # "abcabcab" keeps its last 6 characters, "cabcab": positions 2 to 7
    assert index.add("cab", 2, lambda positions, buffer, base: offered.append(list(positions)) or False) is None
    assert index._buffer == "cabcab" and index._base == 2
    assert offered[1:] == [[2, 5], [3, 6]]  # "ab" at 0 was cut off with the front: it no longer counts


def test_text_cut_before_it_was_scanned_is_never_recorded() -> None:
    index = ChunkIndex(size=2, limit=4)
    assert index.add("abcdef", 2, lambda positions, buffer, base: True) is None  # keeps "cdef", from position 2
    assert index._positions == {"cd": 2, "de": 3, "ef": 4}


def test_the_scan_stops_at_the_accepted_chunk_and_resumes_there() -> None:
    index = ChunkIndex(size=1, limit=100)
    assert index.add("xaxax", 3, lambda positions, buffer, base: True) == ("x", 3)  # at position 4, the third "x"
    # the stopped chunk is recorded again (a fourth position), then the new "a"
    offered: list[list[int]] = []
    assert index.add("a", 2, lambda positions, buffer, base: offered.append(list(positions)) or False) is None
    assert offered == [[0, 2, 4, 4], [1, 3, 5]]
    index.clear()
    assert index.add("xx", 2, lambda positions, buffer, base: True) == ("x", 2)


@pytest.mark.parametrize(("text", "structured"), [
    ("| a | b |", True), ("* item", True), ("- bullet", False), ("1. first", True), ("# Title", True),
    ("> quote", True), ("plain words", False),
])
def test_markdown_structure_as_gemini_reads_it(text: str, structured: bool) -> None:
    assert any(p.search(text) for p in STRUCTURE) is structured


def test_dividers() -> None:
    assert DIVIDER.fullmatch("-----") and DIVIDER.fullmatch("═" * 3) and DIVIDER.fullmatch("✓" * 3) is None
    assert DIVIDER.fullmatch("ABC123")  # `+`…`_` takes in digits and capitals (as in Gemini)
    assert DIVIDER.fullmatch("abc") is None
