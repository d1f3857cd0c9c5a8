"""Rule coverage: per-trace reason counts, the merge of entries, uncovered and undeclared codes."""

from __future__ import annotations

from pytest_loopguard.core._model import Step as S
from pytest_loopguard.core._model import ToolCall, Trace
from pytest_loopguard.engines import registry
from pytest_loopguard.report._rule_coverage import coverage_fields, coverage_table, rule_coverage
from pytest_loopguard.runtime._replay import replay


def clicks(n: int) -> Trace:
    steps = tuple(S(i, "tool", call=ToolCall.of("click", {"index": 3})) for i in range(n))
    return Trace(name=f"clicks-{n}", steps=steps, policy="default")


def test_fields_count_verdicts_per_reason() -> None:
    # default: the 3rd and 4th identical calls warn, the 5th and later block.
    result = replay(clicks(6))
    fields = coverage_fields(["loop_guard", "read_tracker"], result)
    assert fields == {
        "engines": ["loop_guard", "read_tracker"],
        "reasons": {"loop_guard.consecutive_block": 2, "loop_guard.consecutive_warning": 2},
    }


def test_merge_counts_traces_and_lists_uncovered_codes() -> None:
    entries = [
        {"engines": ["dedup", "loop_guard"], "reasons": {"loop_guard.consecutive_warning": 2}},
        {"engines": ["loop_guard"], "reasons": {"loop_guard.consecutive_warning": 1, "loop_guard.ping_pong": 3}},
        {"engines": ["loop_guard"], "reasons": {}},
    ]
    coverage = rule_coverage(entries)
    assert coverage.traces == 3
    rows = {r.reason: (r.engine, r.traces, r.verdicts) for r in coverage.rows}
    assert rows["loop_guard.consecutive_warning"] == ("loop_guard", 2, 3)
    assert rows["loop_guard.ping_pong"] == ("loop_guard", 1, 3)
    # Every declared code of both engines is listed, loop_guard first (engine order), dedup's in its place.
    declared = [*registry()["loop_guard"].REASONS, *registry()["dedup"].REASONS]
    assert [r.reason for r in coverage.rows] == declared
    assert {r.reason for r in coverage.uncovered} == set(declared) - {
        "loop_guard.consecutive_warning", "loop_guard.ping_pong"}
    table = coverage_table(coverage)
    assert f"rule coverage: 2 of {len(declared)} reason codes exercised by 3 traces; never triggered: " in table
    assert "dedup.superseded" in table.splitlines()[-1]


def test_merge_is_order_free() -> None:
    # xdist hands entries to the controller in any order; the table must not depend on it.
    a = {"engines": ["context"], "reasons": {"context.compact": 1}}
    b = {"engines": ["loop_guard"], "reasons": {"loop_guard.ping_pong": 2}}
    assert rule_coverage([a, b]) == rule_coverage([b, a])


def test_undeclared_code_is_shown_not_dropped() -> None:
    coverage = rule_coverage([{"engines": ["dedup"], "reasons": {"dedup.surprise": 1}}])
    extra = [r for r in coverage.rows if not r.declared]
    assert [(r.reason, r.traces) for r in extra] == [("dedup.surprise", 1)]
    assert "dedup.surprise (undeclared)" in coverage_table(coverage)


def test_unknown_engine_keeps_its_emitted_codes() -> None:
    # A custom engine known to a worker but not to this process still counts its emitted codes.
    coverage = rule_coverage([{"engines": ["team_engine"], "reasons": {"team_engine.x": 1}}])
    assert [(r.reason, r.declared) for r in coverage.rows] == [("team_engine.x", False)]
