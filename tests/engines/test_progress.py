"""loop_guard's judgement of what repeated calls achieved (engines/_progress.py): result-aware streaks, waits, poll
budgets, declared repetition in the tool table, and the unchanged output of a check across edits.

Expected timelines follow docs/engines.md ("What a repeated call achieved") and default's numbers in
docs/presets.md: consecutive warn 3 / block 5 / stop 8, a streak whose results change warns at 6 and blocks at
100, a wait is 60 s, a declared poll warns after 10 unchanged results and blocks at 20, a declared poll or paged
tool warns at 100 calls, and a check's 3rd unchanged output across edits is warned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_loopguard import PolicyError, ReplayResult, replay, resolve_policy
from pytest_loopguard.io._format import trace_from_mapping

ONLY_LOOP_GUARD = {"read_tracker": False, "failure_tracker": False, "budget": False, "dedup": False,
                   "context": False}


def run(steps: Sequence[Mapping[str, Any]], *, preset: str = "default", tools: Sequence[Mapping[str, Any]] = (),
        **overrides: Any) -> ReplayResult:
    policy: dict[str, Any] = {"preset": preset, **ONLY_LOOP_GUARD}
    if overrides:
        policy["loop_guard"] = overrides
    if tools:
        policy["tools"] = list(tools)
    trace = trace_from_mapping({"loopguard": 1, "name": "progress-unit", "policy": policy, "steps": list(steps)})
    return replay(trace)


def timeline(result: ReplayResult) -> list[str]:
    """Per tool step: `allow`, or the loop guard's first verdict as `action reason` (engine prefix dropped)."""
    out = []
    for step, got in zip(result.trace.steps, result.steps, strict=True):
        if step.kind != "tool":
            continue
        verdicts = [v for v in got.verdicts if v.engine == "loop_guard"]
        out.append("allow" if not verdicts else f"{verdicts[0].action} {verdicts[0].reason.split('.', 1)[1]}")
    return out


def poll(text: str, t: int | None = None, tool: str = "shell", **args: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": tool, "args": args or {"command": "tail -n 5 build.log"}, "result": {"text": text}}
    if t is not None:
        step["t"] = t
    return step


A = "allow"
WARN, BLOCK, STOP = "warn consecutive_warning", "block consecutive_block", "stop consecutive_stop"


def test_identical_results_are_repetition() -> None:
    assert timeline(run([poll("same")] * 8)) == [A, A, WARN, WARN, BLOCK, BLOCK, BLOCK, STOP]


def test_a_changed_result_is_progress_with_its_own_bound() -> None:
    # every result differs: never the consecutive rule; the progress budget warns once at the 6th call
    got = timeline(run([poll(f"line {i}") for i in range(12)]))
    assert got == [A] * 5 + ["warn poll_budget_warning"] + [A] * 6
    # ... and blocks from progress_block_at on (set low here to see it)
    got = timeline(run([poll(f"line {i}") for i in range(5)], progress_block_at=4))
    assert got == [A, A, A, "block poll_budget", "block poll_budget"]


def test_published_presets_ignore_results() -> None:
    # roo counts identical calls whatever they return: block at 4
    got = timeline(run([poll(f"line {i}") for i in range(4)], preset="roo"))
    assert got == [A, A, A, "block consecutive_block"]


def test_after_progress_the_unchanged_count_restarts_at_the_poll_thresholds() -> None:
    # results change at the 2nd call, then stay: the streak is a poll, so the unchanged results are held to
    # warn 3 x 3 = 9 counted from the call that changed (call 2)
    steps = [poll("a"), poll("b")] + [poll("b")] * 8
    got = timeline(run(steps, progress_warn_at=None, outcome_block_threshold=0))
    assert got == [A] * 9 + [WARN]
    # outcome poisoning still counts the same result for the same call: the 6th "b" poisons it
    got = timeline(run(steps, progress_warn_at=None))
    assert got == [A] * 7 + ["block identical_outcome"] * 3


def test_a_wait_is_progress_and_the_time_budget_bounds_it() -> None:
    # the same result every 5 minutes: waits (poll_gap_ms 60 s), not repetition
    steps = [poll("running", t=i * 300_000) for i in range(7)]
    assert timeline(run(steps)) == [A] * 6 + ["warn poll_budget_warning"]  # the 7th: 30 minutes in
    # default warns at 30 minutes of polling and blocks at 60
    steps = [poll("running", t=i * 600_000) for i in range(8)]
    assert timeline(run(steps)) == [A, A, A, "warn poll_budget_warning", A, A, "block poll_budget",
                                    "block poll_budget"]
    # back to back (10 s apart) the same result is repetition again
    steps = [poll("running", t=i * 10_000) for i in range(4)]
    assert timeline(run(steps)) == [A, A, WARN, WARN]


def test_waits_do_not_count_towards_the_calls_budget() -> None:
    steps = [poll(f"epoch {i}", t=i * 120_000) for i in range(9)]
    assert timeline(run(steps)) == [A] * 9


def test_declared_poll_is_held_to_unchanged_results() -> None:
    tools = [{"tool": "process", "when": {"action": "log"}, "repeat": "poll"}]
    step = poll("0/412 hosts", tool="process", action="log", sessionId="s1")
    got = timeline(run([step] * 21, tools=tools))
    assert got == [A] * 9 + ["warn poll_budget_warning"] + [A] * 9 + ["block poll_budget", "block poll_budget"]
    # other arguments of the tool are not declared: the consecutive rule
    other = poll("ok", tool="process", action="kill", sessionId="s1")
    assert timeline(run([other] * 3, tools=tools)) == [A, A, WARN]


def test_declared_paged_has_the_larger_budget() -> None:
    tools = [{"tool": "read_output", "repeat": "paged"}]
    steps = [poll(f"chunk {i}", tool="read_output", session="pty-1") for i in range(101)]
    got = timeline(run(steps, tools=tools))
    assert got == [A] * 99 + ["warn poll_budget_warning", A]
    # a paged tool's unchanged page is still repetition
    assert timeline(run([poll("same", tool="read_output", session="pty-1")] * 3, tools=tools)) == [A, A, WARN]


def test_declared_exempt_is_invisible() -> None:
    tools = [{"tool": "gdb", "when": {"command": "next"}, "repeat": "exempt"}]
    step = poll("42\t  total += x;", tool="gdb", command="next")
    assert timeline(run([step] * 10, tools=tools)) == [A] * 10
    # declarations take effect in any preset whose table has them (published presets declare none)
    assert timeline(run([step] * 5, tools=tools, preset="roo")) == [A] * 5


def test_repeat_key_is_checked() -> None:
    with pytest.raises(PolicyError, match="unknown repeat 'sometimes'"):
        resolve_policy({"preset": "default", "tools": [{"tool": "x", "repeat": "sometimes"}]})
    policy = resolve_policy({"preset": "default", "tools": [{"tool": "x", "repeat": "poll"}]})
    assert policy.tools[0].to_dict() == {"tool": "x", "repeat": "poll"}


def edit(i: int) -> dict[str, Any]:
    return {"tool": "str_replace_editor",
            "args": {"command": "str_replace", "path": "/repo/a.py", "old_str": f"x{i}", "new_str": f"y{i}"},
            "result": {"text": "The file /repo/a.py has been edited."}}


CHECK = {"tool": "bash", "args": {"command": "python -m pytest -x tests/test_a.py"}}


def check(text: str) -> dict[str, Any]:
    return {**CHECK, "result": {"text": text}}


def test_the_same_output_across_edits_is_warned() -> None:
    steps = [check("1 failed")]
    for i in range(4):
        steps += [edit(i), check("1 failed")]
    result = run(steps)
    got = timeline(result)
    assert got[::2] == [A, A, "warn unchanged_output", "warn unchanged_output", "warn unchanged_output"]
    verdict = next(v for s in result.steps for v in s.verdicts if v.reason == "loop_guard.unchanged_output")
    assert verdict.data["command"] == "python -m pytest -x tests/test_a.py"
    assert verdict.data["runs"] == 3 and verdict.data["edits"] == 2
    assert "same output 3 times, across 2 edits" in verdict.message


def test_a_changing_output_across_edits_is_the_healthy_cycle() -> None:
    steps = [check("3 failed")]
    for i in range(4):
        steps += [edit(i), check(f"{2 - i if i < 3 else 0} failed")]
    assert timeline(run(steps)) == [A] * 9


def test_the_same_text_from_a_run_that_now_fails_or_errs_is_another_output() -> None:
    # a check's output is its text, its error and whether it failed: the same text changing any of the other two
    # starts the count over, and only the three together count as unchanged
    outputs = [{"text": "1 failed"}, {"text": "1 failed", "ok": False}, {"text": "1 failed", "ok": False},
               {"text": "1 failed", "ok": False, "error": "exit status 1"}, {"text": "1 failed"}]
    steps = [{**CHECK, "result": outputs[0]}]
    for i, output in enumerate(outputs[1:]):
        steps += [edit(i), {**CHECK, "result": output}]
    assert timeline(run(steps))[::2] == [A] * 5
    steps += [edit(4), {**CHECK, "result": outputs[-1]}, edit(5), {**CHECK, "result": outputs[-1]}]
    assert timeline(run(steps))[::2] == [A] * 6 + ["warn unchanged_output"]


def test_no_edit_between_runs_is_not_counted() -> None:
    # back to back the consecutive rule speaks (warn at 3), not the unchanged-output rule
    assert timeline(run([check("1 failed")] * 3)) == [A, A, WARN]
    # a failed edit changes nothing
    failed_edit = {**edit(0), "result": {"ok": False, "error": "No replacement was performed"}}
    steps = [check("1 failed"), failed_edit, check("1 failed"), failed_edit, check("1 failed")]
    assert timeline(run(steps)) == [A] * 5


def test_reads_are_not_checks() -> None:
    read = {"tool": "bash", "args": {"command": "cat src/a.py"}, "result": {"text": "x = 1"}}
    steps = [read]
    for i in range(4):
        steps += [edit(i), read]
    assert timeline(run(steps)) == [A] * 9


def test_settings_are_checked() -> None:
    with pytest.raises(PolicyError, match="unchanged_output_warn_at"):
        resolve_policy({"preset": "default", "loop_guard": {"unchanged_output_warn_at": 1}})
    with pytest.raises(PolicyError, match="poll_gap_ms"):
        resolve_policy({"preset": "default", "loop_guard": {"poll_gap_ms": 0}})
