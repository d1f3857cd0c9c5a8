"""AgentLoop: drives the Guard in replay's order, honours verdicts, records a lossless, replayable trace."""

from __future__ import annotations

from typing import Any

import pytest

from loopguard_simulators import AgentLoop, FakeBrowser, FakeFiles, FakeLLM, ModelReply, PingPong, Toolbox
from loopguard_simulators.toolbox import TodoStore
from pytest_loopguard.core._conversation import PromptView
from pytest_loopguard.core._model import ReplayResult, ToolCall, Trace, Verdict
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.io._format import dumps, loads
from pytest_loopguard.runtime._guard import Clock
from pytest_loopguard.runtime._replay import replay

SHOP = "https://shop.example"
PAGES = {SHOP: {"title": "Shop", "snapshot_chars": 2000, "elements": [{"index": 4, "name": "Add to cart"}]}}


def verdict(v: Verdict) -> dict[str, Any]:
    # `input_tokens` is the provider's count of a recorded prompt: unknown to a live run before the call
    out = v.to_dict()
    out["data"] = {k: x for k, x in out["data"].items() if k != "input_tokens"}
    return out


def timeline(result: ReplayResult) -> list[tuple[object, ...]]:
    return [(s.index, s.kind, s.action, [verdict(v) for v in s.verdicts]) for s in result.steps]


def replayed(trace: Trace, **kw: Any) -> ReplayResult:
    """The recorded trace written out, loaded back and replayed: what a user of the corpus gets."""
    text = dumps(trace)
    return replay(loads(text)[0], **kw)


def assert_equivalent(result: ReplayResult) -> None:
    again = replayed(result.trace)
    assert timeline(again) == timeline(result)
    assert (again.outcome, again.stopped_at, again.stopped_by) == (result.outcome, result.stopped_at,
                                                                  result.stopped_by)


class Spy:
    """Records the Guard's hook calls, to compare the loop's order with replay's."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    @hookimpl
    def loopguard_turn_start(self, turn: Any) -> None:
        self.calls.append(("turn_start", tuple(c.tool for c in turn.calls)))

    @hookimpl
    def loopguard_turn_end(self, turn: Any) -> None:
        self.calls.append(("turn_end", turn.index))

    @hookimpl
    def loopguard_before_call(self, call: ToolCall, result: Any) -> None:
        # before a call only `result.changed` is known (a live loop has no result yet): that is what counts
        self.calls.append(("before_call", call.tool, result is not None and result.changed))

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: Any, blocked: bool) -> None:
        self.calls.append(("after_call", call.tool, blocked, None if result is None else result.result_text))

    @hookimpl
    def loopguard_before_llm(self, view: PromptView) -> None:
        self.calls.append(("before_llm", view.tokens()))

    @hookimpl
    def loopguard_llm_result(self, llm: Any, view: PromptView) -> None:
        self.calls.append(("llm_result", llm.error, llm.input_tokens, llm.output_tokens, view.tokens()))

    @hookimpl
    def loopguard_compacted(self) -> None:
        self.calls.append(("compacted",))

    @hookimpl
    def loopguard_message(self, message: Any) -> None:
        self.calls.append(("message", message.role))

    @hookimpl
    def loopguard_done(self, done: Any) -> None:
        self.calls.append(("done", done.success))


def poll_loop(policy: Any = "spacebot", seed: int = 0, plugins: tuple[object, ...] = (), **kw: Any) -> AgentLoop:
    pages = {SHOP: {**PAGES[SHOP], "ready_after": 5}}
    return AgentLoop(
        FakeLLM(behaviour=__import__("loopguard_simulators").Poller(target=4, url=SHOP)),
        Toolbox(browser=FakeBrowser(pages, seed=seed)),
        policy,
        prompt="Add the lamp to the cart.",
        context={"window_tokens": 20000},
        seed=seed,
        plugins=plugins,
        **kw,
    )


def test_the_loop_calls_the_guard_in_exactly_replays_order() -> None:
    live = Spy()
    sim = AgentLoop(
        FakeLLM([{"tool": "browser_navigate", "args": {"url": SHOP}}, {"error": "500"},
                 {"calls": [{"tool": "browser_snapshot"}, {"tool": "browser_click", "args": {"index": 4}}]},
                 {"answer": "done"}], window_tokens=50000),
        Toolbox(browser=FakeBrowser(PAGES)),
        "default",
        prompt="go",
        plugins=[live],
    ).run()
    again = Spy()
    replay(loads(dumps(sim.recorded))[0], plugins=[again])
    assert live.calls == again.calls
    names = [c[0] for c in live.calls]
    assert names[:6] == ["message", "before_llm", "llm_result", "turn_start", "before_call", "after_call"]
    # the 500: end the turn, ask again (before_llm, llm_result) without starting a turn
    assert names[6:11] == ["turn_end", "before_llm", "llm_result", "before_llm", "llm_result"]


def test_a_blocked_call_does_not_run_and_the_model_sees_the_verdict_as_an_error() -> None:
    toolbox = Toolbox(browser=FakeBrowser(PAGES, start=SHOP))
    click = {"tool": "browser_click", "args": {"index": 4}}
    sim = AgentLoop(FakeLLM([click] * 5), toolbox, {"preset": "default", "failure_tracker": False},
                    max_turns=5).run()
    actions = [s.action for s in sim.result.steps if s.kind == "tool"]
    assert actions == ["allow", "allow", "warn", "warn", "block"]  # default: warn at 3, block at 5
    assert len(toolbox.executed) == 4
    blocked = sim.recorded.steps[-1]
    assert blocked.kind == "tool" and blocked.result is None
    verdict = next(v for v in sim.result.steps[-1].verdicts if v.action == "block")
    last = sim.transcript.entries[-1]
    assert last.role == "tool" and last.text == f"Error: {verdict.message}"
    assert_equivalent(sim.result)


def test_a_stop_ends_the_run_and_later_calls_of_the_turn_are_not_reached() -> None:
    click = {"tool": "browser_click", "args": {"index": 9}}
    script = [click, click, click, {"calls": [click, {"tool": "browser_snapshot"}]}, {"answer": "never"}]
    sim = AgentLoop(FakeLLM(script), Toolbox(browser=FakeBrowser(PAGES, start=SHOP)), "qa-agent").run()
    r = sim.result
    assert r.outcome == "stopped" and r.stopped_by == "failure_tracker"
    stop = r.steps[r.stopped_at or 0]
    assert stop.tool == "browser_click" and stop.action == "stop"
    assert [s.action for s in r.steps[r.stopped_at or 0:]] == ["stop", "not_reached"]
    assert sim.recorded.steps[-1].call == ToolCall.of("browser_snapshot") and sim.recorded.steps[-1].result is None
    assert_equivalent(r)


def test_max_turns_ends_the_run_exhausted_and_the_recording_replays_so() -> None:
    pp = PingPong(ToolCall.of("read_file", {"path": "a"}), ToolCall.of("read_file", {"path": "b"}))
    sim = AgentLoop(FakeLLM(behaviour=pp), Toolbox(files=FakeFiles({"a": "1", "b": "2"})), "claw-code",
                    max_turns=4).run()
    assert sim.result.outcome == "exhausted" and sim.model_calls == 4
    assert sim.recorded.max_turns == 4
    assert_equivalent(sim.result)


def test_replay_calls_a_trace_exhausted_only_when_it_used_its_turn_limit() -> None:
    base = {"loopguard": 1, "name": "t", "steps": [{"llm": {}}, {"tool": "x"}, {"llm": {}}, {"tool": "x"}]}
    text = dumps(loads(__import__("json").dumps(base), fmt="json")[0])
    assert replay(loads(text)[0], "claw-code").outcome == "incomplete"
    assert replay(loads(text + "max_turns: 2\n")[0], "claw-code").outcome == "exhausted"
    assert replay(loads(text + "max_turns: 3\n")[0], "claw-code").outcome == "incomplete"


def test_a_final_answer_completes_the_run_with_a_done_step() -> None:
    sim = AgentLoop(FakeLLM([{"answer": "all good", "success": True}]), Toolbox(), "default", prompt="hi").run()
    assert sim.result.outcome == "completed"
    done = sim.recorded.steps[-1]
    assert done.kind == "done" and done.done is not None and done.done.text == "all good"


def test_an_error_no_engine_handles_ends_the_record_incomplete() -> None:
    sim = AgentLoop(FakeLLM([{"error": "500"}, {"answer": "never"}]), Toolbox(), "qa-agent").run()
    assert sim.result.outcome == "incomplete" and sim.model_calls == 1
    assert_equivalent(sim.result)


def test_the_record_is_lossless_while_the_view_is_deduplicated() -> None:
    sim = poll_loop().run()
    assert sim.result.outcome == "completed"
    snapshots = [s for s in sim.recorded.steps if s.call is not None and s.call.tool == "browser_snapshot"]
    assert len(snapshots) == 5
    assert all(s.result is not None and len(s.result.text or "") >= 2000 for s in snapshots)
    in_view = [e for e in sim.view.entries if e.tool == "browser_snapshot"]
    assert [e.replaced for e in in_view] == [True, True, True, True, False]
    assert in_view[0].text == "[browser_snapshot output superseded by a later call]"
    in_transcript = [e for e in sim.transcript.entries if e.tool == "browser_snapshot"]
    assert [e.text for e in in_transcript] == [s.result.text for s in snapshots if s.result is not None]


def test_the_same_seed_records_the_same_trace_and_another_seed_does_not() -> None:
    assert dumps(poll_loop(seed=5).run().recorded) == dumps(poll_loop(seed=5).run().recorded)
    assert dumps(poll_loop(seed=5).run().recorded) != dumps(poll_loop(seed=6).run().recorded)


def test_step_times_come_from_the_virtual_clock_with_latencies_and_backoff() -> None:
    clock = Clock()
    sim = AgentLoop(FakeLLM([{"error": "500"}, {"tool": "todo"}, {"answer": "ok"}]), Toolbox(), "spacebot",
                    clock=clock, llm_latency_ms=1000, tool_latency_ms=200).run()
    times = [(s.kind, s.t) for s in sim.recorded.steps]
    # the 500 at t=0 backs off 5 s (spacebot) and took 1 s itself; the retry answers; the tool takes 0.2 s
    assert times == [("llm", 0), ("llm", 6000), ("tool", 7000), ("llm", 7200), ("done", 8200)]
    assert clock.now_ms == 8200
    assert_equivalent(sim.result)


class EditsBetweenReads:
    """A model that reads a file twice; between the reads someone else edits it (when `edit` is set)."""

    def __init__(self, files: FakeFiles, edit: bool) -> None:
        self.files, self.edit, self.turn = files, edit, 0

    def respond(self, view: PromptView, turn: int) -> ModelReply:
        self.turn += 1
        if self.turn == 2 and self.edit:
            self.files.modify("a.py", "changed\n")
        if self.turn <= 2:
            return ModelReply((ToolCall.of("read_file", {"path": "a.py"}),))
        return ModelReply(text="done")


@pytest.mark.parametrize(("edit", "second"), [(False, "read_tracker.unchanged"), (True, None)])
def test_a_change_outside_the_agent_reaches_the_engines_before_the_call(edit: bool, second: str | None) -> None:
    files = FakeFiles({"a.py": "original\n"})
    sim = AgentLoop(EditsBetweenReads(files, edit), Toolbox(files=files), "hermes-current").run()
    reads = [s for s in sim.result.steps if s.tool == "read_file"]
    assert [v.reason for v in reads[1].verdicts if v.action != "allow"] == ([second] if second else [])
    second_read = sim.recorded.steps[-3]
    # a blocked read records nothing; a read of a file changed outside says so in its result
    assert (second_read.result is not None and second_read.result.changed) is edit
    assert_equivalent(sim.result)


def test_the_toolbox_routes_todo_done_and_rejects_unknown_tools() -> None:
    todos = TodoStore()
    box = Toolbox(todos=todos)
    box.execute(ToolCall.of("todo", {"todos": [{"id": "1", "content": "read", "status": "completed"},
                                               {"id": "2", "content": "write"}]}))
    assert [t.id for t in todos.active()] == ["2"]
    assert box.execute(ToolCall.of("todo")).text == "[x] 1. read\n[ ] 2. write"
    assert box.execute(ToolCall.of("done")).ok
    assert box.execute(ToolCall.of("browser_snapshot")).error == "Unknown tool: browser_snapshot"  # no browser
    assert box.execute(ToolCall.of("fly")).error == "Unknown tool: fly"


def test_max_turns_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_turns"):
        AgentLoop(FakeLLM([]), Toolbox(), max_turns=0)


class EditsBeforeFourthRead:
    """Reads a file four times in a row; someone edits it just before the 4th read."""

    def __init__(self, files: FakeFiles) -> None:
        self.files, self.turn = files, 0

    def respond(self, view: PromptView, turn: int) -> ModelReply:
        self.turn += 1
        if self.turn == 4:
            self.files.modify("a.py", "edited\n")
        if self.turn <= 4:
            return ModelReply((ToolCall.of("read_file", {"path": "a.py"}),), text=f"read {self.turn}")
        return ModelReply(text="done")


def test_a_blocked_read_of_a_changed_file_records_only_that_it_changed() -> None:
    files = FakeFiles({"a.py": "original\n"})
    sim = AgentLoop(EditsBeforeFourthRead(files), Toolbox(files=files), "default").run()
    fourth = [s for s in sim.recorded.steps if s.kind == "tool"][3]
    assert sim.result.steps[fourth.index].action == "block"  # read_tracker: the 4th identical read
    assert fourth.result is not None and fourth.result.changed and fourth.result.text is None
    assert files.is_changed("a.py")  # the blocked read did not consume the change
    assert_equivalent(sim.result)


def test_the_record_keeps_what_the_model_said() -> None:
    files = FakeFiles({"a.py": "x\n"})
    sim = AgentLoop(EditsBeforeFourthRead(files), Toolbox(files=files), "claw-code").run()
    said = [s.llm.text for s in sim.recorded.steps if s.llm is not None]
    assert said == ["read 1", "read 2", "read 3", "read 4", "done"]
