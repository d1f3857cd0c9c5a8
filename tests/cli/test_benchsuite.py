"""`loopguard bench`: every row the issue promises is printed, and the JSON has its shape (nothing is timed)."""

from __future__ import annotations

import json

import pytest

from pytest_loopguard import cli
from pytest_loopguard.benchsuite import bare_loop
from pytest_loopguard.buildinfo import build_name, compiled_modules
from pytest_loopguard.model import Step, ToolCall, Trace

QUICK = ["bench", "--events", "200", "--repeat", "1", "--policy", "default", "--policy", "qa-agent"]
ROWS = [
    "baseline: bare fingerprint loop", "replay default", "replay qa-agent", "replay, no engine at all",
    "live check, default (call built)", "live check, default + ToolCall.of", "ToolCall.of",
    "Guard construction, default", "load yaml", "load json", "load jsonl",
]


def test_bench_prints_every_row_with_its_goal(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(QUICK) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["item", "per", "min"]
    items = [line.split("  ")[0].strip() for line in lines[2:-1]]
    assert items == ROWS
    assert "≤ 3× baseline, ≥ 250k events/s (≤ 3.00×)" in lines[3] and "≤ 5 µs (≤ 3.78×)" in lines[6]
    # which build ran is part of every measurement (buildinfo's own tests check what it reports)
    assert lines[-1] == f"200 events per replay row, min and median of 1 repeats, seed 0; build: {build_name()}"


def test_bench_json_has_every_row_and_the_subprocess_rows(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*QUICK, "--json", "--corpus", "3", "--stream", "300"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["events"], doc["repeat"], doc["seed"]) == (200, 1, 0)
    assert (doc["build"], doc["compiled"]) == (build_name(), list(compiled_modules()))
    rows = {r["item"]: r for r in doc["rows"]}
    assert list(rows) == [*ROWS, "loopguard run, 3 files", "loopguard run, 300 events in one JSONL file"]
    assert rows["baseline: bare fingerprint loop"]["ratio"] == 1.0
    for row in doc["rows"]:
        assert {"item", "unit", "units", "min_us", "median_us", "ratio", "goal", "met"} <= set(row)
        assert 0 < row["min_us"] <= row["median_us"]
    assert rows["load yaml"]["raw_parser_us"] > 0
    for name in ("loopguard run, 3 files", "loopguard run, 300 events in one JSONL file"):
        # the synthetic traces carry no expectations: a run that replays them all exits 0
        assert rows[name]["exit"] == 0 and rows[name]["peak_rss_mb"] > 0
        assert rows[name]["met"] is None  # the goals are for 1,000 files and 1M events, not these sizes


def test_the_baseline_counts_consecutive_repeats_by_canonical_arguments() -> None:
    def tool(i: int, tool: str, args: dict[str, object]) -> Step:
        return Step(i, "tool", call=ToolCall.of(tool, args))

    steps = [tool(0, "a", {"x": 1, "y": 2}), tool(1, "a", {"y": 2, "x": 1}), tool(2, "a", {"x": 1, "y": 2}),
             tool(3, "b", {}), tool(4, "a", {"x": 1, "y": 2}), tool(5, "a", {"x": 1, "y": 2})]
    assert bare_loop([Trace(name="t", steps=tuple(steps))]) == 3
