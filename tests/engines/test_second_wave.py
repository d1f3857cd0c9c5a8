"""failure_tracker's second-wave settings (engines/_second_wave.py, _requery.py, _usage_limits.py): their checks,
their defaults leaving the earlier presets as they were, the live Guard path, and the rules PRESETS.md words
but the bundled traces under traces/presets/ do not pin on their own.

Expected verdicts come from PRESETS.md's mini-swe-agent, swe-agent, pydantic-ai and langchain-tool-call-limit
sections, never from the engine's output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard import Guard, PolicyError, ReplayResult, ToolCall, ToolResult, replay, resolve_policy
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core._model import Action
from pytest_loopguard.engines._second_wave import SecondWave
from pytest_loopguard.io._format import trace_from_mapping
from pytest_loopguard.runtime._policy import policy_from_dict, preset_names

SECOND_WAVE = ("mini-swe-agent", "swe-agent", "pydantic-ai", "langchain-tool-call-limit")


def run(policy: Any, steps: Sequence[Mapping[str, Any]]) -> ReplayResult:
    return replay(trace_from_mapping({"loopguard": 1, "name": "second-wave-unit", "policy": policy,
                                      "steps": list(steps)}))


def reasons(result: ReplayResult) -> list[str]:
    """Per step: `allow`, `not_reached`, or the failure_tracker verdicts as `<action> <code>`."""
    out = []
    for s in result.steps:
        mine = [f"{v.action} {v.reason.removeprefix('failure_tracker.')}" for v in s.verdicts]
        out.append(str(s.action) if not mine else " ".join(mine))
    return out


# ---- the presets and their defaults ----------------------------------------------------------------------

def test_loopguard_presets_lists_the_new_presets_with_their_sources() -> None:
    names = preset_names()
    for name in SECOND_WAVE:
        assert name in names
        policy = resolve_policy(name)
        assert "@" in policy.source or "1.5.2" in policy.source  # a commit or a release
        assert f"docs/presets.md ({name})" in policy.source
        assert list(policy.engines) == ["failure_tracker"]


def test_pydantic_ai_final_result_is_a_done_tool() -> None:
    policy = resolve_policy("pydantic-ai")
    assert policy.classifier.kind(ToolCall.of("final_result", {"answer": 1})) == "done"


@pytest.mark.parametrize("preset", [n for n in preset_names() if n not in SECOND_WAVE])
def test_the_earlier_presets_switch_none_of_it_on(preset: str) -> None:
    policy = resolve_policy(preset)
    if policy.enabled("failure_tracker"):
        settings = policy.settings("failure_tracker")
        assert SecondWave.of(settings) is None
        assert settings.per_prompt_usage is False


# ---- bad values: one line naming the setting ---------------------------------------------------------

@pytest.mark.parametrize(("overrides", "field", "problem"), [
    ({"rejected_stop_at": 0}, "failure_tracker.rejected_stop_at", "expected an integer >= 1"),
    ({"rejected_stop_reset": "step"}, "failure_tracker.rejected_stop_reset", "expected one of 'turn', 'call', 'never'"),
    ({"timeout_stop_at": 0}, "failure_tracker.timeout_stop_at", "expected an integer >= 1"),
    ({"timeout_markers": ["timed out", ""]}, "failure_tracker.timeout_markers", "non-empty"),
    ({"blocklist": [""]}, "failure_tracker.blocklist", "non-empty"),
    ({"block_unless_regex": {"r2": "(unclosed"}}, "failure_tracker.block_unless_regex.r2",
     "expected a regular expression, got '(unclosed'"),
    ({"block_unless_regex": ["r2"]}, "failure_tracker.block_unless_regex", "expected Mapping"),
    ({"tool_retries": -1}, "failure_tracker.tool_retries", "expected"),
    ({"call_limits": [{"tool": "search"}]}, "failure_tracker.call_limits[0]",
     "expected at least one of thread_limit, run_limit"),
    ({"call_limits": [{"run_limit": 3, "exit_behavior": "stop"}]}, "failure_tracker.call_limits[0].exit_behavior",
     "expected one of 'continue', 'error', 'end', got 'stop'"),
    ({"call_limits": [{"run_limit": 3, "limit": 4}]}, "failure_tracker.call_limits[0].limit", "unknown key"),
    ({"call_limits": [{"run_limit": True}]}, "failure_tracker.call_limits[0].run_limit", "expected an integer >= 0"),
    ({"call_limits": [{"thread_limit": 3, "run_limit": 5}]}, "failure_tracker.call_limits[0].run_limit",
     "expected at most thread_limit (3), got 5"),
    ({"call_limits": [{"run_limit": 3}, {"tool": None, "run_limit": 5}]}, "failure_tracker.call_limits[1].tool",
     "expected one entry per tool"),
    ({"call_limits": ["search"]}, "failure_tracker.call_limits[0]", "expected Mapping"),
])
def test_bad_values_name_the_setting(overrides: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(PolicyError) as info:
        resolve_policy({"preset": "swe-agent", "failure_tracker": overrides})
    assert info.value.field == field
    assert problem in info.value.problem
    assert "\n" not in str(info.value)


def test_a_bad_regex_in_a_trace_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "bad.yaml"
    trace.write_text(
        "loopguard: 1\nname: bad-regex\n"
        "policy: {preset: swe-agent, failure_tracker: {block_unless_regex: {r2: '[a-'}}}\n"
        "steps:\n  - {tool: bash, args: {command: r2 x}}\n", encoding="utf-8")
    assert cli.main(["run", str(trace)]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    (line,) = [x for x in err.splitlines() if x.startswith("loopguard: error:")]
    assert str(trace) in line and "failure_tracker.block_unless_regex.r2" in line and "regular expression" in line


def test_the_settings_travel_whole_to_a_guard_process() -> None:
    policy = resolve_policy({"preset": "swe-agent", "failure_tracker": {
        "call_limits": [{"tool": "bash", "run_limit": 2, "exit_behavior": "end"}]}})
    again = policy_from_dict(policy.to_dict())
    assert again.settings("failure_tracker") == policy.settings("failure_tracker")


# ---- the live Guard: verdicts before and after each call, as a Session gets them ------------------------

def test_live_guard_blocks_a_blocklisted_command_and_stops_on_the_third_requery() -> None:
    guard = Guard(resolve_policy("swe-agent"))
    for command in ("vim a.py", "python"):
        guard.start_turn([ToolCall.of("bash", {"command": command})])
        before = guard.before_call(ToolCall.of("bash", {"command": command}))
        assert before.action is Action.BLOCK and "is not supported by this environment" in before.message
        guard.after_call(ToolCall.of("bash", {"command": command}), None, before)
    guard.end_turn()
    from pytest_loopguard.core._model import Rejected
    decision = guard.rejected(Rejected(reason="format error"))
    assert decision.action is Action.STOP
    assert [v.reason for v in decision.verdicts] == ["failure_tracker.rejected_limit"]


def test_live_guard_call_limit_decided_at_the_turn_start_lands_on_each_call() -> None:
    guard = Guard(resolve_policy({"preset": "langchain-tool-call-limit",
                                  "failure_tracker": {"call_limits": [{"run_limit": 1}]}}))
    calls = [ToolCall.of("search", {"q": str(i)}) for i in range(3)]
    assert guard.start_turn(calls).action is Action.ALLOW  # nothing lands on the model's step
    got = []
    for call in calls:
        before = guard.before_call(call)
        got.append(before.action)
        guard.after_call(call, ToolResult(ok=True) if before.runs else None, before)
    assert got == [Action.ALLOW, Action.BLOCK, Action.BLOCK]


# ---- rules the bundled traces leave to words ----------------------------------------------------------

TIMEOUT = {"ok": False, "text": "The command 'x' was cancelled because it took more than 30 seconds."}


def test_timeout_markers_read_the_error_of_a_failed_call_too() -> None:
    steps = [{"tool": "bash", "args": {"command": f"sleep {i}"},
              "result": {"error": "The command was cancelled because it took more than 30 seconds"}} for i in range(3)]
    assert reasons(run("swe-agent", steps)) == ["allow", "allow", "stop timeouts"]


def test_a_denied_call_ends_no_streak_and_resets_no_requery() -> None:
    steps = [
        {"tool": "bash", "args": {"command": "a"}, "result": TIMEOUT},
        {"tool": "bash", "args": {"command": "b"}, "denied": {"reason": "the user said no"}},
        {"tool": "bash", "args": {"command": "c"}, "result": TIMEOUT},
        {"tool": "bash", "args": {"command": "vim x"}},
        {"tool": "bash", "args": {"command": "d"}, "denied": {"reason": "the user said no"}},
        {"rejected": {"reason": "format error"}},
        {"tool": "bash", "args": {"command": "e"}, "result": TIMEOUT},
    ]
    assert reasons(run("swe-agent", steps)) == [
        "allow", "allow", "allow", "block blocklist", "allow", "allow", "stop timeouts"]
    steps[-1] = {"rejected": {"reason": "format error"}}  # the denied call ran nothing: still 3 in a row
    assert reasons(run("swe-agent", steps))[-1] == "stop rejected_limit"


def test_default_rejected_limit_message_says_why() -> None:
    result = run({"preset": "swe-agent", "failure_tracker": {"rejected_stop_message": "", "rejected_stop_at": 2}},
                 [{"rejected": {"reason": "format error"}}, {"tool": "bash", "args": {"command": "nano x"}}])
    (stop,) = [v for v in result.steps[1].verdicts if v.action == "stop"]
    assert stop.message == "Stopped: 2 replies in a row could not be used; the last: 'nano x' is on the blocklist."


def test_tool_calls_limit_counts_output_tools_never_and_checks_a_turn_of_only_them_never() -> None:
    policy = {"preset": "pydantic-ai", "failure_tracker": {"tool_calls_limit": 1}}
    steps = [{"llm": {"output_tokens": 5}}, {"tool": "lookup", "args": {}, "result": {"ok": True}},
             {"llm": {"output_tokens": 5}}, {"tool": "final_result", "args": {"a": 1}, "result": {"ok": True}}]
    assert reasons(run(policy, steps)) == ["allow"] * 4
    steps[3] = {"tool": "lookup", "args": {"n": 2}, "result": {"ok": True}}
    assert reasons(run(policy, steps)) == ["allow", "allow", "allow", "stop tool_calls_limit"]


def test_tool_calls_limit_starts_again_at_a_user_message_only_per_prompt() -> None:
    steps = [{"tool": "lookup", "args": {}, "result": {"ok": True}},
             {"message": {"role": "user", "text": "again"}},
             {"tool": "lookup", "args": {"n": 2}, "result": {"ok": True}}]
    per_prompt = {"preset": "pydantic-ai", "failure_tracker": {"tool_calls_limit": 1}}
    assert reasons(run(per_prompt, steps)) == ["allow"] * 3
    whole_trace = {"preset": "pydantic-ai", "failure_tracker": {"tool_calls_limit": 1, "per_prompt_usage": False}}
    assert reasons(run(whole_trace, steps))[-1] == "stop tool_calls_limit"
    harness = [*steps[:1], {"message": {"role": "user", "origin": "harness", "text": "again"}}, steps[2]]
    assert reasons(run(per_prompt, harness))[-1] == "stop tool_calls_limit"  # only a person's message


def test_call_limit_continue_names_the_tool_and_error_stops_on_the_first_call() -> None:
    steps = [{"llm": {"output_tokens": 5}},
             {"tool": "read", "args": {}, "result": {"ok": True}},
             {"tool": "search", "args": {"q": 1}, "result": {"ok": True}},
             {"tool": "search", "args": {"q": 2}, "result": {"ok": True}}]
    entry = {"tool": "search", "run_limit": 1}
    result = run({"preset": "langchain-tool-call-limit", "failure_tracker": {"call_limits": [entry]}}, steps)
    assert reasons(result) == ["allow", "allow", "allow", "block call_limit"]
    assert result.steps[3].verdicts[0].message == "Tool call limit exceeded. Do not call 'search' again."
    entry["exit_behavior"] = "error"
    result = run({"preset": "langchain-tool-call-limit", "failure_tracker": {"call_limits": [entry]}}, steps)
    assert reasons(result) == ["allow", "stop call_limit", "not_reached", "not_reached"]
    assert result.steps[1].verdicts[0].message == "'search' tool call limit reached: run limit exceeded (2/1 calls)."


def test_swe_agent_blocks_only_its_shell_tool_and_only_a_string_command() -> None:
    steps = [{"tool": "bash", "args": {"command": ["vim", "x"]}, "result": {"ok": True}},
             {"tool": "bash", "args": {"cmd": "vim x"}, "result": {"ok": True}},
             {"tool": "execute_bash", "args": {"command": "vim x"}, "result": {"ok": True}},
             {"tool": "bash", "args": {"command": "\tvi\n"}}]
    assert reasons(run("swe-agent", steps)) == ["allow", "allow", "allow", "block blocklist"]
