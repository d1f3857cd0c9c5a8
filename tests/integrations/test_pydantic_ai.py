"""The Pydantic AI integration against the real library, driven offline by its FunctionModel and TestModel."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.exceptions import CallDeferred, ModelHTTPError, ModelRetry, ToolFailed
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.test import TestModel

from pytest_loopguard import Session, load_file, replay
from pytest_loopguard.integrations._pydantic_ai_bench import overhead_run
from pytest_loopguard.integrations.pydantic_ai import LoopGuard, LoopGuardStopped
from pytest_loopguard.runtime import preset_names

REPEAT = ToolCallPart("check_status", {"job": "build-42"})


def scripted(script: Sequence[Sequence[ToolCallPart] | Exception | str]) -> tuple[FunctionModel, list[list[Any]]]:
    """A model that answers with the script's entries in order (calls, a raised error, or final text), and
    what it was shown: the parts of each request it received."""
    seen: list[list[Any]] = []
    position = iter(range(len(script)))

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        seen.append(list(last.parts) if isinstance(last, ModelRequest) else [])
        entry = script[next(position, len(script) - 1)]
        if isinstance(entry, Exception):
            raise entry
        if isinstance(entry, str):
            return ModelResponse(parts=[TextPart(entry)])
        n = len(seen)
        return ModelResponse(parts=[ToolCallPart(c.tool_name, c.args, tool_call_id=f"c{n}_{i}")
                                    for i, c in enumerate(entry)])

    return FunctionModel(answer), seen


def loop_model() -> tuple[FunctionModel, list[list[Any]]]:
    return scripted([[REPEAT]] * 12 + ["gave up"])


def agent_with_tools(model: FunctionModel | TestModel, ran: list[str]) -> Agent[None, str]:
    agent = Agent(model, retries=5)

    @agent.tool_plain
    def check_status(job: str) -> str:
        ran.append(f"check_status {job}")
        return "pending"

    @agent.tool_plain
    def read_file(path: str) -> str:
        ran.append(f"read_file {path}")
        return f"contents of {path}"

    @agent.tool_plain
    def search_files(pattern: str) -> list[str]:
        ran.append(f"search_files {pattern}")
        return ["a.py", "b.py"]

    @agent.tool_plain
    def write_file(path: str, text: str) -> str:
        ran.append(f"write_file {path}")
        return "written"

    @agent.tool_plain
    def run(cmd: str) -> str:
        ran.append(f"run {cmd}")
        if cmd == "flaky":
            raise ModelRetry("flaky: try again")
        raise ToolFailed(f"{cmd}: 1 failed")

    return agent


def guarded_run(tmp_path: Path, policy: Any, model: FunctionModel | TestModel, ran: list[str],
                sleep: Callable[[float], Any] | None = None) -> tuple[Session, Path, object]:
    path = tmp_path / f"{policy if isinstance(policy, str) else 'policy'}.jsonl"
    agent = agent_with_tools(model, ran)
    ended: object = None
    with Session(policy, record=path, now_ms=None) as session:
        guard = LoopGuard(session) if sleep is None else LoopGuard(session, sleep=sleep)
        try:
            ended = agent.run_sync("Wait for build 42, then fix the tests.", capabilities=[guard]).output
        except LoopGuardStopped as stop:
            ended = stop
    return session, path, ended


def verdict_table(steps: Sequence[Any]) -> list[tuple[int, str, str, tuple[tuple[str, str, str, str], ...]]]:
    return [(s.index, s.kind, str(s.action), tuple((v.engine, str(v.action), v.reason, v.message)
                                                   for v in s.verdicts)) for s in steps]


def test_a_repeated_call_is_warned_blocked_then_stopped_where_replay_says(tmp_path: Path) -> None:
    model, _ = loop_model()
    ran: list[str] = []
    session, path, ended = guarded_run(tmp_path, "default", model, ran)
    replayed = replay(load_file(path)[0], "default")
    actions = [str(s.action) for s in session.steps]
    assert actions == [str(s.action) for s in replayed.steps]
    tools = [(s.index, str(s.action)) for s in replayed.steps if s.kind == "tool"]
    first = {a: next(i for i, act in tools if act == a) for a in ("warn", "block", "stop")}
    assert first["warn"] < first["block"] < first["stop"] == replayed.stopped_at
    assert isinstance(ended, LoopGuardStopped)
    assert (ended.stopped_at, ended.stopped_by, ended.outcome) == (replayed.stopped_at, replayed.stopped_by, "stopped")
    assert (session.outcome, session.stopped_at) == ("stopped", replayed.stopped_at)
    assert "called 8 times in a row" in str(ended)


def test_a_blocked_tool_is_never_called_and_the_model_sees_why(tmp_path: Path) -> None:
    model, seen = loop_model()
    ran: list[str] = []
    session, _, _ = guarded_run(tmp_path, "default", model, ran)
    tool_steps = [s for s in session.steps if s.kind == "tool"]
    ran_steps = [s for s in tool_steps if str(s.action) in ("allow", "warn")]
    assert sum(str(s.action) == "block" for s in tool_steps) >= 2
    assert len(ran) == len(ran_steps) == 4  # the counter: blocked (and stopped) calls never reached the function
    returns = [p for parts in seen for p in parts if isinstance(p, ToolReturnPart)]
    shown = list(zip(tool_steps, returns, strict=False))  # each call's return reaches the next request
    warn, warned = next((s, r) for s, r in shown if str(s.action) == "warn")
    assert warned.outcome == "success" and warned.content == f"pending\n\n{warn.verdicts[0].message}"
    block, blocked = next((s, r) for s, r in shown if str(s.action) == "block")
    assert blocked.outcome == "failed"  # ToolFailed: no retry budget used up
    assert blocked.content == f"Error: {block.verdicts[0].message}"
    assert [r.content for s, r in shown if str(s.action) == "allow"] == ["pending", "pending"]


SCRIPT: list[Sequence[ToolCallPart] | Exception | str] = [
    [ToolCallPart("read_file", {"path": "src/app.py"}), ToolCallPart("search_files", {"pattern": "TODO"})],
    [ToolCallPart("run", {"cmd": "pytest -x"})],
    [ToolCallPart("run", {"cmd": "flaky"})],
    [ToolCallPart("read_file", '{"path": "src/app.py"'), ToolCallPart("no_such_tool", {})],  # broken, unknown
    [ToolCallPart("write_file", {"path": "src/app.py", "text": "x = 1"})],
    *[[ToolCallPart("read_file", {"path": "src/app.py"})]] * 4,
    *[[ToolCallPart("run", {"cmd": "pytest -x"})]] * 5,
    *[[REPEAT]] * 9,
    "Done: build 42 passed.",
]


@pytest.mark.parametrize("policy", preset_names())
def test_the_recording_replays_to_the_live_verdicts(tmp_path: Path, policy: str) -> None:
    model, _ = scripted(SCRIPT)
    ran: list[str] = []
    session, path, _ = guarded_run(tmp_path, policy, model, ran)
    replayed = replay(load_file(path)[0], policy)
    assert verdict_table(session.steps) == verdict_table(replayed.steps)
    assert (session.outcome, session.stopped_at, session.stopped_by) == (
        replayed.outcome, replayed.stopped_at, replayed.stopped_by)
    if policy == "pydantic-ai":
        # Pydantic AI's own rule (retries 1 per tool): `run` fails in a 2nd turn, a ToolFailed and then a
        # ModelRetry, which a trace cannot tell apart, so both are retries and the run stops on the 2nd
        assert (session.outcome, session.stopped_at, session.stopped_by) == ("stopped", 7, "failure_tracker")
        assert [v.reason for v in session.steps[7].verdicts] == ["failure_tracker.tool_retries"]
    else:
        assert len(session.steps) > 12


def test_a_warned_structured_return_keeps_its_extra_content(tmp_path: Path) -> None:
    model, seen = scripted([[ToolCallPart("status", {"job": "build-42"})]] * 3 + ["ok"])
    agent = Agent(model)

    @agent.tool_plain
    def status(job: str) -> ToolReturn:
        return ToolReturn({"state": "pending"}, content="a screenshot of the build page", metadata={"id": 7})

    with Session("default", record=tmp_path / "r.jsonl", now_ms=None) as session:
        agent.run_sync("Wait for build 42.", capabilities=[LoopGuard(session)])
    assert [str(s.action) for s in session.steps if s.kind == "tool"] == ["allow", "allow", "warn"]
    returns = [p for parts in seen for p in parts if isinstance(p, ToolReturnPart)]
    notes = [p.content for parts in seen for p in parts if isinstance(p, UserPromptPart)]
    assert returns[0].content == {"state": "pending"}  # allowed: the value itself, untouched
    assert returns[2].content.startswith('{"state":"pending"}\n\nWarning: ')  # warned: the text the model sees
    assert notes.count("a screenshot of the build page") == 3


def test_deferred_calls_are_recorded_as_not_run_and_the_paused_run_stays_incomplete(tmp_path: Path) -> None:
    model, _ = scripted([[ToolCallPart("read_file", {"path": "a.py"}), ToolCallPart("delete", {"path": "a.py"}),
                          ToolCallPart("deploy", {"env": "prod"})], "ok"])
    agent: Agent[None, str | DeferredToolRequests] = Agent(model, output_type=[str, DeferredToolRequests])
    ran: list[str] = []

    @agent.tool_plain
    def read_file(path: str) -> str:
        ran.append(path)
        return "x = 1"

    @agent.tool_plain(requires_approval=True)
    def delete(path: str) -> str:
        ran.append("delete")
        return "deleted"

    @agent.tool_plain
    def deploy(env: str) -> str:
        ran.append("deploy")
        raise CallDeferred  # the tool hands the call to something outside the run

    path = tmp_path / "paused.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        output = agent.run_sync("Clean up.", capabilities=[LoopGuard(session)]).output
    assert isinstance(output, DeferredToolRequests) and ran == ["a.py", "deploy"]
    trace = load_file(path)[0]
    not_run = [(s.call.tool, s.not_run.reason) for s in trace.steps if s.call is not None and s.not_run is not None]
    assert not_run == [
        ("delete", "not run by the agent: deferred (approval or an external tool) or skipped after the final output"),
        ("deploy", "deferred: the call needs an external tool to run it"),
    ]
    assert session.outcome == "incomplete" and all(s.done is None for s in trace.steps)
    assert verdict_table(session.steps) == verdict_table(replay(trace, "default").steps)


def test_a_failing_tools_warnings_reach_the_model_with_its_failure(tmp_path: Path) -> None:
    model, seen = scripted([[ToolCallPart("run", {"cmd": "pytest -x"})]] * 4 + ["stuck"])
    session, _, _ = guarded_run(tmp_path, "default", model, [])
    tools = [s for s in session.steps if s.kind == "tool"]
    returns = [p for parts in seen for p in parts if isinstance(p, ToolReturnPart)]
    assert [str(s.action) for s in tools] == ["allow", "allow", "warn", "warn"]
    warned = returns[2]
    assert warned.outcome == "failed"  # still the ToolFailed the tool raised
    assert warned.content == "pytest -x: 1 failed\n\n" + "\n".join(v.message for v in tools[2].verdicts)


def test_calls_run_in_order_and_broken_or_unknown_calls_are_failed_calls(tmp_path: Path) -> None:
    model, _ = scripted([*SCRIPT[:5], "done"])
    ran: list[str] = []
    session, path, output = guarded_run(tmp_path, "default", model, ran)
    assert output == "done"
    trace = load_file(path)[0]
    tools = [(s.call.tool, s.result.ok if s.result else None, s.result.error if s.result else None)
             for s in trace.steps if s.call is not None]
    assert tools[:2] == [("read_file", True, None), ("search_files", True, None)]  # the order asked, one at a time
    assert ran[:2] == ["read_file src/app.py", "search_files TODO"]
    assert tools[2] == ("run", False, "pytest -x: 1 failed")
    assert tools[3] == ("run", False, "flaky: try again")
    assert tools[4] == ("read_file", False, "invalid arguments: args: Invalid JSON: EOF while parsing an object at "
                                            "line 1 column 21")  # one line, without pydantic's docs URL
    assert tools[5] == ("no_such_tool", False, "unknown tool 'no_such_tool'")
    assert trace.steps[-1].done is not None and trace.steps[-1].done.text == "done"
    assert session.outcome == "completed"


def test_a_transient_model_error_is_retried_after_the_policy_backoff(tmp_path: Path) -> None:
    model, _ = scripted([ModelHTTPError(503, "scripted", "overloaded"), [REPEAT], "finished"])
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    ran: list[str] = []
    session, path, output = guarded_run(tmp_path, "default", model, ran, sleep=sleep)
    assert output == "finished" and waits == [1.0] and ran == ["check_status build-42"]
    assert [str(s.action) for s in session.steps][:2] == ["allow", "retry"]
    assert verdict_table(session.steps) == verdict_table(replay(load_file(path)[0], "default").steps)


def test_a_verdict_on_a_model_response_ends_the_run_before_its_calls_run(tmp_path: Path) -> None:
    policy = {"preset": "default", "failure_tracker": {"max_steps": 2}}
    model, _ = scripted([[ToolCallPart("read_file", {"path": f"f{i}.py"})] for i in range(5)])
    ran: list[str] = []
    session, path, ended = guarded_run(tmp_path, policy, model, ran)
    assert isinstance(ended, LoopGuardStopped) and ended.outcome == "exhausted"
    assert session.steps[ended.stopped_at or 0].kind == "llm" and ran == ["read_file f0.py", "read_file f1.py"]
    replayed = replay(load_file(path)[0])  # the recording names the policy mapping it ran under
    assert verdict_table(session.steps) == verdict_table(replayed.steps)
    assert (replayed.outcome, replayed.stopped_at) == ("exhausted", ended.stopped_at)


def test_a_model_error_the_policy_gives_up_on_fails_the_run(tmp_path: Path) -> None:
    model, _ = scripted([[REPEAT], ModelHTTPError(400, "scripted", "bad request")])
    ran: list[str] = []
    session, path, ended = guarded_run(tmp_path, "default", model, ran)
    assert isinstance(ended, LoopGuardStopped) and (ended.action, ended.outcome) == ("fail", "failed")
    assert isinstance(ended.__cause__, ModelHTTPError)
    assert verdict_table(session.steps) == verdict_table(replay(load_file(path)[0], "default").steps)


def test_streamed_and_iterated_runs_get_the_verdicts_replay_gives(tmp_path: Path) -> None:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[DeltaToolCalls | str]:
        if len(messages) > 24:
            yield "gave up"
            return
        yield {0: DeltaToolCall("check_status", '{"job": "build-42"}', tool_call_id=f"s{len(messages)}")}

    async def drive(how: str, session: Session) -> None:
        agent = agent_with_tools(FunctionModel(stream_function=stream) if how == "stream" else loop_model()[0], ran)
        guard = LoopGuard(session)
        if how == "stream":
            async with agent.run_stream("Wait for build 42.", capabilities=[guard]) as streamed:
                await streamed.get_output()
        else:
            async with agent.iter("Wait for build 42.", capabilities=[guard]) as run:
                async for _ in run:
                    pass

    for how in ("stream", "iter"):
        ran: list[str] = []
        path = tmp_path / f"{how}.jsonl"
        with Session("default", record=path, now_ms=None) as session, pytest.raises(LoopGuardStopped):
            asyncio.run(drive(how, session))
        replayed = replay(load_file(path)[0], "default")
        assert verdict_table(session.steps) == verdict_table(replayed.steps), how
        assert (session.outcome, len(ran)) == ("stopped", 4), how


def test_an_agent_without_a_loop_runs_unchanged_with_zero_verdicts(tmp_path: Path) -> None:
    plain: list[str] = []
    expected = agent_with_tools(TestModel(call_tools=["check_status", "read_file", "search_files"]), plain)
    unguarded = expected.run_sync("Wait for build 42, then fix the tests.")
    ran: list[str] = []
    session, _, output = guarded_run(
        tmp_path, "default", TestModel(call_tools=["check_status", "read_file", "search_files"]), ran)
    # unguarded, Pydantic AI runs a response's calls concurrently, so their order (and the order of the tool
    # returns in TestModel's output) varies from run to run; guarded, they run in the model's order
    assert json.loads(output) == json.loads(unguarded.output)
    assert sorted(ran) == sorted(plain) and len(ran) == 3
    assert [r.split()[0] for r in ran] == ["check_status", "read_file", "search_files"]
    assert session.outcome == "completed"
    assert [v for s in session.steps for v in s.verdicts] == []


class BuildState(BaseModel):
    status: str


def test_a_structured_output_is_the_answer_not_a_call(tmp_path: Path) -> None:
    agent: Agent[None, BuildState] = Agent(TestModel(), output_type=BuildState)  # answers through the final_result tool

    @agent.tool_plain
    def check_status(job: str) -> str:
        return "green"

    path = tmp_path / "structured.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        output = agent.run_sync("Is build 42 green?", capabilities=[LoopGuard(session)]).output
    trace = load_file(path)[0]
    assert [s.call.tool for s in trace.steps if s.call is not None] == ["check_status"]
    assert trace.steps[-1].done is not None and trace.steps[-1].done.text == repr(output)
    assert session.outcome == "completed"


def test_overhead_run_drives_the_agent_with_and_without_the_guard() -> None:
    overhead_run(5, guarded=False)
    overhead_run(5, guarded=True)


def test_importing_the_package_does_not_import_pydantic_ai() -> None:
    code = ("import sys, pytest_loopguard, pytest_loopguard.integrations, pytest_loopguard.live; "
            "assert 'pydantic_ai' not in sys.modules, 'pydantic_ai imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
