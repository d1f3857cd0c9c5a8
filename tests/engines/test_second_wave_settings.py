"""The engine settings issue 24 adds for cline, cline-sdk, opencode, kilo and crewai: bad values are one line
naming the setting, the defaults leave every earlier preset as it was, and the new presets name their sources."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pytest_loopguard import Guard, PolicyError, replay, resolve_policy
from pytest_loopguard.engines.failure_tracker import Settings as FailureSettings
from pytest_loopguard.engines.loop_guard import LoopGuard
from pytest_loopguard.engines.loop_guard import Settings as LoopSettings
from pytest_loopguard.io._format import trace_from_mapping

NEW_LOOP = ("ignore_args", "warn_exact", "warn_message", "stop_message", "count_scope", "block_repeat_of_last_success")
NEW_FAILURE = ("exit_code_failures", "empty_turns")
EARLIER = ("browser-use", "claw-code", "default", "gemini-cli", "gemini-cli-2026-06", "goose", "hermes",
           "hermes-current", "openchrome", "openhands", "openhands-sdk", "qa-agent", "roo", "spacebot-branch",
           "spacebot-channel", "spacebot-worker")
SOURCES = {  # preset: (the version it names, its engines)
    "cline": ("9ee618111d", {"loop_guard", "failure_tracker"}),
    "cline-sdk": ("21cb8d25", {"loop_guard", "failure_tracker"}),
    "opencode": ("002d9822", {"loop_guard"}),
    "kilo": ("3263e21b", {"loop_guard"}),
    "crewai": ("f4731f50", {"loop_guard"}),
}


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"loop_guard": {"count_scope": "response"}}, "loop_guard.count_scope"),
        ({"loop_guard": {"warn_message": "Tool {name} again"}}, "loop_guard.warn_message"),
        ({"loop_guard": {"stop_message": "{tool} {count} {x}"}}, "loop_guard.stop_message"),
        ({"loop_guard": {"ignore_args": "task_progress"}}, "loop_guard.ignore_args"),
        ({"loop_guard": {"ignore_args": ["task_progress", ""]}}, "loop_guard.ignore_args[1]"),
        ({"loop_guard": {"warn_exact": "yes"}}, "loop_guard.warn_exact"),
        ({"loop_guard": {"block_repeat_of_last_success": 1}}, "loop_guard.block_repeat_of_last_success"),
        ({"failure_tracker": {"turn_failure": "each"}}, "failure_tracker.turn_failure"),
        ({"failure_tracker": {"empty_turns": "skip"}}, "failure_tracker.empty_turns"),
        ({"failure_tracker": {"exit_code_failures": "no"}}, "failure_tracker.exit_code_failures"),
    ],
)
def test_bad_values_are_one_line_naming_the_setting(settings: dict[str, Any], field: str) -> None:
    with pytest.raises(PolicyError) as info:
        resolve_policy({"preset": "cline", **settings})
    message = str(info.value)
    assert "\n" not in message and f"policy field '{field}'" in message


@pytest.mark.parametrize("preset", EARLIER)
def test_the_new_settings_keep_their_defaults_in_every_earlier_preset(preset: str) -> None:
    policy = resolve_policy(preset)
    for engine, names, cls in (("loop_guard", NEW_LOOP, LoopSettings),
                               ("failure_tracker", NEW_FAILURE, FailureSettings)):
        if engine in policy.engines:
            settings, default = policy.settings(engine), cls()
            assert {n: getattr(settings, n) for n in names} == {n: getattr(default, n) for n in names}
    if "failure_tracker" in policy.engines:
        assert policy.settings("failure_tracker").turn_failure != "each_call"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_new_presets_name_their_source_and_engines(name: str) -> None:
    version, engines = SOURCES[name]
    policy = resolve_policy(name)
    assert version in policy.source and f"docs/presets.md ({name})" in policy.source
    assert set(policy.engines) == engines and policy.description.endswith(".")


def test_kilo_is_opencode() -> None:
    assert resolve_policy("kilo").engines == resolve_policy("opencode").engines


def test_the_turn_hook_is_idle_unless_the_count_lives_in_a_turn() -> None:
    run = Guard(resolve_policy("default")).run  # a run context: the engine reads its tool table when built
    assert "loopguard_turn_start" in LoopGuard(LoopSettings(), run).idle_hooks()
    assert not LoopGuard(LoopSettings(count_scope="turn"), run).idle_hooks()


def test_a_stop_without_a_block_stage_says_so() -> None:
    steps = [{"tool": "a", "args": {"n": 1}}] * 8
    result = replay(trace_from_mapping({"loopguard": 1, "name": "t", "steps": steps}),
                    {"preset": "default", "loop_guard": {"block_at": None, "warn_at": None}, "failure_tracker": False,
                     "read_tracker": False})
    assert [str(s.action) for s in result.steps] == ["allow"] * 7 + ["stop"]
    verdict = result.steps[7].verdicts[0]
    assert verdict.reason == "loop_guard.consecutive_stop" and "after being blocked" not in verdict.message
    assert verdict.data == {"tool": "a", "count": 8, "threshold": 8, "poll": False}


def test_ignored_arguments_leave_the_other_arguments_compared_as_the_mode_writes_them() -> None:
    # nested order counts under top_sorted_js (cline), whether or not an ignored argument was there
    def steps(*args: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"tool": "t", "args": a, "result": {"text": "x"}} for a in args]

    same = steps({"q": {"a": 1, "b": 2}, "task_progress": "1"}, {"q": {"a": 1, "b": 2}},
                 {"task_progress": "3", "q": {"a": 1, "b": 2.0}})
    other = steps({"q": {"a": 1, "b": 2}, "task_progress": "1"}, {"q": {"a": 1, "b": 2}},
                  {"task_progress": "3", "q": {"b": 2, "a": 1}})
    for given, third in ((same, "warn"), (other, "allow")):
        result = replay(trace_from_mapping({"loopguard": 1, "name": "t", "steps": given}), "cline")
        assert str(result.steps[2].action) == third
    assert dataclasses.replace(LoopSettings(), ignore_args=("x",)).ignore_args == ("x",)
