"""report.py: mismatch, timeline and summary tables, and the JSON report (no pytest plugin involved)."""

from __future__ import annotations

from pytest_loopguard.core._expect import Mismatch, check
from pytest_loopguard.core._model import ReplayResult, StepResult, Verdict
from pytest_loopguard.io._format import trace_from_mapping
from pytest_loopguard.report._tables import (
    json_entry,
    mismatch_table,
    shorten,
    summary_table,
    timeline_table,
)


def _result(actions: list[str], *, expects: dict[int, object] | None = None, outcome: str = "incomplete",
            run_expect: dict[str, object] | None = None) -> ReplayResult:
    """A hand-made result (no engines): step i is `tool_i` with the given combined action."""
    steps: list[dict[str, object]] = []
    for i in range(len(actions)):
        step: dict[str, object] = {"tool": f"tool_{i}", "args": {"n": i}}
        if expects and i in expects:
            step["expect"] = expects[i]
        steps.append(step)
    mapping: dict[str, object] = {"loopguard": 1, "name": "hand-made", "steps": steps}
    if run_expect is not None:
        mapping["expect"] = run_expect
    trace = trace_from_mapping(mapping, path="traces/hand.yaml")
    results = []
    for i, action in enumerate(actions):
        verdicts: tuple[Verdict, ...] = ()
        if action not in ("allow", "not_reached"):
            verdicts = (
                Verdict("budget", "warn", "budget.observation_streak", "streak\nof six"),
                Verdict("loop_guard", action, f"loop_guard.{action}_code", "x" * 100),  # type: ignore[arg-type]
            )
        results.append(StepResult(i, "tool", f"tool_{i}", action, verdicts))
    return ReplayResult(trace, "default", outcome, None, None, tuple(results))  # type: ignore[arg-type]


def _rows(table: str) -> list[list[str]]:
    return [line.split() for line in table.splitlines()]


def test_mismatch_table_shows_context_around_each_mismatch_and_gaps() -> None:
    actions = ["allow"] * 12
    actions[2] = "block"
    result = _result(actions, expects={2: "allow", 9: "warn"})
    table = mismatch_table(result, check(result), context=1)
    lines = table.splitlines()
    # header, rule, steps 1-3, a gap, steps 8-10
    firsts = [line.split()[1] if line.startswith(">") else line.split()[0] for line in lines[2:]]
    # Continuation lines of a step's second verdict start with its engine; the rest start with a step number.
    assert [f for f in firsts if f != "budget"] == ["1", "2", "3", "…", "8", "9", "10"]
    marked = [line.split()[1] for line in lines if line.startswith(">")]
    assert marked == ["2", "9"]
    assert lines[0].split() == ["step", "call", "expected", "got", "engine", "reason", "message"]


def test_mismatch_table_lists_the_deciding_verdict_first_and_shortens_messages() -> None:
    actions = ["allow", "block"]
    result = _result(actions, expects={1: {"action": "warn", "reason": "loop_guard.consecutive_warning"}})
    table = mismatch_table(result, check(result))
    row = next(line for line in table.splitlines() if line.startswith(">"))
    assert 'tool_1 {"n":1}' in row
    assert "warn loop_guard.consecutive_warning" in row  # the expectation as written
    assert "loop_guard.block_code" in row  # the block verdict (it decided the action) comes first
    assert "x" * 59 + "…" in row and "x" * 60 not in row
    follow = table.splitlines()[table.splitlines().index(row) + 1]
    assert "budget.observation_streak" in follow
    assert "streak of six" in follow  # a message's newlines are folded in a cell


def test_mismatch_table_marks_a_verdict_mismatch_and_a_strict_step() -> None:
    result = _result(["warn", "warn"], expects={0: {"action": "warn", "engine": "read_tracker"}})
    mismatches = check(result, strict=True)
    rows = [line for line in mismatch_table(result, mismatches).splitlines() if line.startswith(">")]
    assert "warn (read_tracker)" in rows[0] and "warn (no verdict matches)" in rows[0]
    assert "allow (strict)" in rows[1]


def test_run_level_mismatches_follow_the_table() -> None:
    result = _result(["allow"], run_expect={"outcome": "stopped", "counts": {"block": 1}})
    text = mismatch_table(result, check(result))
    assert text.splitlines() == [
        "run: outcome: expected 'stopped', got 'incomplete'",
        "run: counts.block: expected 1, got 0",
    ]


def test_timeline_table_has_every_step_and_the_outcome() -> None:
    result = _result(["allow", "stop", "not_reached"])
    rows = _rows(timeline_table(result))
    assert rows[0] == ["step", "call", "action", "engine", "reason", "message"]
    assert [r[0] for r in rows[2:] if r and r[0].isdigit()] == ["0", "1", "2"]
    assert rows[3][:6] == ["1", "tool_1", '{"n":1}', "stop", "loop_guard", "loop_guard.stop_code"]
    assert rows[4][:2] == ["budget", "budget.observation_streak"]
    assert rows[5][:3] == ["2", "tool_2", '{"n":2}'] and rows[5][3] == "not_reached"
    assert rows[-1] == ["trace", "hand-made", "under", "default:", "incomplete"]


def test_summary_table_counts_actions_and_status() -> None:
    first = _result(["warn", "block", "allow", "block"])
    second = _result(["allow"], run_expect={"outcome": "completed"})
    table = summary_table([(first, check(first)), (second, check(second))])
    rows = _rows(table)
    assert rows[0] == ["trace", "file", "policy", "outcome", "warn", "block", "stop", "compact", "retry",
                       "compact_retry", "fail", "status"]
    assert rows[2] == ["hand-made", "traces/hand.yaml", "default", "incomplete", "1", "2", "0", "0", "0", "0", "0",
                       "ok"]
    assert rows[3][-2:] == ["1", "mismatch"]


def test_json_entry() -> None:
    result = _result(["allow", "warn"], run_expect={"outcome": "stopped"})
    entry = json_entry(result, check(result))
    assert entry == {
        "trace": "hand-made",
        "file": "traces/hand.yaml",
        "policy": "default",
        "outcome": "incomplete",
        "stopped_at": None,
        "stopped_by": None,
        "counts": {"allow": 1, "warn": 1},
        "passed": False,
    }
    # The report file holding such entries (sorted, with metadata and coverage): test_report_files.py.


def test_shorten() -> None:
    assert shorten("a\n b", 10) == "a b"
    assert shorten("abcdefghijk", 5) == "abcd…"
    assert shorten("abcde", 5) == "abcde"


def test_mismatch_str_is_used_for_run_lines() -> None:
    assert str(Mismatch(None, "outcome", "stopped", "completed")) == "run: outcome: expected 'stopped', got 'completed'"


def test_report_module_does_not_import_pytest() -> None:
    # The `loopguard` command renders through report.py and must not pay for (or need) pytest.
    import subprocess
    import sys

    code = "import sys, pytest_loopguard.report._tables; print('pytest' in sys.modules, '_pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
