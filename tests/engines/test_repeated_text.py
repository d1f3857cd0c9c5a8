"""The rule-free text machinery of the stuck detector's content check: the chunk index and markdown structure."""

from __future__ import annotations

import pytest

from pytest_loopguard.engines._repeated_text import DIVIDER, STRUCTURE, ChunkIndex


def test_positions_are_absolute_and_the_front_is_cut() -> None:
    index = ChunkIndex(size=2, limit=6)
    index.extend("abcab")
    offered: list[list[int]] = []
    assert index.scan(2, lambda positions: offered.append(list(positions)) or False) is None
    assert offered == [[0, 3]]  # "ab" at 0 and 3; a chunk seen once is never offered
    index.extend("cab")  # "abcabcab" keeps its last 6 characters, "cabcab": positions 2 to 7
    assert index.text(2, 5) == "cab" and index.text(5, 8) == "cab"
    assert index.scan(2, lambda positions: offered.append(list(positions)) or False) is None
    assert offered[1:] == [[2, 5], [3, 6]]  # "ab" at 0 was cut off with the front: it no longer counts


def test_text_cut_before_it_was_scanned_is_never_recorded() -> None:
    index = ChunkIndex(size=2, limit=4)
    index.extend("abcdef")  # keeps "cdef", from position 2
    assert index.scan(2, lambda positions: True) is None
    assert index._positions == {"cd": 2, "de": 3, "ef": 4}


def test_the_scan_stops_at_the_accepted_chunk_and_resumes_there() -> None:
    index = ChunkIndex(size=1, limit=100)
    index.extend("xaxax")
    assert index.scan(3, lambda positions: True) == ("x", 3)  # at position 4, the third "x"
    index.extend("a")
    # the stopped chunk is recorded again (a fourth position), then the new "a"
    offered: list[list[int]] = []
    assert index.scan(2, lambda positions: offered.append(list(positions)) or False) is None
    assert offered == [[0, 2, 4, 4], [1, 3, 5]]
    index.clear()
    index.extend("xx")
    assert index.scan(2, lambda positions: True) == ("x", 2)


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
