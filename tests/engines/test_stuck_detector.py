"""stuck_detector: what the traces in traces/stuck_detector cannot show on their own (bad settings, bounds,
interplay with other engines, the settings' overrides). Expectations come from PRESETS.md's sections."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard import Guard, PolicyError, ReplayResult, replay, resolve_policy
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core._model import LLMCall, Message, ToolCall, ToolResult, Trace
from pytest_loopguard.engines.stuck_detector import StuckDetector, _syntax_errors
from pytest_loopguard.importers import import_traces
from pytest_loopguard.io._format import trace_from_mapping


def run(policy: Any, steps: Sequence[Mapping[str, Any]]) -> ReplayResult:
    return replay(trace_from_mapping({"loopguard": 1, "name": "t", "steps": list(steps)}), policy)


def timeline(result: ReplayResult) -> list[str]:
    out = []
    for s in result.steps:
        reasons = [v.reason.split(".", 1)[1] for v in s.verdicts if v.action == s.action]
        out.append(s.action if not reasons else f"{s.action} {reasons[0]}")
    return out


def fail(command: str = "make", error: str = "boom") -> dict[str, Any]:
    return {"tool": "execute_bash", "args": {"command": command}, "result": {"ok": False, "error": error}}


LS = {"tool": "execute_bash", "args": {"command": "ls"}, "result": {"text": ""}}


# ---- bad settings: one line naming the setting --------------------------------------------------------------
@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"preset": "gemini-cli", "stuck_detector": {"detector": "claude"}}, "stuck_detector.detector"),
        ({"preset": "openhands-sdk", "stuck_detector": {"action_error": 0}}, "stuck_detector.action_error"),
        ({"preset": "openhands-sdk", "stuck_detector": {"window": -3}}, "stuck_detector.window"),
        ({"preset": "openhands-sdk", "stuck_detector": {"alternating_pattern": 2}},
         "stuck_detector.alternating_pattern"),
        ({"preset": "gemini-cli", "stuck_detector": {"cycle_lengths": [1, 0]}}, "stuck_detector.cycle_lengths[1]"),
        ({"preset": "gemini-cli", "stuck_detector": {"content_threshold": 1}}, "stuck_detector.content_threshold"),
        ({"preset": "gemini-cli", "stuck_detector": {"chunk_size": "50"}}, "stuck_detector.chunk_size"),
        ({"preset": "roo", "loop_guard": {"block_at": 0}}, "loop_guard.block_at"),
        ({"preset": "roo", "loop_guard": {"warn_at": -1}}, "loop_guard.warn_at"),
        ({"preset": "roo", "loop_guard": {"exempt": [{"when": {"action": "scroll_up"}}]}}, "loop_guard.exempt[0].tool"),
        ({"preset": "roo", "loop_guard": {"exempt": [{"tool": "a", "when": "x"}]}}, "loop_guard.exempt[0].when"),
        ({"preset": "roo", "loop_guard": {"exempt": [{"tool": "a", "if": {}}]}}, "loop_guard.exempt[0]"),
        ({"preset": "goose", "loop_guard": {"block_message": "Tool {name}"}}, "loop_guard.block_message"),
    ],
)
def test_bad_settings_are_one_line_naming_the_setting(policy: dict[str, Any], field: str) -> None:
    with pytest.raises(PolicyError) as info:
        resolve_policy(policy)
    message = str(info.value)
    assert "\n" not in message
    assert f"policy field '{field}'" in message


def test_null_thresholds_mean_off_and_are_no_error() -> None:
    # stop_at too: without a block stage it stops at its count itself (issue 24)
    policy = {"preset": "default", "loop_guard": {"warn_at": None, "block_at": None, "stop_at": None},
              "failure_tracker": False}
    result = run(policy, [{"tool": "a"}] * 12)
    assert not [v for s in result.steps for v in s.verdicts if v.engine == "loop_guard"]
    result = run({"preset": "goose", "loop_guard": {"block_at": None}}, [{"tool": "a"}] * 12)
    assert timeline(result) == ["allow"] * 12  # Goose out of the box: no limit, never denies


# ---- what the history holds ---------------------------------------------------------------------------
def test_a_call_blocked_by_another_engine_adds_nothing() -> None:
    # loop_guard blocks every `ls` from the 2nd on (warn off, block at 2): openhands sees one call only
    policy = {"preset": "openhands", "loop_guard": {"warn_at": None, "block_at": 2, "ping_pong": False,
                                                    "outcome_block_threshold": 0}}
    result = run(policy, [LS] * 6)
    assert timeline(result) == ["allow"] + ["block consecutive_block"] * 5
    # the same run without loop_guard stops on the 4th
    assert timeline(run("openhands", [LS] * 4))[-1] == "stop repeating_action_observation"


def test_headless_leaves_user_messages_out_of_a_monologue() -> None:
    said = {"message": {"role": "assistant", "text": "Thinking."}}
    user = {"message": {"role": "user", "text": "Well?"}}
    assert timeline(run("openhands", [said, said, user, said]))[-1] == "stop monologue"
    gui = {"preset": "openhands", "stuck_detector": {"headless": False}}
    assert timeline(run(gui, [said, said, user, said])) == ["allow"] * 4


def test_the_sdk_looks_only_at_its_window() -> None:
    steps = [fail(), fail(), fail()]
    assert timeline(run("openhands-sdk", steps))[-1] == "warn action_error_nudge"
    # a window of 4 events holds two call/result pairs: the streak over 4 is 2, never 3
    small = {"preset": "openhands-sdk", "stuck_detector": {"window": 4}}
    assert timeline(run(small, steps * 2)) == ["allow"] * 6


def test_thresholds_are_settings() -> None:
    # action_error 1: the first failure is the nudge; the second identical one stops (streak 2 > 1)
    policy = {"preset": "openhands-sdk", "stuck_detector": {"action_error": 1}}
    assert timeline(run(policy, [fail(), fail()])) == ["warn action_error_nudge", "stop repeating_action_error"]
    # gemini: cycle_repeats 2 and k = 1: the 2nd identical call is a detection
    policy = {"preset": "gemini-cli-2026-06", "stuck_detector": {"cycle_repeats": 2}}
    assert timeline(run(policy, [{"tool": "a"}] * 3)) == ["allow", "block tool_loop", "stop tool_loop"]


def drive(preset: str, events: int, *, calls: bool) -> Any:
    """A long run in which nothing repeats; returns the rule set's state."""
    guard = Guard(resolve_policy(preset))
    engine = guard.run.engines["stuck_detector"]
    assert isinstance(engine, StuckDetector)
    for i in range(events):
        if calls:
            call = ToolCall.of("t", {"i": i})
            guard.start_turn([call], LLMCall(text=f"step {i}"))
            guard.after_call(call, ToolResult(text=str(i)), guard.before_call(call))
            guard.end_turn()
        text = f"note {i}: " + " ".join(f"w{i * 7 + j}" for j in range(i % 40))
        assert guard.message(Message("assistant", text)).action == "allow"
    return engine._rules


def test_histories_stay_bounded_by_what_the_rules_read() -> None:
    v0 = drive("openhands", 2000, calls=True)
    assert (len(v0._actions), len(v0._observations), len(v0._messages)) == (6, 6, 3)
    assert v0._events == 6000  # a count, not a list
    sdk = drive("openhands-sdk", 2000, calls=True)
    assert len(sdk._window) == 20
    gemini = drive("gemini-cli", 300, calls=True)
    assert len(gemini._keys) == 25
    text_only = drive("gemini-cli", 3000, calls=False)  # no call ever resets content tracking
    assert len(text_only._chunks._buffer) == 5000
    recorded = sum(1 if isinstance(p, int) else len(p) for p in text_only._chunks._positions.values())
    assert recorded <= 2 * 5000  # pruned once the front moved 5,000 on


# ---- the syntax-error test of openhands' rule 2 ----------------------------------------------------------
FOOTER = "[Jupyter current working directory: /w]\n[Jupyter Python interpreter: /py]"


def test_unterminated_string_needs_the_same_line_three_times() -> None:
    error = "SyntaxError: unterminated string literal (detected at line 3) (cell, line 3)"
    cell = f"  File x\n{error}\n{FOOTER}\n"
    assert _syntax_errors([cell] * 3)
    moved = cell.replace("line 3)", "line 4)")
    assert not _syntax_errors([cell, cell, moved])
    assert not _syntax_errors([cell, cell, cell.replace("/py]", "/py]\nmore")])  # footer not last


@pytest.mark.parametrize("marker", ["SyntaxError: invalid syntax. Perhaps you forgot a comma?",
                                    "SyntaxError: incomplete input"])
def test_cell_errors_need_six_lines_and_the_same_first_line(marker: str) -> None:
    cell = f"Cell In[1], line 2\n  a b\n    ^\n{marker}\n" + FOOTER
    assert _syntax_errors([cell] * 3)
    assert not _syntax_errors([cell, cell, cell.replace("line 2", "line 5")])
    assert not _syntax_errors([cell.replace("  a b\n", "")] * 3)  # five lines
    assert not _syntax_errors([cell.replace(marker, "NameError: x")] * 3)


def test_the_sdk_window_can_forget_the_oldest_failure() -> None:
    # action_error 9: nine failures and the nudge are 19 events; the 10th failure pushes the 1st call out of
    # the 20-event window, so its streak over 10 is 9 again: a second nudge (for a new observation), no stop
    policy = {"preset": "openhands-sdk", "stuck_detector": {"action_error": 9}}
    steps = [fail(error=f"e{i}") for i in range(10)]
    assert timeline(run(policy, steps))[8:] == ["warn action_error_nudge"] * 2
    wide = {"preset": "openhands-sdk", "stuck_detector": {"action_error": 9, "window": 22}}
    assert timeline(run(wide, steps))[8:] == ["warn action_error_nudge", "stop repeating_action_error"]


# ---- real runs (../shared/corpus/real, imported with the project's importers) ---------------------------------
REAL = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "real"


def call_index(trace: Trace, step: int) -> int:
    """labels.yaml's call index k of a step: tool and rejected steps before it."""
    return sum(1 for s in trace.steps[:step] if s.kind in ("tool", "rejected"))


def first_intervention(trace: Trace, preset: str) -> tuple[int, str, str] | None:
    step = replay(trace, preset).first_intervention()
    if step is None:
        return None
    return call_index(trace, step.index), step.action, next(v.reason for v in step.verdicts if v.action == step.action)


def test_openhands_own_runs_are_not_stopped_as_stuck() -> None:
    # The three Multi-SWE-bench runs were recorded by OpenHands V0 (commit 156d0686, CodeAct's tool names) with
    # stuck detection on; none ended stuck (ponyc-4588 hit the iteration limit, the others ran to the end).
    # Replayed under the preset that reproduces that detector, none is stopped either, though 4588 and 4593
    # hold labelled loops (failing builds, identical invalid edits with other calls between).
    traces = import_traces(REAL / "openhands" / "multi_swe_bench_examples" / "output.jsonl")
    assert [t.name for t in traces] == ["ponylang__ponyc-4595", "ponylang__ponyc-4593", "ponylang__ponyc-4588"]
    for trace in traces:
        assert sum(s.kind == "tool" for s in trace.steps) >= 20
        for preset in ("openhands", "openhands-sdk"):
            result = replay(trace, preset)
            assert result.outcome != "stopped", (trace.name, preset, result.stopped_at)


def test_one_real_loop_judged_five_ways() -> None:
    # sympy-15976 (mini-swe-agent, Gemini 3 Pro, resolved): labels.yaml marks calls 19-23 as a loop to flag,
    # recovered from: the same no-op `sed -i` at calls 19, 20, 21, a rejected turn (22), and again at 23.
    [trace] = import_traces(REAL / "mini-swe-agent-gemini-3-pro" / "sympy__sympy-15976.traj.json")
    first = {preset: first_intervention(trace, preset)
             for preset in ("openhands", "openhands-sdk", "gemini-cli", "roo", "goose")}
    assert first == {
        # each response gives new reasoning ("Wait, I replaced...", "I am making the same mistake again..."),
        # and the response's text is the call's thought: OpenHands' equal-action test never holds
        "openhands": None,
        "openhands-sdk": None,
        "gemini-cli": None,  # four in a row, never five
        "roo": (23, "block", "loop_guard.consecutive_block"),  # the 4th identical call; rejected turns are no calls
        "goose": (21, "block", "loop_guard.consecutive_block"),  # the 3rd
    }
    # the thoughts are what keep OpenHands from stopping: without them the 4th no-op edit is four equal actions
    # with four equal outputs (the rejected turn between adds no event)
    thoughtless = dataclasses.replace(trace, steps=tuple(
        dataclasses.replace(s, llm=dataclasses.replace(s.llm, text=None)) if s.llm is not None else s
        for s in trace.steps))
    assert first_intervention(thoughtless, "openhands") == (23, "stop", "stuck_detector.repeating_action_observation")


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ("{preset: gemini-cli, stuck_detector: {detector: claude}}", "stuck_detector.detector"),
        ("{preset: roo, loop_guard: {exempt: [{when: {action: scroll_up}}]}}", "loop_guard.exempt[0].tool"),
        ("{preset: openhands-sdk, stuck_detector: {monologue: 0}}", "stuck_detector.monologue"),
    ],
)
def test_a_trace_with_a_bad_setting_is_one_line_naming_file_line_and_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str, field: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"loopguard: 1\nname: bad\npolicy: {policy}\nsteps:\n  - {{tool: a}}\n", encoding="utf-8")
    assert cli.main(["run", str(path)]) == 2
    out, err = capsys.readouterr()
    lines = [line for line in (out + err).splitlines() if "error" in line]
    assert len(lines) == 1, out + err
    assert f"{path}:3" in lines[0] and f"'{field}'" in lines[0] and "Traceback" not in out + err


def test_one_condensation_per_llm_step() -> None:
    # pre-prompt compaction switched on and every call overflowing: an llm step can compact twice (before the
    # call, then for the overflow), and it is still one condensation event
    context = {"pre_prompt_check": True, "compact_at": 0.01, "window_tokens": 100, "preserve_recent": 1}
    policy = resolve_policy({"preset": "openhands", "context": context})
    guard = Guard(policy)
    engine = guard.run.engines["stuck_detector"]
    assert isinstance(engine, StuckDetector)
    twice = 0
    for i in range(6):
        call = ToolCall.of("execute_bash", {"command": f"echo {i}"})
        guard.start_turn([call], LLMCall(text=f"turn {i}"))
        guard.after_call(call, ToolResult(text="x" * 400), guard.before_call(call))
        guard.end_turn()
        llm = LLMCall(error="ContextWindowExceededError: prompt is too long")
        reasons = [v.reason for v in guard.before_llm(llm).verdicts + guard.llm_result(llm).verdicts]
        twice += reasons == ["context.compact", "context.overflow"]
    assert twice >= 3
    assert len(engine._rules._condensations) == 6  # type: ignore[attr-defined]
