"""Expectations: each kind (step action, engine, reason, message, data; run outcome, stopped_by/at, counts,
strict) matches what it should and reports what differs."""

from __future__ import annotations

import textwrap

import pytest

from pytest_loopguard.core._expect import Mismatch, check, check_run, check_step, describe_expect
from pytest_loopguard.core._model import ReplayResult, RunExpect, StepExpect, StepResult, Trace, Verdict
from pytest_loopguard.io._format import loads

WARN = Verdict("loop_guard", "warn", "loop_guard.consecutive_warning", "Tool 'click' called 3 times",
               {"count": 3, "limits": {"warn": 3, "block": 5}})
BLOCK = Verdict("loop_guard", "block", "loop_guard.consecutive_block", "Blocked: tool 'click' called 5 times",
                {"count": 5})
NEAR = Verdict("budget", "allow", "budget.near", "near the limit", {"budget_status": "near"})


def trace(text: str) -> Trace:
    (t,) = loads(textwrap.dedent(text).lstrip("\n"))
    return t


def result(t: Trace, *steps: tuple[str, tuple[Verdict, ...]], outcome: str = "incomplete",
           stopped_at: int | None = None, stopped_by: str | None = None) -> ReplayResult:
    rows = tuple(
        StepResult(i, s.kind, s.call.tool if s.call else None, action, verdicts)
        for i, (s, (action, verdicts)) in enumerate(zip(t.steps, steps, strict=True))
    )
    return ReplayResult(t, "default", outcome, stopped_at, stopped_by, rows)  # type: ignore[arg-type]


def one_step(expect: str) -> Trace:
    return trace(f"loopguard: 1\nname: t\nsteps:\n  - tool: click\n    expect: {expect}\n")


# ---- step expectations -------------------------------------------------------------------------------
def test_short_action_matches_and_mismatches() -> None:
    t = one_step("warn")
    assert check(result(t, ("warn", (WARN,)))) == []
    (m,) = check(result(t, ("block", (BLOCK,))))
    assert (m.step, m.field, m.expected, m.got) == (0, "action", "warn", "block")
    assert "loop_guard: block loop_guard.consecutive_block" in m.detail


def test_engine_must_have_a_verdict() -> None:
    t = one_step("{action: warn, engine: loop_guard}")
    assert check(result(t, ("warn", (NEAR, WARN)))) == []
    (m,) = check(result(t, ("warn", (Verdict("budget", "warn", "budget.observation_streak"),))))
    assert (m.field, m.expected) == ("verdict", "warn (loop_guard)")
    assert m.got == "budget: warn budget.observation_streak"


def test_reason() -> None:
    t = one_step("{action: warn, reason: loop_guard.consecutive_warning}")
    assert check(result(t, ("warn", (WARN,)))) == []
    (m,) = check(result(t, ("warn", (Verdict("loop_guard", "warn", "loop_guard.ping_pong_warning"),))))
    assert m.field == "verdict" and m.detail == "no verdict matches"


def test_message_is_a_substring() -> None:
    t = one_step("{action: block, message: called 5 times}")
    assert check(result(t, ("block", (BLOCK,)))) == []
    (m,) = check(result(t, ("block", (Verdict("loop_guard", "block", "loop_guard.consecutive_block", "x"),))))
    assert m.field == "verdict"


def test_data_is_a_nested_subset() -> None:
    t = one_step("{action: warn, data: {count: 3, limits: {warn: 3}}}")
    assert check(result(t, ("warn", (WARN,)))) == []
    wrong = Verdict("loop_guard", "warn", "loop_guard.consecutive_warning", "", {"count": 3, "limits": {"warn": 4}})
    missing = Verdict("loop_guard", "warn", "loop_guard.consecutive_warning", "", {"count": 3})
    assert [m.field for m in check(result(t, ("warn", (wrong,))))] == ["verdict"]
    assert [m.field for m in check(result(t, ("warn", (missing,))))] == ["verdict"]


def test_every_field_must_hold_on_one_verdict() -> None:
    # engine from one verdict and reason from another do not make a match
    t = one_step("{action: warn, engine: budget, reason: loop_guard.consecutive_warning}")
    assert [m.field for m in check(result(t, ("warn", (WARN, NEAR))))] == ["verdict"]


def test_not_reached() -> None:
    t = one_step("not_reached")
    assert check(result(t, ("not_reached", ()))) == []
    assert [m.got for m in check(result(t, ("allow", ())))] == ["allow"]


def test_a_step_without_expect_is_free_unless_strict() -> None:
    t = trace("loopguard: 1\nname: t\nsteps:\n  - tool: a\n  - tool: a\n    expect: warn\n")
    assert check(result(t, ("warn", (WARN,)), ("warn", (WARN,)))) == []
    (m,) = check(result(t, ("warn", (WARN,)), ("warn", (WARN,))), strict=True)
    assert (m.step, m.expected, m.got) == (0, "allow", "warn")
    assert m.detail.startswith("strict: loop_guard: warn")


def test_a_trace_that_expects_nothing_of_its_steps_is_checked_without_building_the_timeline() -> None:
    """`ReplayResult.steps` is built on first read; a check that has no step to compare leaves it unbuilt, and
    reads it as soon as one step (or strict) needs it."""
    free = trace("loopguard: 1\nname: t\nexpect: {outcome: completed}\nsteps:\n  - tool: a\n  - done: {}\n")
    compact = ReplayResult.of_actions(free, "default", "completed", None, None, ("block", "allow"), {})
    assert check(compact) == []
    assert compact._steps is None
    (m,) = check(compact, strict=True)  # strict reads every step: the block is a mismatch
    assert (m.step, m.got) == (0, "block") and compact._steps is not None
    one = trace("loopguard: 1\nname: t\nsteps:\n  - tool: a\n  - tool: a\n    expect: warn\n")
    compact = ReplayResult.of_actions(one, "default", "incomplete", None, None, ("allow", "allow"), {})
    assert [(m.step, m.got) for m in check(compact)] == [(1, "allow")]


def test_strict_from_the_trace_and_allow_verdicts_pass_it() -> None:
    t = trace("loopguard: 1\nname: t\nstrict: true\nsteps:\n  - tool: a\n  - tool: b\n  - tool: c\n")
    assert check(result(t, ("allow", (NEAR,)), ("allow", ()), ("not_reached", ()))) == []
    assert [m.step for m in check(result(t, ("allow", ()), ("block", (BLOCK,)), ("allow", ())))] == [1]
    assert check(result(t, ("allow", ()), ("block", (BLOCK,)), ("allow", ())), strict=False) == []


def test_check_step_directly() -> None:
    got = StepResult(3, "tool", "click", "block", (BLOCK,))
    assert check_step(StepExpect("block", engine="loop_guard"), got) is None
    assert check_step(StepExpect("block", engine="dedup"), got) is not None


# ---- run expectations --------------------------------------------------------------------------------
RUN = """
loopguard: 1
name: run
steps:
  - tool: a
  - tool: a
  - tool: a
expect: {expect}
"""


def run_result(expect: str, outcome: str = "stopped", stopped_at: int | None = 2,
               stopped_by: str | None = "loop_guard") -> list[Mismatch]:
    t = trace(RUN.replace("{expect}", expect))
    stop = Verdict("loop_guard", "stop", "loop_guard.x")
    return check(result(t, ("allow", ()), ("warn", (WARN,)), ("stop", (stop,)), outcome=outcome,
                        stopped_at=stopped_at, stopped_by=stopped_by))


def test_outcome() -> None:
    assert run_result("{outcome: stopped}") == []
    (m,) = run_result("{outcome: completed}")
    assert (m.step, m.field, m.expected, m.got) == (None, "outcome", "completed", "stopped")
    assert str(m) == "run: outcome: expected 'completed', got 'stopped'"


def test_stopped_by_and_at() -> None:
    assert run_result("{stopped_by: loop_guard, stopped_at: 2}") == []
    assert [m.field for m in run_result("{stopped_by: budget, stopped_at: 1}")] == ["stopped_by", "stopped_at"]


def test_explicit_null_stopped_by_means_not_stopped() -> None:
    assert [m.field for m in run_result("{stopped_by: null, stopped_at: null}")] == ["stopped_by", "stopped_at"]
    assert run_result("{stopped_by: null, stopped_at: null}", "completed", None, None) == []
    assert run_result("{outcome: completed}", "completed", None, None) == []


def test_counts() -> None:
    assert run_result("{counts: {allow: 1, warn: 1, stop: 1, block: 0}}") == []
    mismatches = run_result("{counts: {warn: 2, block: 1}}")
    assert [(m.field, m.expected, m.got) for m in mismatches] == [("counts.warn", 2, 1), ("counts.block", 1, 0)]


def test_step_mismatches_come_before_run_mismatches() -> None:
    t = trace("loopguard: 1\nname: t\nsteps:\n  - {tool: a, expect: block}\nexpect: {outcome: completed}\n")
    assert [m.step for m in check(result(t, ("allow", ())))] == [0, None]


def test_check_run_directly() -> None:
    t = trace(RUN.replace("{expect}", "{}"))
    r = result(t, ("allow", ()), ("allow", ()), ("allow", ()))
    assert check_run(RunExpect(outcome="incomplete", counts={"allow": 3}), r) == []
    assert len(check_run(RunExpect(outcome="failed", counts={"allow": 2}), r)) == 2


@pytest.mark.parametrize(
    ("expect", "text"),
    [
        (StepExpect("warn"), "warn"),
        (StepExpect("block", reason="loop_guard.consecutive_block"), "block loop_guard.consecutive_block"),
        (StepExpect("block", engine="dedup"), "block (dedup)"),
        (StepExpect("warn", message="3 times"), "warn message~'3 times'"),
    ],
)
def test_describe_expect(expect: StepExpect, text: str) -> None:
    assert describe_expect(expect) == text
