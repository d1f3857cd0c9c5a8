"""Interventions between two replays of one trace: matching, steps and tokens spent, what counts as moved.

Expected numbers come from the presets' rules: `default` warns at the 3rd identical call and blocks from the
5th; `qa-agent` stops the run at the 4th identical call (failure_tracker.repetition).
"""

from __future__ import annotations

from pytest_loopguard.core._model import LLMCall, ToolCall, ToolResult, Trace
from pytest_loopguard.core._model import Step as S
from pytest_loopguard.eval._diff import Change, Intervention, diff_results, interventions, spent
from pytest_loopguard.runtime._replay import replay

OVERRIDE = {"preset": "default", "loop_guard": {"warn_at": 2, "block_at": 4}}


def turns(n: int) -> Trace:
    """n turns of one model call (100 in, 10 out) and one identical click whose result is 5 tokens."""
    steps: list[S] = []
    for _ in range(n):
        steps.append(S(len(steps), "llm", llm=LLMCall(input_tokens=100, output_tokens=10)))
        steps.append(S(len(steps), "tool", call=ToolCall.of("click", {"index": 1}), result=ToolResult(tokens=5)))
    return Trace(name="turns", steps=tuple(steps))


def clicks(n: int) -> Trace:
    return Trace(name="clicks", steps=tuple(S(i, "tool", call=ToolCall.of("click", {"index": 1})) for i in range(n)))


WARN, BLOCK = "loop_guard.consecutive_warning", "loop_guard.consecutive_block"


def test_interventions_name_the_deciding_reason() -> None:
    assert interventions(replay(clicks(6), "default")) == [
        Intervention(2, "warn", WARN), Intervention(3, "warn", WARN),
        Intervention(4, "block", BLOCK), Intervention(5, "block", BLOCK),
    ]


def test_earlier_thresholds_change_and_add_interventions() -> None:
    # warn at 2, block at 4: warnings on calls 2-3 (steps 1, 2), blocks from call 4 (step 3).
    d = diff_results(replay(clicks(6), "default"), replay(clicks(6), OVERRIDE))
    assert d.changes == (
        Change("appeared", None, Intervention(1, "warn", WARN)),
        Change("changed", Intervention(3, "warn", WARN), Intervention(3, "block", BLOCK)),
    )
    assert d.moved
    assert d.steps == (6, 6) and d.tokens == (0, 0)


def test_a_shifted_run_moves_its_intervention() -> None:
    # Two extra distinct calls in front shift every step by 2: the same interventions, two steps later.
    shifted = Trace(name="clicks", steps=(
        S(0, "tool", call=ToolCall.of("open", {})), S(1, "tool", call=ToolCall.of("scroll", {})),
        *(S(i + 2, "tool", call=ToolCall.of("click", {"index": 1})) for i in range(3)),
    ))
    d = diff_results(replay(clicks(3), "default"), replay(shifted, "default"))
    assert d.changes == (Change("moved", Intervention(2, "warn", WARN), Intervention(4, "warn", WARN)),)
    assert d.changes[0].shift == 2


def test_a_stop_saves_steps_and_tokens() -> None:
    before, after = replay(turns(6), "default"), replay(turns(6), "qa-agent")
    # default: 12 steps; 6 model calls (660) + the 4 calls that ran (20; the 5th and 6th are blocked).
    assert spent(before) == (12, 680)
    # qa-agent stops the 4th click (step 7): steps 0-7, 4 model calls (440) + 3 calls that ran (15).
    assert spent(after) == (8, 455)
    d = diff_results(before, after)
    assert [c.kind for c in d.changes] == ["vanished", "changed", "vanished", "vanished"]
    assert d.changes[1] == Change("changed", Intervention(7, "warn", WARN),
                                  Intervention(7, "stop", "failure_tracker.repetition"))
    data = d.to_dict()
    assert (data["steps_saved"], data["tokens_saved"]) == (4, 225)
    assert (data["before"]["outcome"], data["after"]["outcome"], data["after"]["stopped_at"]) == (
        "incomplete", "stopped", 7)


def test_same_policy_moves_nothing() -> None:
    d = diff_results(replay(turns(6), "default"), replay(turns(6), "default"))
    assert d.changes == () and not d.moved


def test_tokens_count_the_providers_prompt_count_a_session_kept_as_x_input_tokens() -> None:
    # issue 26 item 6: a loop written as docs/runtime.md shows calls `before_llm()` without a count, so the
    # recording's llm step holds the provider's prompt count as `x-input_tokens` and `input_tokens` is null
    from pytest_loopguard.io._format import trace_from_mapping

    trace = trace_from_mapping({"loopguard": 1, "name": "x", "steps": [
        {"llm": {"output_tokens": 5}, "x-input_tokens": 1000},
        {"tool": "grep", "args": {"q": 1}},
    ]})
    assert spent(replay(trace, "default")) == (2, 1005)
