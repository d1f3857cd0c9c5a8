"""The run protocol (`runtime._protocol.Run`): the order of the Guard's calls and how a run ends, for every driver.

A witness engine logs every event it is given (and answers with scripted verdicts); each driver — replay,
the streaming replay, the live Session and the simulator's agent loop — must give it the very same events,
in the order written out below. Breaking the order inside `Run` fails every driver's case here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from loopguard_simulators import AgentLoop, FakeLLM
from pytest_loopguard.core._classify import ToolRule
from pytest_loopguard.core._model import (
    Done,
    LLMCall,
    Message,
    Rejected,
    Step,
    ToolCall,
    ToolResult,
    Trace,
    Verdict,
)
from pytest_loopguard.core._runcontext import Turn
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.engines import base
from pytest_loopguard.engines.base import Engine, EngineSettings
from pytest_loopguard.io._format import dumps
from pytest_loopguard.io._stream import replay_jsonl
from pytest_loopguard.live._session import Session
from pytest_loopguard.runtime._guard import Guard
from pytest_loopguard.runtime._policy import Policy
from pytest_loopguard.runtime._protocol import ASK, Run, turn_plan
from pytest_loopguard.runtime._replay import replay

LOG: list[tuple[Any, ...]] = []


@dataclass(frozen=True, slots=True)
class WitnessSettings(EngineSettings):
    """Scripted verdicts: (event, tool or None for any, action)."""

    script: tuple[tuple[str, str | None, str], ...] = ()


class Witness(Engine):
    """Logs every event in `LOG` and answers with its settings' scripted verdicts."""

    name = "protocol_witness"
    Settings = WitnessSettings

    def _say(self, event: str, tool: str | None = None) -> Verdict | None:
        for on, which, action in self.settings.script:
            if on == event and which in (None, tool):
                return Verdict(self.name, action, f"{self.name}.{action}", f"{action} on {event}",  # type: ignore[arg-type]
                               {"outcome": "exhausted"} if action == "stop" and which == "exhaust" else {})
        return None

    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> Verdict | None:
        tools = tuple(c.tool for c in turn.calls)
        LOG.append(("turn_start", tools))
        return self._say("turn_start", tools[0] if tools else None)

    @hookimpl
    def loopguard_turn_end(self, turn: Turn) -> None:
        LOG.append(("turn_end",))

    @hookimpl
    def loopguard_before_call(self, call: ToolCall, result: ToolResult | None) -> Verdict | None:
        LOG.append(("before_call", call.tool, result is not None and result.changed))
        return self._say("before_call", call.tool)

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> Verdict | None:
        LOG.append(("after_call", call.tool, None if result is None else result.text, blocked))
        return self._say("after_call", call.tool)

    @hookimpl
    def loopguard_before_llm(self, llm: LLMCall) -> Verdict | None:
        LOG.append(("before_llm",))
        return self._say("before_llm")

    @hookimpl
    def loopguard_llm_result(self, llm: LLMCall) -> Verdict | None:
        LOG.append(("llm_result", llm.failed))
        return self._say("llm_result")

    @hookimpl
    def loopguard_message(self, message: Message) -> Verdict | None:
        LOG.append(("message", message.role))
        return self._say("message")

    @hookimpl
    def loopguard_phase(self, phase: str) -> None:
        LOG.append(("phase", phase))

    @hookimpl
    def loopguard_rejected(self, rejected: Rejected) -> None:
        LOG.append(("rejected", rejected.reason))

    @hookimpl
    def loopguard_done(self, done: Done) -> Verdict | None:
        LOG.append(("done", done.success))
        return self._say("done")


@pytest.fixture(autouse=True)
def witness() -> Iterator[None]:
    base.ENGINES.register(Witness)  # a name no other test registers: it may stay known to the process
    LOG.clear()
    yield
    LOG.clear()


def policy(*script: tuple[str, str | None, str]) -> Policy:
    return Policy("witness", {Witness.name: WitnessSettings(script)}, tools=(ToolRule("done", "done"),))


def call(tool: str) -> ToolCall:
    return ToolCall.of(tool, {"n": 1})


# ---- the drivers: each gives back (log, outcome, stopped_at, stopped_by) ---------------------------------------
Ran = tuple[list[tuple[Any, ...]], str | None, int | None, str | None]


def by_replay(trace: Trace, pol: Policy, _tmp: Path) -> Ran:
    LOG.clear()
    result = replay(trace, pol)
    return list(LOG), result.outcome, result.stopped_at, result.stopped_by


def by_stream(trace: Trace, pol: Policy, tmp: Path) -> Ran:
    path = tmp / "run.jsonl"
    path.write_text(dumps(replace(trace, policy=None), "jsonl"), encoding="utf-8")  # the policy is the argument
    LOG.clear()
    streamed = replay_jsonl(path, pol)
    assert streamed is not None
    result = streamed.result
    return list(LOG), result.outcome, result.stopped_at, result.stopped_by


def by_session(trace: Trace, pol: Policy, _tmp: Path) -> Ran:
    LOG.clear()
    with Session(pol, now_ms=None, max_turns=trace.max_turns) as session:
        session.feed(trace.steps)
    return list(LOG), session.outcome, session.stopped_at, session.stopped_by


DRIVERS: dict[str, Callable[[Trace, Policy, Path], Ran]] = {
    "replay": by_replay, "stream": by_stream, "session": by_session}


class Tools:
    """Every call gives its tool's name as its text."""

    def execute(self, call: ToolCall) -> ToolResult:
        return ToolResult(text=call.tool)


def simulated(script: list[dict[str, Any]], pol: Policy) -> tuple[Trace, Ran]:
    LOG.clear()
    sim = AgentLoop(FakeLLM(script), Tools(), pol, prompt="go", max_turns=10).run()
    r = sim.result
    return sim.recorded, (list(LOG), r.outcome, r.stopped_at, r.stopped_by)


# ---- a model's run, through all four drivers ---------------------------------------------------------------------
MODEL_RUN = [{"calls": [{"tool": "read", "args": {"n": 1}}, {"tool": "rm", "args": {"n": 1}}]},
             {"tool": "done", "args": {"n": 1}}]

MODEL_EVENTS: list[tuple[Any, ...]] = [
    ("message", "user"),
    ("before_llm",), ("llm_result", False), ("turn_start", ("read", "rm")),
    ("before_call", "read", False), ("after_call", "read", "read", False),
    ("before_call", "rm", False), ("after_call", "rm", None, True),  # blocked: it did not run, no result fed
    ("turn_end",),
    ("before_llm",), ("llm_result", False), ("turn_start", ("done",)),
    ("before_call", "done", False), ("after_call", "done", "done", False),  # a done call that ran completes
]


@pytest.mark.parametrize("driver", [*DRIVERS, "simulator"])
def test_every_driver_gives_the_guard_a_model_run_in_the_protocol_order(driver: str, tmp_path: Path) -> None:
    pol = policy(("before_call", "rm", "block"))
    trace, ran = simulated(MODEL_RUN, pol)
    if driver != "simulator":
        ran = DRIVERS[driver](trace, pol, tmp_path)
    assert ran == (MODEL_EVENTS, "completed", None, None)


STOPPED_EVENTS: list[tuple[Any, ...]] = [
    ("message", "user"),
    ("before_llm",), ("llm_result", False), ("turn_start", ("read", "rm", "late")),
    ("before_call", "read", False), ("after_call", "read", "read", False),
    ("before_call", "rm", False), ("after_call", "rm", None, True),
    # the stop ends the run at rm's step (3): `late` never reaches the engines, and no turn ends after a stop
]


@pytest.mark.parametrize("driver", [*DRIVERS, "simulator"])
def test_every_driver_ends_a_run_where_a_stop_lands(driver: str, tmp_path: Path) -> None:
    pol = policy(("before_call", "rm", "stop"))
    script = [{"calls": [{"tool": t, "args": {"n": 1}} for t in ("read", "rm", "late")]}]
    trace, ran = simulated(script, pol)
    if driver != "simulator":
        ran = DRIVERS[driver](trace, pol, tmp_path)
    assert ran == (STOPPED_EVENTS, "stopped", 3, Witness.name)


@pytest.mark.parametrize("driver", [*DRIVERS, "simulator"])
def test_every_driver_starts_no_turn_after_a_model_call_a_verdict_fails(driver: str, tmp_path: Path) -> None:
    pol = policy(("llm_result", None, "fail"))
    trace, ran = simulated([{"tool": "read", "args": {"n": 1}}], pol)
    if driver != "simulator":
        ran = DRIVERS[driver](trace, pol, tmp_path)
    assert ran == ([("message", "user"), ("before_llm",), ("llm_result", False)], "failed", 1, Witness.name)


# ---- a run without model calls: every call a turn of its own (replay, stream, session) --------------------------
def calls_only(*tools: str) -> Trace:
    return Trace("calls", tuple(Step(i, "tool", call=call(t), result=ToolResult(text=t), t=10 * i)
                                for i, t in enumerate(tools)))


@pytest.mark.parametrize("driver", DRIVERS)
def test_every_driver_opens_a_turn_per_call_when_no_model_call_is_reported(driver: str, tmp_path: Path) -> None:
    ran = DRIVERS[driver](calls_only("a", "b"), policy(), tmp_path)
    assert ran == ([("turn_start", ("a",)), ("before_call", "a", False), ("after_call", "a", "a", False),
                    ("turn_end",),
                    ("turn_start", ("b",)), ("before_call", "b", False), ("after_call", "b", "b", False),
                    ("turn_end",)],  # the end of the events ends the last turn
                   "incomplete", None, None)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_turn_start_that_stops_the_run_keeps_its_call_from_the_engines(driver: str, tmp_path: Path) -> None:
    ran = DRIVERS[driver](calls_only("a", "halt", "b"), policy(("turn_start", "halt", "stop")), tmp_path)
    assert ran == ([("turn_start", ("a",)), ("before_call", "a", False), ("after_call", "a", "a", False),
                    ("turn_end",), ("turn_start", ("halt",))],
                   "stopped", 1, Witness.name)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_stop_that_says_so_exhausts_the_run(driver: str, tmp_path: Path) -> None:
    ran = DRIVERS[driver](calls_only("a", "exhaust"), policy(("before_call", "exhaust", "stop")), tmp_path)
    assert ran[1:] == ("exhausted", 1, Witness.name)


# ---- Run itself ----------------------------------------------------------------------------------------------
def test_a_recorded_trace_groups_its_calls_into_turns() -> None:
    steps = (Step(0, "tool", call=call("early")), Step(1, "llm", llm=LLMCall()), Step(2, "tool", call=call("a")),
             Step(3, "tool", call=call("b")), Step(4, "llm", llm=LLMCall(error="500")),
             Step(5, "tool", call=call("c")), Step(6, "rejected", rejected=Rejected("no call")),
             Step(7, "tool", call=call("d")))
    plan = {i: [c.tool for c in calls] for i, calls in turn_plan(steps).items()}
    assert plan == {0: ["early"], 1: ["a", "b"], 5: ["c"], 7: ["d"]}


def test_a_refused_answer_after_a_model_call_is_its_result_then_the_refusal() -> None:
    run = Run(Guard(policy(("llm_result", None, "warn"))))
    asked = run.model(LLMCall(input_tokens=5), (), None, ASK)
    verdicts = run.model_refused(LLMCall(5, 2), Rejected("no call"), 0, asked)
    assert LOG == [("before_llm",), ("llm_result", False), ("rejected", "no call")]
    assert [v.action for v in verdicts] == ["warn"] and run.outcome is None


def test_a_done_step_completes_the_run_unless_a_verdict_on_it_stops_it() -> None:
    run = Run(Guard(policy()))
    run.done(Done(True), 4)
    assert (run.outcome, run.stopped_at) == ("completed", None)
    stopped = Run(Guard(policy(("done", None, "stop"))))
    stopped.done(Done(True), 4)
    assert (stopped.outcome, stopped.stopped_at, stopped.stopped_by) == ("stopped", 4, Witness.name)


def test_a_blocked_done_call_does_not_complete_the_run() -> None:
    run = Run(Guard(policy(("before_call", "done", "block"))))
    assert run.before_call(call("done"), False, (call("done"),), 0).action == "block"
    run.after_call(call("done"), ToolResult(text="finished"), 0)
    assert run.outcome is None and LOG[-1] == ("after_call", "done", None, True)


def test_the_end_of_the_events_ends_the_turn_and_says_whether_the_turns_ran_out() -> None:
    run = Run(Guard(policy()))
    run.model(LLMCall(), [call("a")], 0)
    run.close()
    assert LOG[-1] == ("turn_end",) and run.outcome is None
    assert (run.final(None), run.final(2), run.final(1)) == ("incomplete", "incomplete", "exhausted")
    assert run.finish(1) == "exhausted" == run.outcome


def test_a_driver_that_gives_up_ends_the_run_incomplete_and_no_turn_end_follows() -> None:
    run = Run(Guard(policy()))
    run.model(LLMCall(), [call("a")], 0)
    run.give_up()  # e.g. an error nothing retries: a used-up turn limit does not make it exhausted
    assert run.finish(1) == "incomplete" and LOG[-1] == ("turn_start", ("a",))
