"""A failure's table shows the steps behind a run-level mismatch too (issue 26 item 6): a count-only mismatch
printed a bare `counts.warn: expected 1, got 2` with no step to look at."""

from __future__ import annotations

from pytest_loopguard.core._expect import check
from pytest_loopguard.io._format import trace_from_mapping
from pytest_loopguard.report._tables import mismatch_table
from pytest_loopguard.runtime._replay import replay


def test_a_count_only_mismatch_shows_the_steps_it_counts() -> None:
    steps = [{"tool": "grep", "args": {"q": "a"}}] * 4 + [{"tool": "read_file", "args": {"path": "x.py"}}] * 3
    trace = trace_from_mapping({"loopguard": 1, "name": "counts", "policy": "default", "steps": steps,
                                "expect": {"counts": {"warn": 1}}})
    result = replay(trace)
    mismatches = check(result)
    assert [m.field for m in mismatches] == ["counts.warn"]  # the 3rd and 4th grep, the 3rd read: 3
    table = mismatch_table(result, mismatches)
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["step", "call", "expected"]
    shown = [line.split()[0] for line in lines[2:-1] if line.split() and line.split()[0].isdigit()]
    assert shown == ["2", "3", "6"]  # the steps the count counts, and only those
    assert lines[-1].startswith("run: counts.warn")
