"""Value types (DESIGN.md §4): combined severity, results, and the replay result's summaries."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_loopguard import ReplayResult, StepResult, ToolCall, ToolResult, Trace, Verdict
from pytest_loopguard.core._model import ACTIONS, LLM_ACTIONS, SEVERITY, TOOL_ACTIONS, combine


def v(action: str, engine: str = "e") -> Verdict:
    return Verdict(engine, action, f"{engine}.{action}")  # type: ignore[arg-type]


def test_combine_without_verdicts_is_allow() -> None:
    assert combine([]) == "allow" and combine(()) == "allow"


@pytest.mark.parametrize(
    ("actions", "combined"),
    [
        (["allow", "warn"], "warn"),
        (["warn", "block", "allow"], "block"),
        (["block", "stop", "warn"], "stop"),
        (["allow", "compact"], "compact"),
        (["compact", "retry"], "retry"),
        (["retry", "compact_retry", "compact"], "compact_retry"),
        (["compact_retry", "fail"], "fail"),
        (["stop", "fail"], "fail"),
    ],
)
def test_combine_takes_the_most_severe(actions: list[str], combined: str) -> None:
    assert combine([v(a) for a in actions]) == combined
    assert combine([v(a) for a in reversed(actions)]) == combined


def test_severity_orders_each_family_as_design_says() -> None:
    for family in (TOOL_ACTIONS, LLM_ACTIONS):
        ranks = [SEVERITY[a] for a in family]
        assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks), family
    assert set(SEVERITY) == set(ACTIONS)


def test_first_of_equally_severe_verdicts_is_kept() -> None:
    # block and retry share a rank: the first one met decides the combined action
    assert combine([v("block"), v("retry")]) == "block"
    assert combine([v("retry"), v("block")]) == "retry"


def test_verdicts_are_frozen_and_serialise() -> None:
    verdict = Verdict("loop_guard", "block", "loop_guard.consecutive_block", "Blocked", {"count": 5})
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.action = "allow"  # type: ignore[misc]
    assert verdict.to_dict() == {"engine": "loop_guard", "action": "block",
                                 "reason": "loop_guard.consecutive_block", "message": "Blocked",
                                 "data": {"count": 5}}


def test_result_text_is_text_or_the_error() -> None:
    assert ToolResult(text="page").result_text == "page"
    assert ToolResult.failure("Element not found").result_text == "Element not found"
    assert ToolResult(ok=False, text="partial").result_text == "partial"
    assert ToolResult().result_text is None


def test_tool_calls_are_equal_by_their_as_written_identity() -> None:
    assert ToolCall.of("t", {"a": 1}) == ToolCall.of("t", {"a": 1})
    assert ToolCall.of("t", {"a": 1}) != ToolCall.of("t", {"a": 1.0})
    assert len({ToolCall.of("t", {"a": 1}), ToolCall.of("t", {"a": 1})}) == 1
    assert ToolCall.of("t", {"q": "x" * 100}).short(20).endswith("…")


def result(actions: list[str], outcome: str = "incomplete") -> ReplayResult:
    steps = tuple(StepResult(i, "tool", "t", a, (v(a),) if a not in ("allow", "not_reached") else ())
                  for i, a in enumerate(actions))
    return ReplayResult(Trace("r"), "default", outcome, None, None, steps)  # type: ignore[arg-type]


def test_counts_are_steps_per_combined_action() -> None:
    r = result(["allow", "warn", "allow", "block", "stop", "not_reached", "not_reached"], "stopped")
    assert r.counts() == {"allow": 2, "warn": 1, "block": 1, "stop": 1, "not_reached": 2}
    assert result([]).counts() == {}


def test_first_intervention_skips_allow_and_not_reached() -> None:
    assert result(["allow", "allow", "warn", "block"]).first_intervention() == StepResult(2, "tool", "t", "warn",
                                                                                         (v("warn"),))
    assert result(["allow", "not_reached"]).first_intervention() is None


def test_to_dict_keys_are_the_json_report_contract() -> None:
    d = result(["allow", "block"]).to_dict()
    assert list(d) == ["trace", "policy", "outcome", "stopped_at", "stopped_by", "steps"]
    assert d["trace"] == "r" and d["policy"] == "default" and d["outcome"] == "incomplete"
    assert list(d["steps"][1]) == ["index", "kind", "tool", "action", "verdicts"]
    assert list(d["steps"][1]["verdicts"][0]) == ["engine", "action", "reason", "message", "data"]
    assert d["steps"][0]["verdicts"] == []
