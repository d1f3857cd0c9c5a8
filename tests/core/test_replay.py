"""Replay: DESIGN section 3's turn plan, run endings (stop, exhausted, fail, done), not_reached steps and the
counterfactual rule, driven by a tiny probe engine so no built-in engine's rules are involved."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bundled import bundled_traces

from pytest_loopguard.core._model import (
    Done,
    LLMCall,
    Message,
    Rejected,
    StepResult,
    ToolCall,
    ToolResult,
    Trace,
    Verdict,
)
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.engines.base import Engine, EngineSettings, register_engine
from pytest_loopguard.io._format import loads
from pytest_loopguard.runtime._guard import Turn
from pytest_loopguard.runtime._policy import Policy, resolve_policy
from pytest_loopguard.runtime._replay import Replayer, policy_for, replay, turn_plan

ROOT = Path(__file__).parents[2]

NO_ENGINES = Policy(name="none", engines={}, tools=resolve_policy("qa-agent").tools)  # `done` is the done tool


def trace(text: str) -> Trace:
    (t,) = loads(textwrap.dedent(text).lstrip("\n"))
    return t


class Probe:
    """A plugin that records every event it is given and answers with scripted verdicts.

    `on_call[n]` is the action for the n-th tool call (0-based, blocked ones included), `on_turn[n]` for the
    n-th turn start, `on_llm[n]` for the n-th LLM result.
    """

    def __init__(
        self,
        on_call: dict[int, str] | None = None,
        on_turn: dict[int, tuple[str, dict[str, Any]]] | None = None,
        on_llm: dict[int, str] | None = None,
    ) -> None:
        self.on_call, self.on_turn, self.on_llm = on_call or {}, on_turn or {}, on_llm or {}
        self.events: list[tuple[Any, ...]] = []
        self.calls = self.llms = 0

    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> Verdict | None:
        self.events.append(("turn", turn.index, tuple(c.tool for c in turn.calls)))
        scripted = self.on_turn.get(turn.index)
        return Verdict("probe", scripted[0], "probe.turn", data=scripted[1]) if scripted else None  # type: ignore[arg-type]

    @hookimpl
    def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
        n, self.calls = self.calls, self.calls + 1
        self.events.append(("before", call.tool))
        action = self.on_call.get(n)
        return Verdict("probe", action, f"probe.{action}") if action else None  # type: ignore[arg-type]

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> None:
        self.events.append(("after", call.tool, result.text if result else None, blocked))

    @hookimpl
    def loopguard_turn_end(self, turn: Turn) -> None:
        self.events.append(("end", turn.index))

    @hookimpl
    def loopguard_llm_result(self, llm: LLMCall) -> Verdict | None:
        n, self.llms = self.llms, self.llms + 1
        self.events.append(("llm", llm.error))
        action = self.on_llm.get(n)
        return Verdict("probe", action, f"probe.{action}") if action else None  # type: ignore[arg-type]

    @hookimpl
    def loopguard_message(self, message: Message) -> None:
        self.events.append(("message", message.text))

    @hookimpl
    def loopguard_rejected(self, rejected: Rejected) -> None:
        self.events.append(("rejected", rejected.reason))

    @hookimpl
    def loopguard_done(self, done: Done) -> None:
        self.events.append(("done", done.success))


def tools(plan: dict[int, tuple[ToolCall, ...]]) -> dict[int, list[str]]:
    return {k: [c.tool for c in v] for k, v in plan.items()}


# ---- the turn plan (DESIGN section 3) ----------------------------------------------------------------
def test_an_llm_step_starts_a_turn_with_the_tool_steps_after_it() -> None:
    t = trace("""
        loopguard: 1
        name: t
        steps:
          - tool: a
          - tool: b
          - llm: {}
          - tool: c
          - tool: d
          - phase: act
          - tool: e
          - llm: {}
          - llm: {}
          - tool: f
        """)
    # tools before the first llm step form one turn; an llm step without calls is still a turn
    assert tools(turn_plan(t.steps)) == {0: ["a", "b"], 2: ["c", "d", "e"], 7: [], 8: ["f"]}


def test_without_llm_steps_every_call_is_a_turn() -> None:
    t = trace("loopguard: 1\nname: t\nsteps: [{tool: a}, {tool: b}, {phase: act}, {tool: a}]\n")
    assert tools(turn_plan(t.steps)) == {0: ["a"], 1: ["b"], 3: ["a"]}


def test_a_failed_llm_step_starts_no_turn() -> None:
    t = trace("""
        loopguard: 1
        name: t
        steps:
          - llm: {}
          - tool: a
          - llm: {error: "503 Service Unavailable"}
          - llm: {}
          - tool: b
          - llm: {error: "503 Service Unavailable"}
          - tool: c
        """)
    # the retried call (step 3) starts the turn; calls recorded right after a failure form their own turn
    assert tools(turn_plan(t.steps)) == {0: ["a"], 3: ["b"], 6: ["c"]}


def test_engines_learn_a_turns_calls_when_it_starts() -> None:
    probe = Probe()
    t = trace("loopguard: 1\nname: t\nsteps: [{llm: {}}, {tool: a}, {tool: b}, {llm: {}}, {tool: c}]\n")
    replay(t, NO_ENGINES, plugins=[probe])
    assert probe.events == [
        ("llm", None), ("turn", 0, ("a", "b")),
        ("before", "a"), ("after", "a", None, False), ("before", "b"), ("after", "b", None, False),
        ("end", 0), ("llm", None), ("turn", 1, ("c",)),
        ("before", "c"), ("after", "c", None, False),
        ("end", 1),  # the run's end closes the last turn
    ]


# ---- run endings -------------------------------------------------------------------------------------
FIVE = """
loopguard: 1
name: five
steps:
  - {tool: a, result: {text: one}}
  - {tool: b, result: {text: two}}
  - {tool: c, result: {text: three}}
  - {message: {role: user, text: more}}
  - {tool: d}
"""


def test_a_stop_ends_the_run_and_later_steps_are_not_reached() -> None:
    probe = Probe(on_call={1: "stop"})
    r = replay(trace(FIVE), NO_ENGINES, plugins=[probe])
    assert [s.action for s in r.steps] == ["allow", "stop", "not_reached", "not_reached", "not_reached"]
    assert (r.outcome, r.stopped_at, r.stopped_by) == ("stopped", 1, "probe")
    assert r.steps[2].verdicts == () and r.steps[3].kind == "message" and r.steps[2].tool == "c"
    assert ("before", "c") not in probe.events and ("message", "more") not in probe.events
    assert r.counts() == {"allow": 1, "stop": 1, "not_reached": 3}


def test_a_stopped_call_does_not_run() -> None:
    probe = Probe(on_call={1: "stop"})
    replay(trace(FIVE), NO_ENGINES, plugins=[probe])
    assert ("after", "b", "two", False) not in probe.events


def test_a_turn_start_stop_marked_exhausted_ends_the_run_exhausted() -> None:
    probe = Probe(on_turn={2: ("stop", {"outcome": "exhausted"})})
    r = replay(trace(FIVE), NO_ENGINES, plugins=[probe])
    assert (r.outcome, r.stopped_at, r.stopped_by) == ("exhausted", 2, "probe")
    assert r.steps[2].action == "stop" and ("before", "c") not in probe.events


def test_a_turn_start_stop_without_the_mark_is_a_plain_stop() -> None:
    r = replay(trace(FIVE), NO_ENGINES, plugins=[Probe(on_turn={0: ("stop", {})})])
    assert (r.outcome, r.stopped_at) == ("stopped", 0)


def test_a_done_step_completes_the_run() -> None:
    t = trace("loopguard: 1\nname: t\nsteps: [{tool: a}, {done: {success: true}}, {tool: b}]\n")
    probe = Probe()
    r = replay(t, NO_ENGINES, plugins=[probe])
    assert (r.outcome, r.stopped_at, r.stopped_by) == ("completed", None, None)
    assert [s.action for s in r.steps] == ["allow", "allow", "not_reached"]
    assert ("done", True) in probe.events


def test_the_done_tool_completes_the_run_unless_blocked() -> None:
    t = trace("loopguard: 1\nname: t\nsteps: [{tool: done}, {tool: b}]\n")
    assert replay(t, NO_ENGINES).outcome == "completed"
    blocked = replay(t, NO_ENGINES, plugins=[Probe(on_call={0: "block"})])
    assert blocked.outcome == "incomplete" and blocked.steps[1].action == "allow"


def test_a_fail_on_an_llm_step_ends_the_run_failed() -> None:
    t = trace("loopguard: 1\nname: t\nsteps: [{llm: {}}, {tool: a}, {llm: {error: boom}}, {tool: b}]\n")
    r = replay(t, NO_ENGINES, plugins=[Probe(on_llm={1: "fail"})])
    assert (r.outcome, r.stopped_at, r.stopped_by) == ("failed", 2, "probe")
    assert r.steps[3].action == "not_reached"


def test_no_ending_is_incomplete() -> None:
    r = replay(trace(FIVE), NO_ENGINES)
    assert (r.outcome, r.stopped_at, r.stopped_by) == ("incomplete", None, None)
    assert [s.action for s in r.steps] == ["allow"] * 5


# ---- the counterfactual ------------------------------------------------------------------------------
def test_a_blocked_calls_recorded_result_is_not_fed_to_engines() -> None:
    probe = Probe(on_call={1: "block"})
    r = replay(trace(FIVE), NO_ENGINES, plugins=[probe])
    assert [s.action for s in r.steps] == ["allow", "block", "allow", "allow", "allow"]
    assert ("after", "a", "one", False) in probe.events
    assert ("after", "b", None, True) in probe.events  # told it was blocked, not shown "two"
    assert not any(e[:3] == ("after", "b", "two") for e in probe.events)
    assert ("after", "c", "three", False) in probe.events  # the recorded sequence goes on
    assert r.outcome == "incomplete"


def test_a_warned_call_runs_and_its_result_is_fed() -> None:
    probe = Probe(on_call={1: "warn"})
    r = replay(trace(FIVE), NO_ENGINES, plugins=[probe])
    assert r.steps[1].action == "warn"
    assert ("after", "b", "two", False) in probe.events


# ---- a registered engine, policies and the clock -------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CountingSettings(EngineSettings):
    block_from: int = 2


@register_engine
class CountingEngine(Engine):
    """Blocks every call from the `block_from`-th on (1-based) and reports the run clock it saw."""

    name = "test_replay_counting"
    Settings = CountingSettings

    def __init__(self, settings: Any, run: Any) -> None:
        super().__init__(settings, run)
        self.seen = 0

    @hookimpl
    def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
        self.seen += 1
        if self.seen >= self.settings.block_from:
            return Verdict(self.name, "block", f"{self.name}.block", data={"now": self.run.clock.now_ms})
        return None


def test_a_registered_engine_runs_from_a_policy_with_fresh_state_per_run() -> None:
    t = trace("loopguard: 1\nname: t\nsteps: [{tool: a, t: 100}, {tool: b, t: 250}, {tool: c, t: 200}]\n")
    policy = resolve_policy({"preset": "qa-agent", "failure_tracker": False, "test_replay_counting": {"block_from": 2}})
    for _ in range(2):  # a second replay starts from a fresh engine: same verdicts
        r = replay(t, policy)
        assert [s.action for s in r.steps] == ["allow", "block", "block"]
        # the clock follows step times and never runs backwards
        assert [s.verdicts[0].data["now"] for s in r.steps[1:]] == [250, 250]


def test_policy_name_is_kept_as_given() -> None:
    t = trace("loopguard: 1\nname: t\npolicy: hermes\nsteps: [{tool: a}]\n")
    assert replay(t).policy == "hermes"
    assert replay(t, "spacebot").policy == "spacebot"
    assert replay(trace("loopguard: 1\nname: t\nsteps: []\n")).policy == "default"


def test_result_to_dict_shape() -> None:
    r = replay(trace(FIVE), NO_ENGINES, plugins=[Probe(on_call={1: "stop"})])
    d = r.to_dict()
    assert list(d) == ["trace", "policy", "outcome", "stopped_at", "stopped_by", "steps"]
    assert d["steps"][1] == {
        "index": 1, "kind": "tool", "tool": "b", "action": "stop",
        "verdicts": [{"engine": "probe", "action": "stop", "reason": "probe.stop", "message": "", "data": {}}],
    }
    assert d["steps"][3] == {"index": 3, "kind": "message", "tool": None, "action": "not_reached", "verdicts": []}


@pytest.mark.parametrize("first", [0, 1])
def test_first_intervention(first: int) -> None:
    r = replay(trace(FIVE), NO_ENGINES, plugins=[Probe(on_call={first: "warn", 2: "block"})])
    step = r.first_intervention()
    assert step is not None and (step.index, step.action) == (first, "warn")
    assert replay(trace(FIVE), NO_ENGINES).first_intervention() is None


def test_before_call_learns_only_whether_the_file_changed_never_the_recorded_outcome() -> None:
    from pytest_loopguard.io._format import trace_from_mapping

    seen: list[ToolResult | None] = []

    class Probe:
        @hookimpl
        def loopguard_before_call(self, result: ToolResult | None) -> None:
            seen.append(result)

    trace = trace_from_mapping({"loopguard": 1, "name": "hint", "policy": "qa-agent", "steps": [
        {"tool": "read_file", "args": {"path": "a"}, "result": {"text": "secret outcome"}},
        {"tool": "read_file", "args": {"path": "a"}, "result": {"text": "new", "changed": True}},
        {"tool": "click", "result": {"error": "gone"}},
    ]})
    replay(trace, plugins=[Probe()])
    assert seen[0] is None and seen[2] is None
    assert seen[1] is not None and seen[1].changed and seen[1].text is None


# ---- rejected turns ------------------------------------------------------------------------------------
REJECTED = """
    loopguard: 1
    name: t
    steps:
      - llm: {}
      - tool: a
      - rejected: {reason: no tool call, llm: {input_tokens: 10, output_tokens: 2}}
      - tool: b
      - rejected: {reason: several calls}
      - llm: {}
      - tool: c
    """


def test_a_rejected_step_ends_the_turn_and_the_calls_after_it_start_another() -> None:
    assert tools(turn_plan(trace(REJECTED).steps)) == {0: ["a"], 3: ["b"], 5: ["c"]}


def test_replay_hands_a_rejected_turn_to_the_hook_after_its_model_usage() -> None:
    probe = Probe()
    result = replay(trace(REJECTED), NO_ENGINES, plugins=[probe])
    assert probe.events == [
        ("llm", None), ("turn", 0, ("a",)), ("before", "a"), ("after", "a", None, False), ("end", 0),
        ("llm", None), ("rejected", "no tool call"),  # its usage counts as a model call's, then the hook
        ("turn", 1, ("b",)), ("before", "b"), ("after", "b", None, False), ("end", 1),
        ("rejected", "several calls"),  # no usage given: no model call
        ("llm", None), ("turn", 2, ("c",)), ("before", "c"), ("after", "c", None, False), ("end", 2),
    ]
    assert [(s.kind, s.action) for s in result.steps][2] == ("rejected", "allow")
    assert result.to_dict()["steps"][4]["kind"] == "rejected"


def test_verdicts_on_a_rejected_turn_land_on_its_step_and_can_end_the_run() -> None:
    class Stopper:
        @hookimpl
        def loopguard_rejected(self, rejected: Rejected) -> Verdict:
            return Verdict("probe", "stop", "probe.rejected", rejected.reason)

    result = replay(trace(REJECTED), NO_ENGINES, plugins=[Stopper()])
    assert (result.outcome, result.stopped_at, result.stopped_by) == ("stopped", 2, "probe")
    assert [s.action for s in result.steps] == ["allow", "allow", "stop", *["not_reached"] * 4]


CORPUS = list(bundled_traces())


@pytest.mark.parametrize("policy", [None, "default", "hermes-current"])
def test_the_timeline_a_replay_records_equals_feeding_the_steps_one_by_one(policy: str | None) -> None:
    # replay() keeps per step only its action (and verdicts where there are any) and builds StepResults when
    # read; Replayer.step builds each as it goes (the streaming replay uses it): both must agree everywhere
    assert len(CORPUS) > 100
    for t in CORPUS:
        got = replay(t, policy)
        counts = got.counts()  # from the recorded actions, before the timeline is built
        resolved, _ = policy_for(t, policy)
        one_by_one = Replayer(t, resolved, t.objective)
        plan = turn_plan(t.steps)
        expected = [one_by_one.step(s, plan.get(s.index)) for s in t.steps]
        assert list(got.steps) == expected, t.name
        assert counts == got.counts() and sum(counts.values()) == len(t.steps)
        assert (got.outcome, got.stopped_at, got.stopped_by) == (
            one_by_one.finish(), one_by_one.stopped_at, one_by_one.stopped_by)


def test_a_recorded_timeline_keeps_verdicts_only_on_the_steps_that_have_them() -> None:
    t = trace(FIVE)
    got = replay(t, NO_ENGINES, plugins=[Probe(on_call={1: "warn", 2: "stop"})])
    assert got.counts() == {"allow": 1, "warn": 1, "stop": 1, "not_reached": 2}  # before the steps are read
    assert [s.action for s in got.steps] == ["allow", "warn", "stop", "not_reached", "not_reached"]
    assert [len(s.verdicts) for s in got.steps] == [0, 1, 1, 0, 0]
    assert [s.kind for s in got.steps] == ["tool", "tool", "tool", "message", "tool"]
    assert got.first_intervention() is got.steps[1]
    assert got.steps[1] == StepResult(1, "tool", got.steps[1].tool, "warn", got.steps[1].verdicts)
