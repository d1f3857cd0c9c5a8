"""`--loopguard-update`: expectations rewritten to the observed verdicts, like snapshot testing."""

from __future__ import annotations

import difflib
import json

import pytest

from pytest_loopguard import load, replay
from pytest_loopguard.core._model import RunExpect, StepExpect
from pytest_loopguard.io._format import trace_from_mapping
from pytest_loopguard.io._golden import observed_trace

pytest_plugins = ["pytester"]

# Under `default`, identical calls: the 3rd and 4th warn, the 5th blocks (warn 3 / block 5).
WRONG = """\
loopguard: 1
name: update-wrong
policy: default
steps:
  - {tool: browser_click, args: {index: 1}, expect: warn}
  - {tool: browser_click, args: {index: 1}}
  - {tool: browser_click, args: {index: 1}, expect: allow}
  - {tool: browser_click, args: {index: 1}, expect: {action: block, reason: loop_guard.consecutive_block}}
  - {tool: browser_click, args: {index: 1}}
expect: {outcome: completed}
"""

RIGHT = """\
# comments survive: a passing trace is not rewritten
loopguard: 1
name: update-right
policy: default
steps:
  - {tool: grep, args: {q: x}}
expect: {outcome: incomplete}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "wrong.yaml").write_text(WRONG, encoding="utf-8")
    (pytester.path / "traces" / "right.yaml").write_text(RIGHT, encoding="utf-8")
    return pytester


def test_update_rewrites_only_the_wrong_expectations_and_the_traces_pass_afterwards(project: pytest.Pytester) -> None:
    right = project.path / "traces" / "right.yaml"
    before = right.stat().st_mtime_ns
    result = project.runpytest("--loopguard-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "loopguard: updated 1 trace file:",
        "  traces/wrong.yaml",
        "    update-wrong: step 0 expect: warn -> removed",
        "    update-wrong: step 2 expect: allow -> warn",
        "    update-wrong: step 3 expect: {action: block, reason: loop_guard.consecutive_block} -> "
        "{action: warn, engine: loop_guard, reason: loop_guard.consecutive_warning}",
        "    update-wrong: expect.outcome: completed -> incomplete",
    ])
    trace = load(project.path / "traces" / "wrong.yaml")
    assert [s.expect for s in trace.steps] == [
        None,  # observed allow: the wrong `warn` is dropped
        None,
        StepExpect("warn"),  # a bare action stays a bare action
        StepExpect("warn", engine="loop_guard", reason="loop_guard.consecutive_warning", short=False),
        None,  # not checked (the trace is not strict), so not written: only what was wrong changes
    ]
    assert trace.expect == RunExpect(outcome="incomplete")  # the field that was wrong, no new ones
    assert right.read_text(encoding="utf-8") == RIGHT and right.stat().st_mtime_ns == before  # never touched
    project.runpytest().assert_outcomes(passed=2)


def test_without_update_nothing_is_written(project: pytest.Pytester) -> None:
    project.runpytest().assert_outcomes(passed=1, failed=1)
    assert (project.path / "traces" / "wrong.yaml").read_text(encoding="utf-8") == WRONG


def test_update_fills_in_a_trace_without_expectations(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    path = pytester.path / "traces" / "rec.jsonl"
    lines = [{"loopguard": 1, "name": "update-jsonl", "policy": "default"}] + [{"tool": "grep", "args": {"q": 1}}] * 3
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    pytester.runpytest("--loopguard-update").assert_outcomes(passed=1)
    trace = load(path)
    # No expectation was written: the new one names the deciding verdict.
    warning = StepExpect("warn", engine="loop_guard", reason="loop_guard.consecutive_warning", short=False)
    assert [s.expect for s in trace.steps] == [None, None, warning]
    assert trace.expect == RunExpect(outcome="incomplete", counts={"warn": 1})


def test_observed_trace_records_a_stop() -> None:
    # failure_tracker under default: a turn whose calls all failed counts; at 3 the agent is told to finish
    # (warn, force_done), and the next non-done call stops the run (PRESETS.md's 3; default's own is 12).
    steps = [{"tool": "browser_click", "args": {"index": i}, "result": {"error": "gone"}} for i in range(4)]
    policy = {"preset": "default", "failure_tracker": {"max_failures": 3}}
    trace = trace_from_mapping({"loopguard": 1, "name": "u", "policy": policy, "steps": steps})
    updated = observed_trace(trace, replay(trace))
    assert updated.expect == RunExpect(
        outcome="stopped",
        stopped_by="failure_tracker",
        stopped_at=3,
        counts={"warn": 1, "stop": 1},
        has_stopped_by=True,
        has_stopped_at=True,
    )
    assert [s.expect.action if s.expect else None for s in updated.steps] == [None, None, "warn", "stop"]


# Two 529 errors under default: retried (context.transient), then the scripted answer completes the run.
# The step expectations are deliberately wrong (the errors are recorded at steps 1 and 2).
SCENARIO = """\
loopguard: 1
name: update-scenario
mode: simulate
policy: default
max_turns: 10
agent:
  provider: anthropic
  script:
    - {error: "529", repeat: 2}
    - {answer: "Done."}
x-expect-steps:
  0: retry
  2: {action: fail, reason: context.transient_exhausted}
expect: {outcome: failed}
"""


def test_update_rewrites_a_scenarios_recorded_step_expectations(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    path = pytester.path / "traces" / "scenario.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    pytester.runpytest().assert_outcomes(failed=1)
    pytester.runpytest("--loopguard-update").assert_outcomes(passed=1)
    updated = load(path)
    assert updated.mode == "simulate"
    assert updated.agent == {"provider": "anthropic", "script": [{"error": "529", "repeat": 2}, {"answer": "Done."}]}
    # step 0 (allow) loses its wrong `retry`; step 2's wrong `fail` becomes what happened; step 1 had none
    assert updated.extensions["x-expect-steps"] == {
        2: {"action": "retry", "engine": "context", "reason": "context.transient"},
    }
    assert updated.expect == RunExpect(outcome="completed")
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_malformed_scenario_fails_its_item_in_one_line(pytester: pytest.Pytester) -> None:
    # bad input, like a malformed trace: judged when its file is loaded, which is when the item runs
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    text = "loopguard: 1\nname: sc\nmode: simulate\npolicy: default\nagent: {behaviour: nosuch}\n"
    (pytester.path / "traces" / "s.yaml").write_text(text, encoding="utf-8")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["traces/s.yaml: field 'agent.behaviour': unknown behaviour 'nosuch'*"])
    assert "Traceback" not in result.stdout.str()


def test_update_under_another_policy_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--loopguard-update", "--loopguard-policy", "spacebot")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --loopguard-update records each trace under its own policy*"])
    assert (project.path / "traces" / "wrong.yaml").read_text(encoding="utf-8") == WRONG


def test_update_refuses_a_json_scenario(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    scenario = {
        "loopguard": 1, "name": "json-scenario", "mode": "simulate", "policy": "default", "max_turns": 10,
        "agent": {"provider": "anthropic", "script": [{"error": "529", "repeat": 2}, {"answer": "Done."}]},
        "expect": {"outcome": "failed"},
    }
    text = json.dumps(scenario)
    (pytester.path / "traces" / "s.json").write_text(text, encoding="utf-8")
    result = pytester.runpytest("--loopguard-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["traces/s.json: trace json-scenario: --loopguard-update rewrites scenarios only in YAML files"]
    )
    assert (pytester.path / "traces" / "s.json").read_text(encoding="utf-8") == text


# ---- minimal diffs -----------------------------------------------------------------------------------------
# Two traces in one file, commented, flow-styled and block-styled, a wrapped flow mapping, odd indentation.
# Under default identical calls warn at the 3rd and 4th and block at the 5th (warn 3 / block 5).
COMMENTED = """\
# The corpus owner's notes: keep them.
loopguard: 1
name: commented-first   # first trace
policy: default
steps:
    # reads, then the loop
    - {tool: grep, args: {q: x}}            # fine
    - {tool: grep, args: {q: x}}
    - {tool: grep,
       args: {q: x}, expect: block}         # wrong: it warns
    - tool: grep
      args: {q: x}
      expect:
        action: block                       # wrong too
        reason: loop_guard.consecutive_block
    - {tool: grep, args: {q: x}, expect: {action: block, reason: loop_guard.consecutive_block}}   # right
expect: {outcome: incomplete,   counts: {warn: 1, block: 1}}   # warn is wrong
---
# the second trace holds: not a byte of it changes
loopguard: 1
name: commented-second
policy: default
steps: [{tool: a}, {tool: b}]
expect: {outcome: incomplete}
---
loopguard: 1
name: commented-third
policy: default
strict: true
steps:
- {tool: c}
- {tool: c}
- {tool: c}
expect: {outcome: incomplete}
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_update_of_a_commented_flow_styled_file_with_several_traces_is_a_minimal_diff(
    workers: list[str], pytester: pytest.Pytester
) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    path = pytester.path / "traces" / "several.yaml"
    path.write_text(COMMENTED, encoding="utf-8")
    pytester.runpytest().assert_outcomes(passed=1, failed=2)
    result = pytester.runpytest("--loopguard-update", *workers)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["loopguard: updated 1 trace file:", "  traces/several.yaml"])
    changed = path.read_text(encoding="utf-8")
    diff = [line for line in difflib.unified_diff(COMMENTED.splitlines(), changed.splitlines(), lineterm="", n=0)
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert diff == [
        "-       args: {q: x}, expect: block}         # wrong: it warns",
        "+       args: {q: x}, expect: warn}         # wrong: it warns",
        "-        action: block                       # wrong too",  # block stays block, the comment stays
        "-        reason: loop_guard.consecutive_block",
        "+        action: warn                       # wrong too",
        "+        reason: loop_guard.consecutive_warning",
        "+        engine: loop_guard",
        "-expect: {outcome: incomplete,   counts: {warn: 1, block: 1}}   # warn is wrong",
        "+expect: {outcome: incomplete,   counts: {warn: 2, block: 1}}   # warn is wrong",
        "-- {tool: c}",  # strict: the step without expectation that warned gets one
        "+- {tool: c, expect: {action: warn, engine: loop_guard, reason: loop_guard.consecutive_warning}}",
    ]
    pytester.runpytest().assert_outcomes(passed=3)
    again = pytester.runpytest("--loopguard-update")  # everything holds now: nothing is written
    again.assert_outcomes(passed=3)
    assert "loopguard: updated" not in again.stdout.str() and path.read_text(encoding="utf-8") == changed


# The script's two 529s are recorded at steps 1 and 2 and retried; the run has 5 steps, so index 40 names none.
UNCHECKED = SCENARIO.replace("  0: retry\n  2: {action: fail, reason: context.transient_exhausted}\n",
                             "  1: {action: retry, reason: context.transient}\n  40: fail   # stale\n"
                             ).replace("expect: {outcome: failed}", "expect: {outcome: completed}")


def test_expectations_no_step_checks_are_reported_and_dropped_by_an_update(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    path = pytester.path / "traces" / "scenario.yaml"
    path.write_text(UNCHECKED, encoding="utf-8")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    steps = len(load(path).steps) if load(path).steps else None
    assert steps is None  # a scenario has no steps of its own: the recorded run's count is in the line below
    result.stdout.fnmatch_lines([
        "loopguard: 1 expectations no trace checks (--loopguard-update drops them):",
        "  traces/scenario.yaml: update-scenario: x-expect-steps 40 (the run recorded * steps)",
    ])
    update = pytester.runpytest("--loopguard-update")
    update.assert_outcomes(passed=1)
    update.stdout.fnmatch_lines(["    update-scenario: x-expect-steps 40 (no such step: unchecked): fail -> removed"])
    assert path.read_text(encoding="utf-8") == UNCHECKED.replace("  40: fail   # stale\n", "")
    assert "no trace checks" not in pytester.runpytest().stdout.str()


def test_update_of_a_jsonl_recording_is_the_same_minimal_diff_as_yaml(project: pytest.Pytester) -> None:
    # Issue 26 finding 1: the recorder writes JSONL; an update rewrote it whole from the observed run, adding
    # expectations nobody asked for (step 4's block) and rewriting ones that held (step 5's).
    (project.path / "traces" / "right.yaml").unlink()
    (project.path / "traces" / "wrong.yaml").unlink()
    click = {"tool": "browser_click", "args": {"index": 1}}
    lines = [json.dumps(row) for row in [
        {"loopguard": 1, "name": "update-wrong", "policy": "default", "expect": {"outcome": "completed"}},
        {**click, "expect": "warn"},
        click,
        {**click, "expect": "allow"},
        {**click, "expect": {"action": "block", "reason": "loop_guard.consecutive_block"}},
        click,  # blocked, expected nothing: the trace is not strict, so this is not wrong
        # blocked again: the expectation holds as written (no engine named) and must stay as written
        {**click, "expect": {"action": "block", "reason": "loop_guard.consecutive_block"}},
    ]]
    before = "\n".join(lines) + "\n"
    jsonl = project.path / "traces" / "wrong.jsonl"
    jsonl.write_text(before, encoding="utf-8")
    project.runpytest().assert_outcomes(failed=1)
    result = project.runpytest("--loopguard-update")
    result.assert_outcomes(passed=1)
    after = jsonl.read_text(encoding="utf-8")
    changed = [i for i, (a, b) in enumerate(zip(before.split("\n"), after.split("\n"), strict=True)) if a != b]
    # the header (outcome) and steps 0, 2 and 3 — the lines `check` found wrong — and nothing else
    diff = "\n".join(difflib.unified_diff(before.split("\n"), after.split("\n"), lineterm=""))
    assert changed == [0, 1, 3, 4], diff
    reported = [line.strip() for line in result.stdout.lines if line.strip().startswith("update-wrong:")]
    assert len(reported) == 4  # the summary lists every change it made
    project.runpytest().assert_outcomes(passed=1)
