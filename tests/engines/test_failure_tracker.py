"""failure_tracker engine: every rule of PRESETS.md's qa-agent, browser-use, hermes-current and default sections.

Expected verdicts come from PRESETS.md / DESIGN.md arithmetic (max_failures 3 or 5, the 4th identical
click, levels 5/8/12 of a window of 20, warn at 2/3/2), never from the engine's output. Timelines list, per
step, `allow` (no failure_tracker verdict) or `<action> <reason without the engine prefix>`.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopguard import Guard, ReplayResult, ToolCall, ToolResult, replay, resolve_policy
from pytest_loopguard.core._model import Message
from pytest_loopguard.engines import failure_tracker
from pytest_loopguard.engines.failure_tracker import FailureTracker, action_identity
from pytest_loopguard.io._format import trace_from_mapping

ENGINE = "failure_tracker"
# Only failure_tracker decides these tests (default turns every engine on; their verdicts are not ours).
ONLY_FAILURES = {"loop_guard": False, "read_tracker": False, "budget": False, "dedup": False, "context": False}


# default's own rules on top of PRESETS.md's (docs/presets.md), off unless a test names them
DEFAULT_RULES_OFF = {"failing_key_warn_at": None, "failing_key_streak_warn_at": None, "failures_warn_at": None,
                     "rejected_warn_at": None}


def policy(preset: str, **overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"preset": preset, **(ONLY_FAILURES if preset == "default" else {})}
    if preset == "default":
        overrides = {**DEFAULT_RULES_OFF, **overrides}
    if overrides:
        spec[ENGINE] = overrides
    return spec


def ok(tool: str, result_text: str | None = None, /, **args: Any) -> dict[str, Any]:
    result = {"ok": True} if result_text is None else {"ok": True, "text": result_text}
    return {"tool": tool, "args": args, "result": result}


def fail(tool: str, error: str = "Element not found", /, **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args, "result": {"error": error}}


LLM: dict[str, Any] = {"llm": {"output_tokens": 10}}
DONE: dict[str, Any] = {"done": {"success": False, "text": "gave up"}}


def user(text: str = "try again") -> dict[str, Any]:
    return {"message": {"role": "user", "text": text}}


def run(spec: Any, steps: Sequence[Mapping[str, Any]], objective: str = "Buy the blue mug") -> ReplayResult:
    return replay(trace_from_mapping({
        "loopguard": 1, "name": "failure-tracker-unit", "policy": spec,
        "task": {"objective": objective}, "steps": list(steps),
    }))


def timeline(result: ReplayResult) -> list[str]:
    out = []
    for s in result.steps:
        mine = [v for v in s.verdicts if v.engine == ENGINE]
        if s.action == "not_reached":
            out.append("not_reached")
        elif not mine:
            out.append("allow")
        else:
            out.append(" ".join(f"{v.action} {v.reason.removeprefix(ENGINE + '.')}" for v in mine))
    return out


def verdict(result: ReplayResult, index: int) -> Any:
    (v,) = [v for v in result.steps[index].verdicts if v.engine == ENGINE]
    return v


def click_fails(n: int, start: int = 1) -> list[dict[str, Any]]:
    """n failed single-call turns on distinct indexes (so no repetition or action loop interferes)."""
    return [fail("click", index=start + i) for i in range(n)]


# ---- failed turns: qa-agent / browser-use (single_call) ----------------------------------------------

def test_qa_agent_third_failure_forces_done_with_the_original_task() -> None:
    r = run("qa-agent", [*click_fails(3), DONE], objective="Add the blue mug to the cart")
    assert timeline(r) == ["allow", "allow", "warn force_done", "allow"]
    v = verdict(r, 2)
    assert v.data == {"count": 3, "max_failures": 3}
    assert v.message.startswith("You failed 3 times")
    assert '"done" tool' in v.message and "false" in v.message
    assert v.message.endswith("Original task: Add the blue mug to the cart")
    assert r.outcome == "completed"


def test_after_forced_done_any_non_done_call_stops() -> None:
    r = run("qa-agent", [*click_fails(3), ok("navigate", url="https://x.example"), DONE])
    assert timeline(r) == ["allow", "allow", "warn force_done", "stop max_failures", "not_reached"]
    assert (r.outcome, r.stopped_at, r.stopped_by) == ("stopped", 3, ENGINE)


def test_after_forced_done_the_done_tool_runs_and_completes() -> None:
    r = run("qa-agent", [*click_fails(3), ok("done", success=False)])
    assert timeline(r) == ["allow", "allow", "warn force_done", "allow"]
    assert r.outcome == "completed"


def test_successful_turn_resets_the_streak() -> None:
    r = run("qa-agent", [*click_fails(2), ok("click", index=50), *click_fails(2, start=10), fail("click", index=20)])
    assert timeline(r) == ["allow"] * 5 + ["warn force_done"]


def test_multi_call_turn_resets_even_when_a_call_failed() -> None:
    steps = [LLM, fail("click", index=1), LLM, fail("click", index=2),
             LLM, fail("click", index=3), fail("click", index=4),  # two calls, both failed: still a reset
             LLM, fail("click", index=5), LLM, fail("click", index=6)]
    assert timeline(run("qa-agent", steps)) == ["allow"] * 11
    r = run("qa-agent", [*steps, LLM, fail("click", index=7)])
    assert timeline(r)[-1] == "warn force_done"


def test_turn_without_calls_resets_the_streak() -> None:
    steps = [LLM, fail("click", index=1), LLM, fail("click", index=2), LLM,
             LLM, fail("click", index=3), LLM, fail("click", index=4)]
    assert timeline(run("qa-agent", steps)) == ["allow"] * 9


def test_browser_use_forces_done_at_five() -> None:
    r = run("browser-use", [*click_fails(5), ok("click", index=99)])
    assert timeline(r) == ["allow"] * 4 + ["warn force_done", "stop max_failures"]
    assert verdict(r, 4).message.startswith("You failed 5 times")
    assert verdict(r, 4).data == {"count": 5, "max_failures": 5}


def test_without_final_response_reaching_max_failures_stops() -> None:
    r = run(policy("qa-agent", final_response_after_failure=False), [*click_fails(3), ok("click", index=9)])
    assert timeline(r) == ["allow", "allow", "stop max_failures", "not_reached"]
    assert verdict(r, 2).data == {"count": 3, "max_failures": 3}


def test_no_failure_counting_without_max_failures() -> None:
    r = run(policy("qa-agent", max_failures=None), click_fails(6))
    assert timeline(r) == ["allow"] * 6


def new_guard(spec: Any, objective: str = "task") -> tuple[Guard, FailureTracker]:
    guard = Guard(resolve_policy(spec), objective=objective)
    engine = guard.run.engines[ENGINE]
    assert isinstance(engine, FailureTracker)
    return guard, engine


def play_turn(guard: Guard, calls: Sequence[tuple[ToolCall, ToolResult | None]]) -> list[str]:
    """One turn: None as a result means the caller blocks the call (as another engine would)."""
    guard.end_turn()
    guard.start_turn([c for c, _ in calls])
    out = []
    for c, result in calls:
        before = guard.before_call(c)
        after = guard.after_call(c, result if before.runs else None, before)
        out.append(after.action)
    return out


FAILED = ToolResult.failure("Element not found")
OK = ToolResult(text="ok")


def test_blocked_single_call_is_not_a_failure() -> None:
    guard, engine = new_guard("qa-agent")
    play_turn(guard, [(ToolCall.of("click", {"index": 1}), FAILED)])
    play_turn(guard, [(ToolCall.of("click", {"index": 2}), FAILED)])
    assert engine.consecutive_failures == 2
    play_turn(guard, [(ToolCall.of("click", {"index": 3}), None)])
    assert engine.consecutive_failures == 0


# ---- failed turns: default (all_failed) ---------------------------------------------------------------
# default forces done at 12 failed turns (docs/presets.md); the mechanism is tested at PRESETS.md's 3

def test_default_counts_a_turn_whose_calls_all_failed_on_its_last_call() -> None:
    turn = [LLM, fail("click", index=1), fail("input", index=2, text="a")]
    steps = [turn[0], *turn[1:], LLM, fail("click", index=3), fail("input", index=4, text="a"),
             LLM, fail("click", index=5), fail("input", index=6, text="a"), LLM, ok("click", index=7)]
    r = run(policy("default", max_failures=3), steps)
    assert timeline(r) == ["allow"] * 8 + ["warn force_done", "allow", "stop max_failures"]


def test_default_partly_failed_turn_resets() -> None:
    steps = [LLM, fail("click", index=1), LLM, fail("click", index=2),
             LLM, fail("click", index=3), ok("click", index=4), LLM, fail("click", index=5),
             LLM, fail("click", index=6)]
    assert timeline(run(policy("default", max_failures=3), steps)) == ["allow"] * 11
    more = [*steps, LLM, fail("click", index=7)]
    assert timeline(run(policy("default", max_failures=3), more))[-1] == "warn force_done"


def test_default_single_failed_call_is_a_failed_turn() -> None:
    r = run(policy("default", max_failures=3), click_fails(3))
    assert timeline(r) == ["allow", "allow", "warn force_done"]


def test_all_failed_ignores_blocked_calls_but_needs_one_that_ran() -> None:
    guard, engine = new_guard(policy("default"))
    a, b = ToolCall.of("click", {"index": 1}), ToolCall.of("click", {"index": 2})
    play_turn(guard, [(a, FAILED), (b, None)])  # the call that ran failed: a failed turn
    assert engine.consecutive_failures == 1
    play_turn(guard, [(a, None), (b, None)])  # nothing ran: not a failed turn
    assert engine.consecutive_failures == 0


def test_all_failed_verdict_lands_on_the_last_call_of_the_turn() -> None:
    guard, _ = new_guard(policy("default", max_failures=3))
    calls = [(ToolCall.of("click", {"index": i}), FAILED) for i in (1, 2)]
    assert play_turn(guard, calls) == ["allow", "allow"]
    assert play_turn(guard, calls) == ["allow", "allow"]
    assert play_turn(guard, calls) == ["allow", "warn"]


# ---- repetition (qa-agent) ----------------------------------------------------------------------------

def test_fourth_click_on_the_same_index_is_stopped() -> None:
    steps = [ok("click", index=7), ok("click", index=7, note="x"), ok("click", index=7), ok("click", index=7),
             ok("click", index=8)]
    r = run("qa-agent", steps)
    assert timeline(r) == ["allow", "allow", "allow", "stop repetition", "not_reached"]
    assert verdict(r, 3).data["repetitions"] == 3
    assert verdict(r, 3).data["max_repetitions"] == 3


def test_repetition_resets_on_another_target_or_tool() -> None:
    steps = [ok("click", index=7)] * 3 + [ok("click", index=6)] + [ok("click", index=7)] * 3 \
        + [ok("input", index=7, text="a")] + [ok("click", index=7)] * 3
    assert timeline(run("qa-agent", steps)) == ["allow"] * 11


def test_missing_target_on_both_calls_is_the_same_target() -> None:
    r = run("qa-agent", [ok("scroll", down=True)] * 4)
    assert timeline(r) == ["allow"] * 3 + ["stop repetition"]
    r = run("qa-agent", [ok("scroll"), ok("scroll", index=1), ok("scroll"), ok("scroll", index=1)])
    assert timeline(r) == ["allow"] * 4


def test_target_keys_are_configurable() -> None:
    spec = policy("qa-agent", target_keys=["index", "text"])
    steps = [ok("input", index=1, text="a"), ok("input", index=1, text="b")] * 2
    assert timeline(run(spec, steps)) == ["allow"] * 4
    assert timeline(run(spec, [ok("input", index=1, text="a")] * 4))[-1] == "stop repetition"


def test_browser_use_has_no_repetition_stop() -> None:
    assert "stop repetition" not in timeline(run("browser-use", [ok("click", index=7)] * 6))


# ---- max_steps ----------------------------------------------------------------------------------------

def test_turn_after_max_steps_ends_the_run_exhausted() -> None:
    steps = [LLM, ok("click", index=1), LLM, LLM, ok("click", index=2), ok("click", index=3), LLM,
             ok("click", index=4)]
    r = run(policy("qa-agent", max_steps=3), steps)
    assert timeline(r) == ["allow"] * 6 + ["stop max_steps", "not_reached"]
    assert r.outcome == "exhausted" and r.stopped_at == 6
    assert verdict(r, 6).data["outcome"] == "exhausted"


def test_max_steps_counts_one_turn_per_call_without_llm_steps() -> None:
    r = run(policy("qa-agent", max_steps=2), [ok("click", index=1), ok("click", index=2), ok("click", index=3)])
    assert timeline(r) == ["allow", "allow", "stop max_steps"]
    assert r.outcome == "exhausted"


# ---- action loop (browser-use) ------------------------------------------------------------------------

def test_action_identity_normalisation() -> None:
    def same(a: ToolCall, b: ToolCall) -> bool:
        return action_identity(a) == action_identity(b)

    of = ToolCall.of
    assert same(of("click", {"index": 3, "new_tab": True}), of("click", {"index": 3}))
    assert not same(of("click", {"index": 3}), of("click", {"index": 4}))
    assert same(of("input", {"index": 1, "text": "  Hello "}), of("input", {"index": 1, "text": "hello"}))
    assert not same(of("input", {"index": 1, "text": "hello"}), of("input", {"index": 2, "text": "hello"}))
    assert not same(of("input", {"index": 1, "text": "hello"}), of("input", {"index": 1, "text": "bye"}))
    assert same(of("navigate", {"url": "https://a.example", "new_tab": True}), of("navigate", {"url": "https://a.example"}))
    assert same(of("search", {"query": "Cheap, FLIGHTS: berlin berlin!"}),
                of("search", {"query": "berlin cheap flights", "engine": "google"}))
    assert same(of("search", {"query": "café_au-lait"}), of("search", {"query": "lait CAFÉ_AU"}))
    bing = of("search", {"query": "cheap flights", "engine": "bing"})
    assert not same(of("search", {"query": "cheap flights"}), bing)
    assert not same(of("search", {"query": "cheap flights"}), of("search", {"query": "cheap flight"}))
    assert same(of("scroll", {"down": True, "pages": 1}), of("scroll", {"down": True, "pages": 3}))
    assert same(of("scroll", {}), of("scroll", {"down": True}))
    assert not same(of("scroll", {"down": True}), of("scroll", {"down": False}))
    assert not same(of("scroll", {"down": True, "index": 2}), of("scroll", {"down": True}))
    assert same(of("extract", {"b": 2, "a": 1, "c": None}), of("extract", {"a": 1, "b": 2.0}))
    assert not same(of("extract", {"a": 1}), of("extract", {"a": 2}))
    assert not same(of("extract", {"a": 1}), of("upload", {"a": 1}))


def test_action_loop_levels_5_8_12() -> None:
    r = run("browser-use", [ok("click", index=5)] * 13)
    expected = ["allow"] * 4 + ["warn action_loop"] * 9
    assert timeline(r) == expected
    levels = [verdict(r, i).data["level"] for i in range(4, 13)]
    assert levels == [5, 5, 5, 8, 8, 8, 8, 12, 12]
    messages = {verdict(r, i).data["level"]: verdict(r, i).message for i in (4, 7, 11)}
    assert len(set(messages.values())) == 3  # a stronger message at each level
    assert "loop" in messages[8] and "stuck" in messages[12]


def test_action_loop_counts_the_most_frequent_identity_not_consecutive_calls() -> None:
    steps = []
    for i in range(5):
        steps += [ok("click", index=5), ok("navigate", url=f"https://a.example/{i}")]
    # the navigation after the 5th click still leaves that click 5 times in the window
    assert timeline(run("browser-use", steps)) == ["allow"] * 8 + ["warn action_loop"] * 2


def test_action_loop_window_forgets_old_calls() -> None:
    steps = [ok("click", index=1)] * 4 + [ok("navigate", url=f"https://a.example/{i}") for i in range(16)]
    r = run("browser-use", [*steps, ok("click", index=1), ok("click", index=1)])
    assert timeline(r) == ["allow"] * 22
    r = run(policy("browser-use", action_loop_window=21), [*steps, ok("click", index=1)])
    assert timeline(r)[-1] == "warn action_loop"


def test_action_loop_exempt_tools_stay_out_of_the_window() -> None:
    steps = [ok("wait", seconds=1)] * 6 + [ok("go_back")] * 6
    assert timeline(run("browser-use", steps)) == ["allow"] * 12
    mixed = []
    for _ in range(5):
        mixed += [ok("click", index=9), ok("wait", seconds=1)]
    # exempt calls add no verdict of their own, even while the window holds a loop
    assert timeline(run("browser-use", mixed)) == ["allow"] * 8 + ["warn action_loop", "allow"]


def test_action_loop_is_off_outside_browser_use() -> None:
    assert timeline(run("qa-agent", [ok("click", index=5), ok("navigate", url="u")] * 6)) == ["allow"] * 12


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=60), st.integers(1, 8))
def test_window_top_count_matches_a_recount(indexes: list[int], window: int) -> None:
    guard, engine = new_guard(policy("browser-use", action_loop_window=window, max_failures=None))
    recent: deque[int] = deque(maxlen=window)
    for i in indexes:
        play_turn(guard, [(ToolCall.of("click", {"index": i}), OK)])
        recent.append(i)
        assert engine.top_count == max(Counter(recent).values())
        # identities that left the window are forgotten: memory stays bounded by the window
        assert len(engine._identity_counts) == len(set(recent))


# ---- guardrails (hermes-current) ----------------------------------------------------------------------

def test_exact_failure_warns_from_the_second_failure_of_a_signature() -> None:
    steps = [fail("terminal", "boom", command="make", cwd="/r"), fail("terminal", "boom", cwd="/r", command="make"),
             fail("terminal", "boom", command="make", cwd="/r")]
    r = run("hermes-current", steps)
    assert timeline(r) == ["allow", "warn exact_failure", "warn exact_failure"]
    assert [verdict(r, i).data["count"] for i in (1, 2)] == [2, 3]


def test_same_tool_failure_warns_at_three_failures_of_a_tool() -> None:
    steps = [fail("terminal", command="a"), fail("web_extract", url="u"), fail("terminal", command="b"),
             fail("terminal", command="c"), fail("terminal", command="d")]
    r = run("hermes-current", steps)
    assert timeline(r) == ["allow", "allow", "allow", "warn same_tool_failure", "warn same_tool_failure"]


def test_exact_failure_takes_precedence_over_same_tool() -> None:
    steps = [fail("terminal", command="a"), fail("terminal", command="b"), fail("terminal", command="b")]
    assert timeline(run("hermes-current", steps)) == ["allow", "allow", "warn exact_failure"]


def test_success_clears_exact_and_same_tool_counts() -> None:
    steps = [fail("terminal", command="a"), fail("terminal", command="b"), ok("terminal", command="a"),
             fail("terminal", command="a"), fail("terminal", command="c")]
    assert timeline(run("hermes-current", steps)) == ["allow"] * 5
    # the success of another signature clears the tool count but not the exact count of `a`
    steps = [fail("terminal", command="a"), ok("terminal", command="b"), fail("terminal", command="a")]
    assert timeline(run("hermes-current", steps)) == ["allow", "allow", "warn exact_failure"]


def test_no_progress_on_read_only_tools() -> None:
    steps = [ok("web_search", "r1", query="q"), ok("web_search", "r1", query="q"), ok("web_search", "r2", query="q"),
             ok("web_search", "r2", query="q"), fail("web_search", "down", query="q"),
             ok("web_search", "r2", query="q"), ok("web_search", "r1", query="other")]
    r = run("hermes-current", steps)
    assert timeline(r) == ["allow", "warn no_progress", "allow", "warn no_progress", "allow", "allow", "allow"]


def test_no_progress_compares_missing_text_as_empty() -> None:
    steps = [ok("web_extract", url="u"), ok("web_extract", "", url="u")]
    assert timeline(run("hermes-current", steps)) == ["allow", "warn no_progress"]


def test_other_tools_never_get_no_progress() -> None:
    assert timeline(run("hermes-current", [ok("terminal", "same", command="ls")] * 4)) == ["allow"] * 4
    spec = policy("hermes-current", read_only_tools=["terminal"])
    assert timeline(run(spec, [ok("terminal", "same", command="ls")] * 2)) == ["allow", "warn no_progress"]


def test_user_message_resets_guardrails_but_llm_steps_do_not() -> None:
    steps = [fail("terminal", command="x"), LLM, fail("terminal", command="x")]
    assert timeline(run("hermes-current", steps))[-1] == "warn exact_failure"
    steps = [fail("terminal", command="x"), ok("web_search", "r", query="q"), user(),
             fail("terminal", command="x"), ok("web_search", "r", query="q")]
    assert timeline(run("hermes-current", steps)) == ["allow"] * 5
    steps = [fail("terminal", command="x"), {"message": {"role": "system", "text": "note"}},
             fail("terminal", command="x")]
    assert timeline(run("hermes-current", steps))[-1] == "warn exact_failure"


def test_blocked_calls_are_no_failure_and_do_not_extend_no_progress() -> None:
    guard, engine = new_guard("hermes-current")
    cmd, search = ToolCall.of("terminal", {"command": "x"}), ToolCall.of("web_search", {"query": "q"})
    play_turn(guard, [(cmd, FAILED)])
    play_turn(guard, [(cmd, None)])
    assert engine.exact_failures == {cmd.fingerprint: 1}
    play_turn(guard, [(search, OK)])
    play_turn(guard, [(search, None)])
    assert play_turn(guard, [(search, OK)]) == ["warn"]
    assert engine.no_progress[search.fingerprint][1] == 2


def test_opt_in_hard_stops() -> None:
    spec = policy("hermes-current", exact_failure_block_at=2, no_progress_block_at=3, same_tool_failure_stop_at=4)
    steps = [fail("terminal", command="a"), fail("terminal", command="a"), fail("terminal", command="a"),
             ok("web_search", "r", query="q"), ok("web_search", "r", query="q"), ok("web_search", "r", query="q"),
             ok("web_search", "r", query="q"), fail("terminal", command="b"), fail("terminal", command="c")]
    r = run(spec, steps)
    assert timeline(r) == ["allow", "warn exact_failure", "block exact_failure",
                           "allow", "warn no_progress", "warn no_progress", "block no_progress",
                           "warn same_tool_failure", "stop same_tool_failure"]
    assert verdict(r, 8).data["count"] == 4 and r.outcome == "stopped"


def test_hard_stops_are_off_in_hermes_current() -> None:
    steps = [fail("terminal", command="a")] * 9 + [ok("web_search", "r", query="q")] * 6
    assert set(timeline(run("hermes-current", steps))) <= {"allow", "warn exact_failure", "warn no_progress"}


def test_guardrails_are_off_outside_hermes_current() -> None:
    steps = [fail("terminal", command="a"), ok("click", index=1), fail("terminal", command="a"),
             ok("click", index=2)] * 2
    assert timeline(run(policy("default"), steps)) == ["allow"] * 8


# ---- presets, isolation --------------------------------------------------------------------------------

def test_preset_settings_follow_presets_md() -> None:
    qa = resolve_policy("qa-agent").settings(ENGINE)
    assert (qa.turn_failure, qa.max_failures, qa.final_response_after_failure, qa.max_repetitions,
            tuple(qa.target_keys), qa.max_steps, qa.action_loop, qa.guardrails) == \
        ("single_call", 3, True, 3, ("index",), 50, False, False)
    bu = resolve_policy("browser-use").settings(ENGINE)
    assert (bu.turn_failure, bu.max_failures, bu.final_response_after_failure, bu.max_repetitions, bu.max_steps,
            bu.action_loop, bu.action_loop_window, tuple(bu.action_loop_levels), set(bu.action_loop_exempt)) == \
        ("single_call", 5, True, None, 500, True, 20, (5, 8, 12), {"wait", "done", "go_back"})
    hc = resolve_policy("hermes-current").settings(ENGINE)
    assert (hc.max_failures, hc.guardrails, hc.exact_failure_warn_at, hc.same_tool_failure_warn_at,
            hc.no_progress_warn_at, hc.exact_failure_block_at, hc.same_tool_failure_stop_at,
            hc.no_progress_block_at) == (None, True, 2, 3, 2, None, None, None)
    assert set(hc.read_only_tools) == {"read_file", "search_files", "web_search", "web_extract", "browser_snapshot"}
    df = resolve_policy("default").settings(ENGINE)
    assert (df.turn_failure, df.max_failures, df.final_response_after_failure, df.max_repetitions,
            df.action_loop, df.guardrails) == ("all_failed", 12, True, None, False, False)


def test_each_run_starts_fresh() -> None:
    first, engine = new_guard("qa-agent")
    play_turn(first, [(ToolCall.of("click", {"index": 1}), FAILED)])
    assert engine.consecutive_failures == 1
    _, fresh = new_guard("qa-agent")
    assert fresh.consecutive_failures == 0 and not fresh.forced_done


def test_guard_message_reaches_the_engine() -> None:
    guard, engine = new_guard("hermes-current")
    play_turn(guard, [(ToolCall.of("terminal", {"command": "x"}), FAILED)])
    guard.message(Message("user", "again"))
    assert engine.exact_failures == {} and engine.tool_failures == {}


def test_engine_module_does_not_import_pytest() -> None:
    source = Path(failure_tracker.__file__).read_text(encoding="utf-8")
    assert "import pytest" not in source and "from pytest " not in source


# ---- rejected turns (default) ------------------------------------------------------------------------
def rejected(reason: str = "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.",
             ) -> dict[str, Any]:
    return {"rejected": {"reason": reason}}


def test_rejected_streak_warns_at_the_threshold_and_every_as_many_more_never_stops() -> None:
    steps = [ok("bash", command="ls"), *[rejected() for _ in range(9)], ok("bash", command="ls"),
             *[rejected() for _ in range(3)]]
    r = run(policy("default", rejected_warn_at=4, max_failures=None), steps)
    streak = ["allow"] * 3 + ["warn rejected_streak"] + ["allow"] * 3 + ["warn rejected_streak", "allow"]
    assert timeline(r) == ["allow", *streak, "allow", "allow", "allow", "allow"]  # an accepted call resets
    assert r.outcome == "incomplete"
    v = verdict(r, 4)
    assert v.data == {"count": 4, "warn_at": 4,
                      "reason": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."}
    # the message names how many, quotes what the harness asked for, and says what to do instead
    assert "Your last 4 replies were rejected" in v.message
    assert "found 2 actions." in v.message and "Reply in exactly the form it asks for" in v.message
    assert verdict(r, 8).data["count"] == 8


def test_rejected_streak_is_off_unless_set() -> None:
    steps = [rejected() for _ in range(12)]
    assert timeline(run(policy("default", rejected_warn_at=None), steps)) == ["allow"] * 12
    assert timeline(run("browser-use", [ok("click", index=1)]))[0] == "allow"
    assert resolve_policy("default").settings(ENGINE).rejected_warn_at == 4
    for preset in ("qa-agent", "browser-use", "hermes-current"):
        assert resolve_policy(preset).settings(ENGINE).rejected_warn_at is None


# ---- rejected turns (PRESETS.md common rules) ------------------------------------------------------------
REJECTED = {"rejected": {"reason": "no tool call"}}


def rejected_run(preset: str, n: int, **overrides: Any) -> ReplayResult:
    return run(policy(preset, **overrides), [LLM, ok("click", index=1), *[REJECTED] * n, LLM, ok("click", index=2)])


def actions(result: ReplayResult) -> list[str]:
    return [s.action for s in result.steps]


def test_qa_agent_counts_rejected_turns_as_failed_turns() -> None:
    # max_failures 3: the 3rd rejected turn forces done, the next non-done call stops the run
    result = rejected_run("qa-agent", 3)
    assert actions(result) == ["allow", "allow", "allow", "allow", "warn", "allow", "stop"]
    assert result.steps[4].verdicts[0].reason == "failure_tracker.force_done"
    assert actions(rejected_run("qa-agent", 2)) == ["allow"] * 6  # two, then a good turn: no verdict


def test_browser_use_counts_rejected_turns_as_failed_turns_at_five() -> None:
    assert actions(rejected_run("browser-use", 4)) == ["allow"] * 8
    assert actions(rejected_run("browser-use", 5))[6:] == ["warn", "allow", "stop"]


def test_a_rejected_turn_continues_a_streak_of_failed_call_turns() -> None:
    result = run(policy("qa-agent"), [LLM, fail("click", index=1), LLM, fail("click", index=2), REJECTED])
    assert actions(result) == ["allow", "allow", "allow", "allow", "warn"]


def test_hermes_guardrails_reset_only_at_a_persons_message() -> None:
    # exact failure warns at 2: a harness or agent message between the failures resets nothing
    harness = {"message": {"role": "user", "origin": "harness", "text": "That failed."}}
    agent = {"message": {"role": "user", "origin": "agent", "name": "Planner", "text": "Retry it."}}
    kept = run(policy("hermes-current"), [fail("patch", path="a.py"), harness, agent, fail("patch", path="a.py")])
    assert actions(kept)[-1] == "warn"
    reset = run(policy("hermes-current"), [fail("patch", path="a.py"), user(), fail("patch", path="a.py")])
    assert actions(reset)[-1] == "allow"


def test_rejected_turns_count_towards_max_steps() -> None:
    # max_steps 3: the turn (or rejected turn) after three turns ends the run as exhausted
    result = rejected_run("qa-agent", 2, max_steps=3, max_failures=None)
    assert actions(result)[:5] == ["allow", "allow", "allow", "allow", "stop"]
    assert result.outcome == "exhausted"
    assert rejected_run("qa-agent", 2, max_steps=4, max_failures=None).outcome == "incomplete"


def test_rejected_turns_are_ignored_where_the_setting_says_so() -> None:
    # the engine's own default (hermes-current, default) and qa-agent switched off
    assert actions(rejected_run("qa-agent", 6, rejected_turns="ignore")) == ["allow"] * 10
    assert actions(rejected_run("default", 6)) == ["allow"] * 10
    assert failure_tracker.Settings().rejected_turns == "ignore"


# ---- failing keys and failed-turn warnings (default) -------------------------------------------------
def sh(command: str, error: str | None = None) -> dict[str, Any]:
    result = {"ok": True, "text": "ok"} if error is None else {"exit_code": 1, "text": error}
    return {"tool": "bash", "args": {"command": command}, "result": result}


def test_failing_key_with_other_calls_between_warns_from_the_threshold_until_it_succeeds() -> None:
    edit = "sed -i 's/a/b/' lib/plot.py"
    steps = []
    for _ in range(4):  # edit <-> the same failing test, four rounds
        steps += [sh(edit), sh("python reproduce_issue.py", "AssertionError: still wrong")]
    steps += [sh("python reproduce_issue.py"), sh("python reproduce_issue.py", "AssertionError: again")]
    r = run(policy("default", failing_key_warn_at=3), steps)
    assert timeline(r) == ["allow"] * 5 + ["warn failing_key", "allow", "warn failing_key", "allow", "allow"]
    v = verdict(r, 5)
    assert v.data == {"tool": "bash", "verb": "python", "target": "reproduce_issue.py", "count": 3,
                      "in_a_row": 1, "warn_at": 3, "streak_warn_at": None}
    # the message names the failing command, how many times, its error, and another next step
    assert v.message.startswith("'python reproduce_issue.py' (bash) has failed 3 times since it last succeeded")
    assert "python reproduce_issue.py" in v.message and "AssertionError: still wrong" in v.message
    assert "take a different step" in v.message


def test_failing_key_in_a_row_warns_at_its_own_lower_threshold() -> None:
    # SWE-agent `edit` on the open file: three edits in a row rejected for syntax errors (pydicom-1458)
    steps = [{"tool": "str_replace_editor", "args": {"command": "str_replace", "path": "/w/m.c", "old_str": f"x{i}"},
              "result": {"error": "No replacement was performed"}} for i in range(3)]
    r = run(policy("default", failing_key_warn_at=5, failing_key_streak_warn_at=3), steps)
    assert timeline(r) == ["allow", "allow", "warn failing_key"]
    v = verdict(r, 2)
    assert (v.data["count"], v.data["in_a_row"], v.data["target"]) == (3, 3, "/w/m.c")
    assert v.message.startswith("'str_replace /w/m.c' (str_replace_editor) has failed 3 times in a row")
    assert "No replacement was performed" in v.message


def test_failed_turn_warning_comes_before_the_forced_finish() -> None:
    steps = [sh(f"make target{i}", "make: *** Error 1") for i in range(6)]
    r = run(policy("default", failures_warn_at=2, max_failures=5), steps)
    assert timeline(r) == ["allow", "warn failed_turns", "allow", "warn failed_turns", "warn force_done",
                           "stop max_failures"]
    v = verdict(r, 1)
    assert v.data == {"count": 2, "warn_at": 2, "max_failures": 5}
    assert "Your last 2 turns all failed" in v.message and "try a smaller step" in v.message


def test_default_numbers_for_its_own_rules() -> None:
    d = resolve_policy("default").settings(ENGINE)
    assert (d.failing_key_warn_at, d.failing_key_streak_warn_at, d.failures_warn_at, d.rejected_warn_at,
            d.max_failures) == (5, 3, 4, 4, 12)
    for preset in ("qa-agent", "browser-use", "hermes-current"):
        s = resolve_policy(preset).settings(ENGINE)
        assert (s.failing_key_warn_at, s.failing_key_streak_warn_at, s.failures_warn_at) == (None, None, None)


def test_failing_key_counts_start_afresh_at_a_persons_message_only() -> None:
    failing = sh("python t.py", "FAILED")
    harness = {"message": {"role": "user", "text": "<returncode>1</returncode>", "origin": "harness"}}
    steps = [failing, failing, harness, failing, user("new task"), failing, failing]
    r = run(policy("default", failing_key_warn_at=3), steps)
    assert timeline(r) == ["allow", "allow", "allow", "warn failing_key", "allow", "allow", "allow"]
