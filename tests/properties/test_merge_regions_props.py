"""The context engine's region merging (`merge_regions`): what it keeps, joins and where each line goes.

Stated independently of how `_merged` works: for any list of regions, the lines cover exactly the lines
read per file, no two lines of a file overlap or touch, regions that are not whole line ranges pass through
unchanged, and each line sits where the first (most recent) region it stands for was.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from pytest_loopguard.engines.context import _merged

Region = tuple[Any, Any, Any]

paths = st.sampled_from(["a.py", "b.py", None])  # few files and short ranges: regions meet often
whole = st.integers(min_value=-3, max_value=30)
odd = st.sampled_from([None, True, False, 2.5, "10", 0, -3])  # not a line range (or an empty one)
regions = st.lists(st.tuples(paths, whole | odd, st.integers(min_value=1, max_value=8) | odd), max_size=30)
# regions that touch, one inside another, and a later one that joins two earlier lines
MEETING = [("a.py", 1, 10), ("a.py", 11, 10), ("b.py", 3, 2), ("a.py", 4, 2), ("b.py", 8, 2), ("b.py", 4, 5),
           ("a.py", True, 3), ("a.py", 30, 0)]


def mergeable(region: Region) -> bool:
    _, offset, limit = region
    return all(isinstance(v, int) and not isinstance(v, bool) for v in (offset, limit)) and limit > 0


def lines(spans: list[Region]) -> dict[Any, set[int]]:
    out: dict[Any, set[int]] = {}
    for path, offset, limit in spans:
        out.setdefault(path, set()).update(range(offset, offset + limit))
    return out


@example(MEETING)
@example([("a.py", 1, 10), ("a.py", 11, 10)])  # touching, and nothing after them
@example([("a.py", 1, 4), ("a.py", 9, 2), ("a.py", 5, 4)])  # the last touches both: one line 1-10
@given(regions)
def test_merged_lines_cover_what_was_read_joined_where_they_meet(given_regions: list[Region]) -> None:
    got = _merged(given_regions, True)
    spans = [r for r in got if mergeable(r)]
    # the same lines of each file, in lines that neither overlap nor touch
    assert lines(spans) == lines([r for r in given_regions if mergeable(r)])
    for i, (path, offset, limit) in enumerate(spans):
        for other_path, other_offset, other_limit in spans[i + 1:]:
            if other_path == path:
                assert offset + limit < other_offset or other_offset + other_limit < offset
    # the rest unchanged, in order
    assert [r for r in got if not mergeable(r)] == [r for r in given_regions if not mergeable(r)]

    # each line where the first region it stands for was: positions of first members increase
    def first(item: Region, taken: set[int]) -> int:
        path, offset, limit = item
        for k, region in enumerate(given_regions):
            if k in taken:
                continue
            if not mergeable(item):
                if region == item and not mergeable(region):
                    return k
            elif mergeable(region) and region[0] == path and offset <= region[1] < offset + limit:
                return k
        raise AssertionError(f"{item!r} stands for no region")

    taken: set[int] = set()
    positions = []
    for item in got:
        k = first(item, taken)
        taken.add(k)
        positions.append(k)
    assert positions == sorted(positions)


@given(regions)
def test_without_merging_the_regions_are_listed_as_read(given_regions: list[Region]) -> None:
    assert _merged(given_regions, False) == given_regions
