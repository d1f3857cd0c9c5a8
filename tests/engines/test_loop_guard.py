"""loop_guard engine: every rule of PRESETS.md's spacebot section and the default preset, through replay.

Expected timelines are written from PRESETS.md's arithmetic (its table and worked examples), never from
the engine's output. Each step of a timeline reads `allow` (no loop_guard verdict) or
`<action> <reason without the engine prefix>`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard import Guard, ReplayResult, ToolCall, ToolResult, replay, resolve_policy
from pytest_loopguard.core._expect import check
from pytest_loopguard.core._model import Message
from pytest_loopguard.errors import PolicyError
from pytest_loopguard.io._format import load, trace_from_mapping

# Only loop_guard runs in these tests: another engine's verdict (or a block that changes what loop_guard
# is told) must not decide a loop_guard test.
OTHER_ENGINES_OFF = {"read_tracker": False, "failure_tracker": False, "budget": False, "dedup": False,
                     "context": False}

# PRESETS.md: the spacebot table, and the default section (warn 3 runs the call, block 5, poll × 3,
# min repeats 3, outcome 4; max warnings per call is our default 3).
TABLE: Mapping[str, Mapping[str, Any]] = {
    "spacebot-worker": {"warn": 4, "block": 7, "poll": 3, "outcome": 4, "pp_min": 4, "max_warn": 3,
                        "warn_action": "block", "identity": "ordered"},
    "spacebot-branch": {"warn": 3, "block": 5, "poll": 2, "outcome": 3, "pp_min": 3, "max_warn": 2,
                        "warn_action": "block", "identity": "ordered"},
    "spacebot-channel": {"warn": 2, "block": 4, "poll": 2, "outcome": 3, "pp_min": 3, "max_warn": 2,
                         "warn_action": "block", "identity": "ordered"},
    "default": {"warn": 3, "block": 5, "poll": 3, "outcome": 6, "pp_min": 3, "max_warn": 3,
                "warn_action": "warn", "identity": "canonical"},
}
PRESETS = tuple(TABLE)

SNAPSHOT: dict[str, Any] = {"tool": "browser_snapshot"}
TAB_LIST: dict[str, Any] = {"tool": "browser_tab_list"}
CLICK3: dict[str, Any] = {"tool": "browser_click", "args": {"index": 3}}
BUILD: dict[str, Any] = {"tool": "shell", "args": {"command": "make build"}}
OTHER: dict[str, Any] = {"tool": "browser_type", "args": {"index": 1, "text": "hello"}}
USER: dict[str, Any] = {"message": {"role": "user", "text": "try again"}}


def call(tool: str, text: str | None = None, **args: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": tool, "args": args}
    if text is not None:
        step["result"] = {"text": text}
    return step


def run(preset: str, steps: Sequence[Mapping[str, Any]], **overrides: Any) -> ReplayResult:
    policy: dict[str, Any] = {"preset": preset, **OTHER_ENGINES_OFF}
    if overrides:
        policy["loop_guard"] = overrides
    trace = trace_from_mapping({"loopguard": 1, "name": "loop_guard-unit", "policy": policy, "steps": list(steps)})
    return replay(trace)


def timeline(result: ReplayResult) -> list[str]:
    out = []
    for step in result.steps:
        verdicts = [v for v in step.verdicts if v.engine == "loop_guard"]
        assert len(verdicts) <= 1, verdicts
        out.append(f"{verdicts[0].action} {verdicts[0].reason.split('.', 1)[1]}" if verdicts else "allow")
    return out


def verdict_data(result: ReplayResult, index: int) -> Mapping[str, Any]:
    (verdict,) = [v for v in result.steps[index].verdicts if v.engine == "loop_guard"]
    return verdict.data


def assert_figures(data: Mapping[str, Any], **expected: Any) -> None:
    assert {key: data.get(key) for key in expected} == expected


def consecutive_timeline(preset: str, n: int, *, poll: bool = False) -> list[str]:
    """PRESETS.md's consecutive rule written out for `n` identical calls in a row."""
    p = TABLE[preset]
    mult = p["poll"] if poll else 1
    out, warnings = [], 0
    for count in range(1, n + 1):
        if count >= p["block"] * mult:
            out.append("block consecutive_block")
        elif count >= p["warn"] * mult:
            warnings += 1
            out.append("block warnings_exhausted" if warnings > p["max_warn"]
                       else f"{p['warn_action']} consecutive_warning")
        else:
            out.append("allow")
    return out


# ---- presets ------------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_preset_loop_guard_block_matches_presets_table(preset: str) -> None:
    s = resolve_policy(preset).settings("loop_guard")
    p = TABLE[preset]
    assert (s.identity, s.warn_at, s.block_at, s.poll_multiplier, s.outcome_block_threshold,
            s.ping_pong_min_repeats, s.max_warnings_per_call, s.warn_action) == (
        p["identity"], p["warn"], p["block"], p["poll"], p["outcome"], p["pp_min"], p["max_warn"], p["warn_action"])
    assert s.ping_pong_periods == (2, 3)
    assert s.ping_pong_detect_repeats == 3
    assert s.outcome_prefix_bytes == 1000
    assert s.ring_size == 30
    assert s.reset_on_user_message


def test_spacebot_alias_is_the_worker() -> None:
    assert resolve_policy("spacebot").settings("loop_guard") == resolve_policy("spacebot-worker").settings("loop_guard")


def test_spacebot_presets_treat_short_shell_commands_as_polls_and_default_does_not() -> None:
    for preset in ("spacebot-worker", "spacebot-branch", "spacebot-channel"):
        s = resolve_policy(preset).settings("loop_guard")
        assert s.poll_shell_tools == ("shell",)
        assert s.poll_max_chars == 200
        assert set(s.poll_words) == {"status", "poll", "wait", "watch", "tail", '"ps ', "jobs", "pgrep",
                                     "docker ps", "kubectl get"}
    assert resolve_policy("default").settings("loop_guard").poll_shell_tools == ()


# ---- PRESETS.md's worked examples -------------------------------------------------------------
def test_worker_identical_call_seven_times() -> None:
    result = run("spacebot-worker", [BUILD] * 7)
    assert timeline(result) == ["allow"] * 3 + ["block consecutive_warning"] * 3 + ["block consecutive_block"]


def test_worker_twelve_snapshots_warn_on_the_twelfth() -> None:
    result = run("spacebot-worker", [SNAPSHOT] * 12)
    assert timeline(result) == ["allow"] * 11 + ["block consecutive_warning"]


def test_worker_snapshot_click_twenty_rounds_all_allowed() -> None:
    result = run("spacebot-worker", [SNAPSHOT, CLICK3] * 20)
    assert timeline(result) == ["allow"] * 40


def test_default_warns_at_three_and_four_and_blocks_at_five() -> None:
    result = run("default", [BUILD] * 5)
    assert timeline(result) == ["allow", "allow", "warn consecutive_warning", "warn consecutive_warning",
                                "block consecutive_block"]
    assert [s.action for s in result.steps] == ["allow", "allow", "warn", "warn", "block"]


# ---- consecutive counts -----------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_consecutive_identical_calls_per_preset(preset: str) -> None:
    n = TABLE[preset]["block"] + 1
    assert timeline(run(preset, [BUILD] * n)) == consecutive_timeline(preset, n)


@pytest.mark.parametrize("preset", PRESETS)
def test_identical_calls_spread_over_a_session_are_never_counted_as_a_loop(preset: str) -> None:
    # the lifetime-total bug of seed 000: the same call, twice block_at times, a different call between
    n = 2 * TABLE[preset]["block"]
    steps: list[dict[str, Any]] = []
    for i in range(n):
        steps += [BUILD, call("shell", command=f"echo {i}")]
    assert timeline(run(preset, steps)) == ["allow"] * (2 * n)


@pytest.mark.parametrize("preset", PRESETS)
def test_a_different_call_resets_the_consecutive_count(preset: str) -> None:
    warn = TABLE[preset]["warn"]
    steps = [BUILD] * (warn - 1) + [OTHER] + [BUILD] * (warn - 1)
    assert timeline(run(preset, steps)) == ["allow"] * (2 * warn - 1)


def test_consecutive_block_message_and_figures() -> None:
    result = run("spacebot-worker", [BUILD] * 7)
    (verdict,) = result.steps[6].verdicts
    assert verdict.message.startswith("Blocked: tool 'shell' called 7 times with identical parameters")
    assert_figures(verdict.data, count=7, threshold=7, tool="shell")


def test_consecutive_warning_message_and_figures() -> None:
    result = run("spacebot-worker", [BUILD] * 5)
    (verdict,) = result.steps[4].verdicts
    assert verdict.message.startswith("Warning:")
    assert_figures(verdict.data, tool="shell", count=5, threshold=4, warnings=2)


# ---- warnings per call ------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_warnings_exhausted_on_poll_calls_per_preset(preset: str) -> None:
    p = TABLE[preset]
    # warnings exhaust before block_at only with the poll multiplier: warn×mult + max_warn < block×mult
    n = p["warn"] * p["poll"] + p["max_warn"] + 1
    expected = consecutive_timeline(preset, n, poll=True)
    assert expected[-1] == "block warnings_exhausted"
    assert timeline(run(preset, [SNAPSHOT] * n)) == expected


def test_worker_snapshot_fifteen_times_exhausts_warnings_on_the_fifteenth() -> None:
    result = run("spacebot-worker", [SNAPSHOT] * 15)
    assert timeline(result) == ["allow"] * 11 + ["block consecutive_warning"] * 3 + ["block warnings_exhausted"]
    assert verdict_data(result, 14)["warnings"] == 4


def test_a_different_call_resets_the_warning_count() -> None:
    # 14 snapshots use 3 warnings; after a click a fresh run of 15 snapshots gets its own 3 warnings
    result = run("spacebot-worker", [SNAPSHOT] * 14 + [CLICK3] + [SNAPSHOT] * 15)
    expected = ["allow"] * 11 + ["block consecutive_warning"] * 3 + ["allow"]
    expected += ["allow"] * 11 + ["block consecutive_warning"] * 3 + ["block warnings_exhausted"]
    assert timeline(result) == expected


def test_warn_action_warn_lets_the_call_run() -> None:
    # under default a warned call runs, so its result is recorded: the same text 4 times poisons it
    # (at PRESETS.md's threshold 4; default's own is 6, docs/presets.md)
    result = run("default", [call("shell", "built", command="make")] * 5, outcome_block_threshold=4)
    assert timeline(result) == ["allow", "allow", "warn consecutive_warning", "warn consecutive_warning",
                                "block identical_outcome"]


def test_warn_action_block_skips_the_call() -> None:
    result = run("spacebot-worker", [BUILD] * 4)
    assert [s.action for s in result.steps] == ["allow", "allow", "allow", "block"]


# ---- poll calls -------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_observation_calls_get_the_poll_multiplier_per_preset(preset: str) -> None:
    p = TABLE[preset]
    n = p["warn"] * p["poll"]
    assert timeline(run(preset, [TAB_LIST] * n)) == ["allow"] * (n - 1) + [f"{p['warn_action']} consecutive_warning"]


@pytest.mark.parametrize("command", ["git status", "sleep 5 && WAIT", "tail -f log", "ps aux", "docker ps -a",
                                     "kubectl get pods", "jobs", "pgrep node", "watch ls", "poll.sh"])
def test_worker_short_shell_command_with_a_poll_word_is_a_poll_call(command: str) -> None:
    steps = [call("shell", command=command)] * 12
    assert timeline(run("spacebot-worker", steps)) == ["allow"] * 11 + ["block consecutive_warning"]


def test_worker_shell_command_without_a_poll_word_is_not_a_poll_call() -> None:
    # "ps" without the opening quote before it is not `"ps `: "grep ps x" is an ordinary command
    steps = [call("shell", command="grep ps x")] * 4
    assert timeline(run("spacebot-worker", steps)) == ["allow"] * 3 + ["block consecutive_warning"]


def test_worker_poll_word_only_counts_under_two_hundred_characters_of_argument_text() -> None:
    # argument text is the compact JSON {"command":"..."}: 14 characters around the command
    short = "git status " + "x" * (199 - 14 - 11)
    long = "git status " + "x" * (200 - 14 - 11)
    assert len(ToolCall.of("shell", {"command": short}).ordered) == 199
    assert len(ToolCall.of("shell", {"command": long}).ordered) == 200
    assert timeline(run("spacebot-worker", [call("shell", command=short)] * 4)) == ["allow"] * 4
    assert timeline(run("spacebot-worker", [call("shell", command=long)] * 4)) == ["allow"] * 3 + [
        "block consecutive_warning"]


def test_poll_words_apply_only_to_the_poll_shell_tools() -> None:
    steps = [call("bash", command="git status")] * 4
    assert timeline(run("spacebot-worker", steps)) == ["allow"] * 3 + ["block consecutive_warning"]
    steps = [call("shell", command="git status")] * 3
    assert timeline(run("default", steps)) == ["allow", "allow", "warn consecutive_warning"]


# ---- identity ---------------------------------------------------------------------------------
def test_ordered_identity_distinguishes_key_order() -> None:
    ab, ba = call("fill", a=1, b=2), {"tool": "fill", "args": {"b": 2, "a": 1}}
    # worker: {a,b} and {b,a} are two identities, so the count restarts at the 4th call
    assert timeline(run("spacebot-worker", [ab, ab, ab, ba])) == ["allow"] * 4
    # default: one identity, the 3rd call warns and the 4th too
    assert timeline(run("default", [ab, ab, ab, ba])) == ["allow", "allow"] + ["warn consecutive_warning"] * 2


def test_ordered_identity_distinguishes_one_point_zero_from_one() -> None:
    one, one_float = call("scroll", amount=1), call("scroll", amount=1.0)
    assert timeline(run("spacebot-worker", [one, one, one, one_float])) == ["allow"] * 4
    assert timeline(run("default", [one, one, one_float])) == ["allow", "allow", "warn consecutive_warning"]


def test_identity_setting_overrides_the_preset() -> None:
    ab, ba = call("fill", a=1, b=2), {"tool": "fill", "args": {"b": 2, "a": 1}}
    assert timeline(run("spacebot-worker", [ab, ab, ab, ba], identity="canonical")) == [
        "allow"] * 3 + ["block consecutive_warning"]


# ---- poisoned outcomes ------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_same_outcome_poisons_the_identity_through_interleaving(preset: str) -> None:
    threshold = TABLE[preset]["outcome"]
    click = call("browser_click", "Element not clickable", index=3)
    steps = [click, SNAPSHOT] * threshold + [click]
    expected = ["allow"] * (2 * threshold) + ["block identical_outcome"]
    result = run(preset, steps)
    assert timeline(result) == expected
    assert verdict_data(result, 2 * threshold)["outcome_count"] == threshold


def test_poisoning_is_checked_before_the_consecutive_count() -> None:
    # default: a poisoned call's 5th identical call would be consecutive_block; poisoning wins
    result = run("default", [call("shell", "same", command="make")] * 5, outcome_block_threshold=4)
    assert timeline(result)[4] == "block identical_outcome"


def test_a_poisoned_call_does_not_touch_the_consecutive_count() -> None:
    poisoned = call("shell", "same", command="make")
    steps = [poisoned] * 4 + [BUILD, poisoned, BUILD, poisoned, BUILD]
    # BUILD, (poisoned: blocked, not counted), BUILD, ..., BUILD: the 3rd BUILD in a row warns
    assert timeline(run("default", steps, outcome_block_threshold=4))[4:] == [
        "allow", "block identical_outcome", "allow", "block identical_outcome", "warn consecutive_warning"]


def test_blocked_calls_record_no_outcome() -> None:
    same = call("shell", "same", command="deploy")
    # worker: calls 1-3 run (3 outcomes), 4-6 are blocked warnings (none); a 4th run after a break poisons
    steps = [same] * 6 + [SNAPSHOT, same, SNAPSHOT, same]
    expected = ["allow"] * 3 + ["block consecutive_warning"] * 3 + ["allow", "allow", "allow",
                                                                     "block identical_outcome"]
    assert timeline(run("spacebot-worker", steps)) == expected


def test_calls_without_result_text_record_no_outcome() -> None:
    steps = [call("browser_click", index=3), SNAPSHOT] * 6
    assert timeline(run("spacebot-worker", steps)) == ["allow"] * 12


def test_failed_calls_count_their_error_as_the_outcome() -> None:
    failing = {"tool": "browser_click", "args": {"index": 9}, "result": {"error": "Element not found"}}
    steps = [failing, SNAPSHOT] * 4 + [failing]
    assert timeline(run("spacebot-worker", steps))[-1] == "block identical_outcome"


def test_different_results_are_different_outcomes() -> None:
    steps = []
    for i in range(5):
        steps += [call("browser_click", f"page {i}", index=3), SNAPSHOT]
    assert timeline(run("spacebot-worker", steps)) == ["allow"] * 10


def test_outcome_compares_the_first_thousand_bytes_of_utf8() -> None:
    # "é" is two bytes: 500 of them fill the 1,000-byte prefix, so what follows is not compared
    steps = []
    for tail in "abcd":
        steps += [call("browser_click", "é" * 500 + tail, index=3), SNAPSHOT]
    assert timeline(run("spacebot-worker", [*steps, call("browser_click", index=3)]))[-1] == "block identical_outcome"
    steps = []
    for tail in "abcd":
        steps += [call("browser_click", "é" * 499 + tail, index=3), SNAPSHOT]
    assert timeline(run("spacebot-worker", [*steps, call("browser_click", index=3)]))[-1] == "allow"


def test_outcome_threshold_zero_turns_poisoning_off() -> None:
    click = call("browser_click", "same", index=3)
    steps = [click, SNAPSHOT] * 6
    assert timeline(run("spacebot-worker", steps, outcome_block_threshold=0)) == ["allow"] * 12


# ---- ping-pong --------------------------------------------------------------------------------
A = call("browser_click", index=1)
B = call("browser_click", index=2)
C = call("browser_click", index=3)


def test_worker_ping_pong_period_two_warns_then_blocks_at_four_repeats() -> None:
    result = run("spacebot-worker", [A, B] * 5)
    # 6 calls = 3 repeats (warning, blocked: warn_action block), 8 calls = 4 repeats = min repeats
    assert timeline(result) == ["allow"] * 5 + ["block ping_pong_warning"] * 2 + ["block ping_pong"] * 3
    assert_figures(verdict_data(result, 7), period=2, repeats=4)
    assert verdict_data(result, 5)["repeats"] == 3


def test_worker_ping_pong_period_three() -> None:
    result = run("spacebot-worker", [A, B, C] * 4)
    assert timeline(result) == ["allow"] * 8 + ["block ping_pong_warning"] * 3 + ["block ping_pong"]
    assert verdict_data(result, 11)["period"] == 3
    assert verdict_data(result, 11)["repeats"] == 4


@pytest.mark.parametrize("preset", ["spacebot-branch", "spacebot-channel", "default"])
def test_ping_pong_blocks_at_detection_when_min_repeats_is_three(preset: str) -> None:
    assert timeline(run(preset, [A, B] * 3)) == ["allow"] * 5 + ["block ping_pong"]
    assert timeline(run(preset, [A, B, C] * 3)) == ["allow"] * 8 + ["block ping_pong"]


def test_ping_pong_period_three_needs_not_all_equal_but_allows_a_repeated_member() -> None:
    # A B A, A B A, A B A: period 3, not all equal (its period-2 view fails on the A A pairs)
    steps = [A, B, A] * 3
    assert timeline(run("spacebot-branch", steps))[-1] == "block ping_pong"


def test_blocked_calls_count_in_the_ring() -> None:
    # calls 6 and 7 are blocked warnings; only if they are in the ring does call 8 see 4 repeats
    result = run("spacebot-worker", [A, B] * 4)
    assert timeline(result)[5:] == ["block ping_pong_warning", "block ping_pong_warning", "block ping_pong"]


def test_ping_pong_warnings_survive_the_consecutive_reset_and_run_out() -> None:
    # each round A B A B A B gives B one ping-pong warning; a C between rounds breaks the pattern.
    # Every call changes identity (resetting consecutive counts), yet B's ping-pong warnings add up:
    # worker allows 3, so the 4th round's detection is allowed.
    round_ = [A, B] * 3
    steps = [*round_, OTHER, *round_, OTHER, *round_, OTHER, *round_]
    warned = ["allow"] * 5 + ["block ping_pong_warning"]
    assert timeline(run("spacebot-worker", steps)) == [*warned, "allow", *warned, "allow", *warned, "allow",
                                                      *(["allow"] * 6)]


def test_ping_pong_warning_takes_the_warn_action() -> None:
    # default's min repeats equal its detection repeats; raised to 4, detection at 3 repeats warns
    # with default's warn_action `warn`: the call runs
    result = run("default", [A, B] * 4, ping_pong_min_repeats=4)
    assert timeline(result) == ["allow"] * 5 + ["warn ping_pong_warning"] * 2 + ["block ping_pong"]
    assert [s.action for s in result.steps][5:7] == ["warn", "warn"]


def test_observation_action_alternation_is_exempt() -> None:
    for preset in PRESETS:
        assert timeline(run(preset, [SNAPSHOT, CLICK3] * 10)) == ["allow"] * 20


def test_observation_observation_alternation_is_a_ping_pong() -> None:
    assert timeline(run("spacebot-branch", [SNAPSHOT, TAB_LIST] * 3)) == ["allow"] * 5 + ["block ping_pong"]


def test_period_three_is_exempt_when_any_pair_mixes_an_observation() -> None:
    # A–B and C–A pairs: snapshot next to clicks
    assert timeline(run("spacebot-branch", [SNAPSHOT, A, B] * 4)) == ["allow"] * 12
    # snapshot, tab list, click: the snapshot–tab list pair is two observations, tab list–click mixes
    assert timeline(run("spacebot-branch", [SNAPSHOT, TAB_LIST, A] * 4)) == ["allow"] * 12


def test_period_three_of_observations_only_is_a_ping_pong() -> None:
    # default's tool table has more observation tools
    steps = [SNAPSHOT, TAB_LIST, {"tool": "read_page"}] * 3
    assert timeline(run("default", steps)) == ["allow"] * 8 + ["block ping_pong"]


def test_ping_pong_off() -> None:
    assert timeline(run("spacebot-branch", [A, B] * 5, ping_pong=False)) == ["allow"] * 10


def test_ping_pong_message_and_figures() -> None:
    result = run("spacebot-branch", [A, B] * 3)
    (verdict,) = result.steps[5].verdicts
    assert verdict.message.startswith("Blocked:")
    assert_figures(verdict.data, period=2, repeats=3, tool="browser_click", tools=["browser_click", "browser_click"])


# ---- user messages ----------------------------------------------------------------------------
def test_user_message_resets_the_consecutive_count() -> None:
    result = run("spacebot-worker", [BUILD] * 3 + [USER] + [BUILD] * 4)
    assert timeline(result) == ["allow"] * 3 + ["allow"] + ["allow"] * 3 + ["block consecutive_warning"]


def test_user_message_resets_poisoning() -> None:
    click = call("browser_click", "same", index=3)
    result = run("spacebot-worker", [click, SNAPSHOT] * 4 + [USER, click])
    assert timeline(result)[-1] == "allow"


def test_user_message_resets_outcome_counts() -> None:
    # three same outcomes before the prompt and one after stay under worker's 4: the next click runs
    click = call("browser_click", "same", index=3)
    result = run("spacebot-worker", [click, SNAPSHOT] * 3 + [USER] + [click, SNAPSHOT] * 2)
    assert timeline(result) == ["allow"] * 11


def test_user_message_resets_the_ring() -> None:
    result = run("spacebot-branch", [A, B, A, B, A, USER, B])
    assert timeline(result) == ["allow"] * 7


def test_user_message_resets_ping_pong_warnings() -> None:
    round_ = [A, B] * 3
    steps = [*round_, OTHER, *round_, OTHER, *round_, OTHER, USER, *round_]
    warned = ["allow"] * 5 + ["block ping_pong_warning"]
    assert timeline(run("spacebot-worker", steps))[-6:] == warned


def test_assistant_and_system_messages_do_not_reset() -> None:
    for role in ("assistant", "system"):
        steps = [BUILD] * 3 + [{"message": {"role": role, "text": "hm"}}, BUILD]
        assert timeline(run("spacebot-worker", steps))[-1] == "block consecutive_warning"


def test_reset_on_user_message_off() -> None:
    steps = [BUILD] * 3 + [USER, BUILD]
    assert timeline(run("spacebot-worker", steps, reset_on_user_message=False))[-1] == "block consecutive_warning"


# ---- the Guard API directly -------------------------------------------------------------------
def test_guard_api_counts_blocked_calls_and_resets_at_a_user_message() -> None:
    guard = Guard(resolve_policy({"preset": "spacebot-channel", **OTHER_ENGINES_OFF}))
    build = ToolCall.of("shell", {"command": "make build"})
    actions = []
    for _ in range(4):
        decision = guard.before_call(build)
        actions.append(decision.action)
        guard.after_call(build, ToolResult() if decision.runs else None, decision)
        guard.end_turn()
    # channel: warn 2 (blocked), block 4
    assert actions == ["allow", "block", "block", "block"]
    guard.message(Message("user", "new prompt"))
    assert guard.before_call(build).action == "allow"


# ---- Roo and Goose: no warning stage, reset after a block, exempt calls (PRESETS.md: roo, goose) --------
ROO_SCROLL: dict[str, Any] = {"tool": "browser_action", "args": {"action": "scroll_down"}}
READ: dict[str, Any] = {"tool": "read_file", "args": {"path": "a.ts"}}


def test_roo_blocks_the_fourth_and_forgets() -> None:
    assert timeline(run("roo", [READ] * 8)) == (["allow"] * 3 + ["block consecutive_block"]) * 2
    # without the reset every further identical call is blocked (as Goose does)
    assert timeline(run("roo", [READ] * 6, reset_after_block=False)) == ["allow"] * 3 + ["block consecutive_block"] * 3


def test_reset_after_block_applies_to_any_preset() -> None:
    # default: warn 3 (runs), block 5; with the reset, the 6th identical call counts 1 again
    result = run("default", [call("click", index=1)] * 7, reset_after_block=True, ping_pong=False)
    assert timeline(result) == ["allow", "allow", "warn consecutive_warning", "warn consecutive_warning",
                                "block consecutive_block", "allow", "allow"]


def test_roo_scrolls_are_invisible_to_the_count() -> None:
    assert timeline(run("roo", [READ, ROO_SCROLL, READ, READ, READ])) == ["allow"] * 4 + ["block consecutive_block"]
    # an exempt call is never counted itself, however often it comes
    assert timeline(run("roo", [ROO_SCROLL] * 10)) == ["allow"] * 10
    # the exemption needs the argument: a click is a call like any other and breaks the run of reads
    click = {"tool": "browser_action", "args": {"action": "click", "coordinate": "1,1"}}
    assert timeline(run("roo", [READ, READ, READ, click, READ])) == ["allow"] * 5


def test_exempt_rules_without_a_condition_cover_every_call_of_the_tool() -> None:
    steps = [READ, call("wait", seconds=1), READ, call("wait", seconds=2), READ, READ]
    assert timeline(run("roo", steps)) == ["allow"] * 5 + ["allow"]
    assert timeline(run("roo", steps, exempt=[{"tool": "wait"}])) == ["allow"] * 5 + ["block consecutive_block"]


def test_no_warning_stage_when_warn_at_is_null() -> None:
    result = run("roo", [READ] * 4)
    assert timeline(result)[:3] == ["allow"] * 3
    assert verdict_data(result, 3)["threshold"] == 4


def test_roo_and_goose_keep_counting_across_user_messages() -> None:
    assert timeline(run("roo", [READ, READ, READ, USER, READ]))[-1] == "block consecutive_block"
    assert timeline(run("goose", [READ, READ, USER, READ]))[-1] == "block consecutive_block"
    # the same with the reset switched back on: the message starts the count again
    assert timeline(run("goose", [READ, READ, USER, READ], reset_on_user_message=True))[-1] == "allow"


def test_goose_denies_from_the_third_and_keeps_denying() -> None:
    result = run("goose", [READ] * 5)
    assert timeline(result) == ["allow", "allow"] + ["block consecutive_block"] * 3
    assert [verdict_data(result, i)["count"] for i in (2, 3, 4)] == [3, 4, 5]
    assert timeline(run("goose", [READ] * 5, block_at=None)) == ["allow"] * 5


def test_block_messages_are_each_systems_own() -> None:
    roo = run("roo", [READ] * 4).steps[3].verdicts[0].message
    assert roo == ("Roo appears to be stuck in a loop, attempting the same action (read_file) repeatedly. "
                   "This might indicate a problem with its current strategy.")
    goose = run("goose", [READ] * 3).steps[2].verdicts[0].message
    assert goose.startswith("Tool 'read_file' has exceeded maximum repetitions")


# ---- the corpus -------------------------------------------------------------------------------
CORPUS = sorted((Path(__file__).parents[2] / "traces" / "loop_guard").glob("*.yaml"))


def test_corpus_has_at_least_twenty_two_traces() -> None:
    assert len(CORPUS) >= 22


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_corpus_trace_meets_its_expectations(path: Path) -> None:
    trace = load(path)
    assert trace.name.startswith("loop_guard-")
    assert not check(replay(trace))


# ---- stop after ignored blocks (default) ------------------------------------------------------------
def test_stop_at_ends_a_run_that_repeats_a_blocked_call() -> None:
    # default: warn 3 and 4, block 5 to 7 (the calls do not run), stop at the 8th identical call in a row
    steps = [call("bash", "1 failed", command="pytest -x")] * 9
    result = run("default", steps)
    assert timeline(result) == (["allow"] * 2 + ["warn consecutive_warning"] * 2 + ["block consecutive_block"] * 3
                                + ["stop consecutive_stop", "allow"])
    assert result.steps[8].action == "not_reached"
    assert (result.outcome, result.stopped_at, result.stopped_by) == ("stopped", 7, "loop_guard")
    v = next(v for v in result.steps[7].verdicts if v.engine == "loop_guard")
    assert v.data == {"tool": "bash", "count": 8, "threshold": 8, "poll": False}
    assert "called 8 times in a row" in v.message and "after being blocked" in v.message
    # another call between resets the count; the published presets before issue 24 have none
    assert "stop consecutive_stop" not in timeline(run("default", [*steps[:7], SNAPSHOT, *steps[:3]]))
    # without a block stage (issue 24, Cline and OpenCode) the 8th call itself stops, no block first
    assert timeline(run("default", steps, block_at=None))[5:8] == ["block warnings_exhausted"] * 2 + [
        "stop consecutive_stop"]
    for preset in ("spacebot-worker", "spacebot-branch", "spacebot-channel"):
        assert resolve_policy(preset).settings("loop_guard").stop_at is None


def test_identical_outcome_blocks_name_each_calls_own_tool_and_count() -> None:
    # two poisoned calls retried in turn: each block names its own tool and count (the last block is reused
    # only for the same tool and count)
    from pytest_loopguard.engines.loop_guard import LoopGuard
    from pytest_loopguard.runtime._policy import Policy

    settings = LoopGuard.Settings(outcome_block_threshold=2, ping_pong_periods=())
    guard = Guard(Policy("outcomes", {"loop_guard": settings}))
    a, b = ToolCall.of("fetch", {"url": "a"}), ToolCall.of("lookup", {"q": "b"})
    for call in (a, b) * 2:  # two identical outcomes each poison both
        guard.start_turn([call])
        before = guard.before_call(call)
        guard.after_call(call, ToolResult(text="same") if before.runs else None, before)
        guard.end_turn()
    blocks = []
    for call in (a, a, b, a):
        guard.start_turn([call])
        before = guard.before_call(call)
        blocks.append([(v.reason, v.data["tool"], v.data["outcome_count"]) for v in before.verdicts
                       if v.reason == "loop_guard.identical_outcome"])
        guard.after_call(call, None, before)
        guard.end_turn()
    assert blocks == [[("loop_guard.identical_outcome", "fetch", 2)]] * 2 + [
        [("loop_guard.identical_outcome", "lookup", 2)], [("loop_guard.identical_outcome", "fetch", 2)]]


@pytest.mark.parametrize("warn_at", [6, 9])
def test_a_warning_past_the_block_is_refused_in_one_line(warn_at: int) -> None:
    # issue 26: `warn_at: 6` on `default` (block_at 5) was accepted and its warning stage silently never came
    with pytest.raises(PolicyError) as info:
        resolve_policy({"preset": "default", "loop_guard": {"warn_at": warn_at}})
    assert info.value.field == "loop_guard.warn_at"
    assert f"expected at most block_at (5), got {warn_at}" in str(info.value)
    assert resolve_policy({"preset": "default", "loop_guard": {"warn_at": 6, "block_at": None}})  # no block: fine
