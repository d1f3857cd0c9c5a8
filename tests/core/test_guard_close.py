"""`Guard.close`: a finished run's objects go by reference counting, not at the cyclic collector's next pass.

A replay builds a Guard per trace; left linked (the run context lists its engines, each engine holds the
context, the prompt view and its records hold each other), every finished run waited for the collector, and a
1,000-file `pytest` run spent a tenth of a second in it (docs/performance.md, "The pytest rows").
"""

from __future__ import annotations

import gc
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from bundled import ROOT, bundled_traces

from pytest_loopguard import Guard, ToolCall, ToolResult, resolve_policy
from pytest_loopguard.bench._replay import synthetic_trace
from pytest_loopguard.core._model import LLMCall, Message, Trace
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.errors import SessionError
from pytest_loopguard.io._format import dump, load_file
from pytest_loopguard.io._runner import simulate
from pytest_loopguard.io._stream import replay_jsonl
from pytest_loopguard.live import GuardServer, Session
from pytest_loopguard.runtime._policy import preset_names
from pytest_loopguard.runtime._replay import replay

READ = ToolCall.of("read_file", {"path": "src/app.py"})


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The collector paused, after a pass over the youngest generation that leaves nothing there but what the
    test makes."""
    gc.disable()
    young()
    try:
        yield
    finally:
        gc.enable()


def young() -> int:
    """Objects the collector finds among those made since its last pass (none runs while it is paused).

    A pass over the youngest generation, not a full one: a run's objects are all made during the run, so a cycle
    among them is found there, and a full pass walks every object of the test process (0.35 s each: seven of
    them made these tests a sixteenth of the default test run). What a pass finds is freed; survivors move on.
    """
    return gc.collect(0)


def some_traces() -> list[Trace]:
    """Bundled traces of several kinds: the longest few (loops, compactions, failures) and a spread of others."""
    traces = sorted(bundled_traces(), key=lambda t: len(t.steps))
    return traces[-4:] + traces[:: max(1, len(traces) // 8)]


def replay_all(presets: list[str], traces: list[Trace]) -> None:
    for preset in presets:
        for trace in traces:
            replay(trace, preset)


@pytest.mark.usefixtures("collector_off")
def test_a_replay_leaves_no_cycle_for_the_collector_under_any_preset() -> None:
    presets, traces = preset_names(), some_traces()
    replay_all(presets, traces)  # the first pass fills what is cached once (each policy, its plan)
    young()
    replay_all(presets, traces)
    if young():  # one pass for all; on a failure, one per preset names them
        left = {}
        for preset in presets:
            replay_all([preset], traces)
            left[preset] = young()
        pytest.fail(f"objects left for the collector by a replay, by preset: {left}")


@pytest.mark.usefixtures("collector_off")
def test_a_streamed_replay_leaves_no_cycle_either(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    dump(synthetic_trace("run", random.Random(5), steps=300), path)
    replay_jsonl(path, "default")
    young()
    got = replay_jsonl(path, "default")
    assert young() == 0
    assert got is not None and got.result.outcome is not None


@pytest.mark.usefixtures("collector_off")
def test_a_simulated_run_leaves_none_of_its_objects_and_hands_back_its_view_and_transcript() -> None:
    """The simulated environment's Faker links its providers in cycles of its own (Faker's design, left to it);
    none of the run's objects is among what the collector finds."""
    (scenario,) = load_file(ROOT / "traces" / "scenarios" / "poll-spacebot-dedup.yaml")
    simulate(scenario)
    young()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a pass finds is kept in gc.garbage, to be looked at
    try:
        sim = simulate(scenario)
        view, transcript = sim.view.entries, sim.transcript.entries
        # every recorded message, model answer and call (the final `done` adds nothing to either)
        kinds = [{"MessageStep": "user", "LLMStep": "assistant", "ToolStep": "tool"}.get(type(s).__name__)
                 for s in sim.recorded.steps]
        del sim
        young()
        ours = sorted({type(o).__qualname__ for o in gc.garbage
                       if type(o).__module__.startswith(("pytest_loopguard", "loopguard_simulators"))})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert ours == []
    assert [e.role for e in transcript] == [e.role for e in view] == [k for k in kinds if k is not None]


def test_a_closed_guard_refuses_every_event() -> None:
    guard = Guard(resolve_policy("default"))
    guard.start_turn([READ])
    guard.close()
    for event in (lambda: guard.start_turn([READ]), lambda: guard.before_call(READ),
                  lambda: guard.after_call(READ, ToolResult(text="x")), lambda: guard.before_llm(LLMCall()),
                  lambda: guard.message(Message("user", "go on")), lambda: guard.not_run(READ)):
        with pytest.raises(SessionError, match=r"closed Guard \(Guard\.close\)"):
            event()


def test_close_ends_the_run_once_when_end_run_was_not_called() -> None:
    ends: list[str | None] = []

    class Ends:
        @hookimpl
        def loopguard_run_end(self, outcome: str | None) -> None:
            ends.append(outcome)

    guard = Guard(resolve_policy("default"), plugins=[Ends()])
    guard.close()
    guard.close()
    assert ends == [None]
    guard = Guard(resolve_policy("default"), plugins=[Ends()])
    guard.end_run("completed")
    guard.close()
    assert ends == [None, "completed"]


def run_a_little(guard: Guard) -> None:
    guard.message(Message("user", "Fix the tests"))
    for i in range(3):
        guard.end_turn()
        call = ToolCall.of("read_file", {"path": f"src/m{i}.py"})
        guard.start_turn([call], LLMCall(output_tokens=7, text=f"Reading {i}."))
        before = guard.before_call(call)
        guard.after_call(call, ToolResult(text=f"body {i}"), before)


def test_close_builds_what_the_view_and_transcript_had_not_built_so_they_stay_whole() -> None:
    kept, closed = (Guard(resolve_policy("default"), keep_transcript=True) for _ in range(2))
    run_a_little(kept)
    run_a_little(closed)
    closed.close()
    assert closed.run.transcript.entries == kept.run.transcript.entries
    assert closed.run.view.entries == kept.run.view.entries
    assert len(closed.run.transcript.entries) == 7  # the message, and per call its turn and its result


def test_close_without_building_keeps_only_what_was_built() -> None:
    guard = Guard(resolve_policy("default"), keep_transcript=True)
    run_a_little(guard)
    guard.close(build=False)
    assert guard.run.transcript.entries == [] and guard.run.view.entries == []


@pytest.mark.usefixtures("collector_off")
def test_a_served_run_that_ends_leaves_no_cycle() -> None:
    def one_run(server: GuardServer) -> None:
        for request in ({"op": "run_start", "run": {"name": "r"}},
                        {"op": "before_call", "call": {"id": "c1", "tool": "read_file", "args": {"path": "a.py"}}},
                        {"op": "after_call", "call": {"id": "c1", "tool": "read_file"}, "result": {"text": "x"}},
                        {"op": "run_end", "outcome": "completed"}):
            assert "error" not in json.loads(server.handle(json.dumps(request)))

    server = GuardServer("default", now_ms=None)
    one_run(server)
    young()
    one_run(server)
    assert young() == 0


@pytest.mark.usefixtures("collector_off")
def test_a_closed_session_leaves_no_cycle_and_keeps_its_view() -> None:
    def one_session() -> Session:
        with Session("default", now_ms=None) as session:
            session.llm_result(LLMCall(output_tokens=5), [READ])
            session.before_call(READ)
            session.after_call(READ, ToolResult(text="body"))
            session.done(True, "fixed")
        return session

    one_session()
    young()
    session = one_session()
    assert [e.role for e in session.guard.run.view.entries] == ["assistant", "tool"]
    del session
    assert young() == 0


def test_a_plugin_joining_a_closed_guard_does_not_reopen_it() -> None:
    class Late:
        @hookimpl
        def loopguard_before_call(self, call: ToolCall) -> None:
            return None

    guard = Guard(resolve_policy("default"))
    guard.close()
    guard.pm.register(Late())  # builds the plugin manager the Guard had not needed, then a plugin joins it
    with pytest.raises(SessionError, match="closed Guard"):
        guard.before_call(READ)
