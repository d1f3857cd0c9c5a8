"""The strategies themselves: what they promise about the values they draw, and build_trace/save_trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from pytest_loopguard import Policy, ToolCall, ToolResult, Trace, load, resolve_policy
from pytest_loopguard.core._model import Done, LLMCall, Message, Step
from pytest_loopguard.pytest import _strategies as lgst


def test_build_trace_numbers_every_kind_of_item() -> None:
    click = ToolCall.of("browser_click", {"index": 1})
    trace = lgst.build_trace(
        [Message("user", "go"), LLMCall(output_tokens=3), click, (click, ToolResult.failure("gone")), "verify",
         Step(99, "done", done=Done(True))],
        policy=resolve_policy("qa-agent"), name="all-kinds", context={"window_tokens": 100},
    )
    assert [(s.index, s.kind) for s in trace.steps] == [
        (0, "message"), (1, "llm"), (2, "tool"), (3, "tool"), (4, "phase"), (5, "done")]
    assert trace.steps[3].outcome.error == "gone" and trace.steps[2].result is None
    assert (trace.name, trace.policy, trace.context) == ("all-kinds", "qa-agent", {"window_tokens": 100})


def test_build_trace_refuses_what_a_trace_cannot_hold() -> None:
    with pytest.raises(TypeError):
        lgst.build_trace(["not-a-phase"])
    drawn = resolve_policy({"preset": "default", "loop_guard": {"warn_at": 2}})
    with pytest.raises(ValueError, match="not a preset"):
        lgst.build_trace([], policy=drawn)


@given(lgst.policy_overrides(engines=("loop_guard", "read_tracker", "failure_tracker"), max_threshold=6))
def test_drawn_thresholds_stay_within_their_bounds(overrides: dict[str, object]) -> None:
    policy: Policy = resolve_policy(overrides)
    lg, rt = policy.settings("loop_guard"), policy.settings("read_tracker")
    assert 2 <= lg.warn_at < lg.block_at <= 6 and 1 <= lg.max_warnings_per_call <= 4
    assert lg.poll_multiplier in range(1, 4)
    assert 2 <= rt.warn_at < rt.block_at <= 6
    assert policy.settings("failure_tracker").max_failures in range(1, 7)
    assert policy.name == overrides["name"] and f"loop_guard.warn_at={lg.warn_at}" in policy.name


@given(lgst.overflow_sessions(window_tokens=5000, max_result_tokens=700))
def test_overflow_sessions_are_sessions(trace: Trace) -> None:
    assert trace.context == {"window_tokens": 5000}
    assert trace.steps[0].kind == "message" and trace.steps[-1].kind in ("llm", "tool")
    for step in trace.steps:
        if step.llm is not None and step.llm.error is not None:
            assert step.llm.error in lgst.OVERFLOW_ERRORS + lgst.TRANSIENT_ERRORS
        if step.result is not None:
            assert step.result.tokens is not None and 50 <= step.result.tokens <= 700
    # a turn's errors come before its successful model call, and its tools after that call
    last_llm: LLMCall | None = None
    for step in trace.steps:
        if step.llm is not None:
            last_llm = step.llm
        elif step.call is not None:
            assert last_llm is not None and last_llm.error is None


@given(lgst.identical_runs(min_size=3, max_size=9))
def test_identical_runs_are_one_call_repeated(trace: Trace) -> None:
    assert 3 <= len(trace.steps) <= 9
    assert len({s.call.ordered_fingerprint for s in trace.steps if s.call is not None}) == 1
    assert all(s.result is None for s in trace.steps)


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".jsonl"])
def test_save_trace_writes_the_format_of_the_suffix(tmp_path: Path, suffix: str) -> None:
    trace = lgst.build_trace([ToolCall.of("http_get", {"url": "https://example.com"})] * 2, policy="default")
    path = lgst.save_trace(trace, tmp_path / "deep" / f"case{suffix}", name="props-save")
    assert path.suffix == suffix and path.parent.name == "deep"
    back = load(path)
    assert back.name == "props-save" and back.description == trace.description and len(back.steps) == 2
