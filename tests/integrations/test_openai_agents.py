"""The OpenAI Agents SDK integration against the real SDK, driven by its own offline test model (`ScriptedModel`).

No network and no API key: the model is scripted, tracing export is off. Each run is recorded, and the
recording replays to the verdicts the live run got.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunHooks, Runner, function_tool, set_tracing_disabled
from agents.exceptions import AgentsException
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_guardrails import ToolGuardrailFunctionOutput, tool_input_guardrail, tool_output_guardrail
from agents.usage import Usage

from pytest_loopguard import Session, load, replay
from pytest_loopguard.integrations.openai_agents import LoopGuard, LoopGuardStopped
from pytest_loopguard.runtime import preset_names

set_tracing_disabled(True)


def usage(i: int) -> Usage:
    return Usage(requests=1, input_tokens=1000 + 300 * i, output_tokens=20, total_tokens=1020 + 300 * i)


def calls_step(i: int, *calls: tuple[str, dict[str, Any]]) -> ModelStep:
    items = [function_call(name, args, call_id=f"call_{i}_{n}") for n, (name, args) in enumerate(calls)]
    return ModelStep(output=items, usage=usage(i))


def answer(i: int, text: str = "All done.") -> ModelStep:
    return ModelStep(output=[assistant_message(text)], usage=usage(i))


class Counter:
    """The tools of the tests, each counting the times its function really ran."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

        @function_tool
        def run_tests(path: str) -> str:
            """Run the test suite under `path`."""
            self.runs.append(("run_tests", {"path": path}))
            return "1 failed, 12 passed"

        @function_tool
        def read_file(path: str) -> str:
            """Read a file."""
            self.runs.append(("read_file", {"path": path}))
            return f"contents of {path}"

        @function_tool
        def run_command(command: str) -> str:
            """Run a shell command."""
            self.runs.append(("run_command", {"command": command}))
            raise RuntimeError(f"{command}: exit status 1")

        self.tools = [run_tests, read_file, run_command]


def looping_agent(counter: Counter, steps: int = 12) -> tuple[Agent[Any], ScriptedModel]:
    model = ScriptedModel([calls_step(i, ("run_tests", {"path": "tests/"})) for i in range(steps)] + [answer(steps)])
    return Agent(name="dev", instructions="Make the tests pass.", model=model, tools=counter.tools), model


def outputs_seen(model: ScriptedModel) -> dict[str, str]:
    """call id -> the tool output the model was sent for it, from the inputs of the model's calls."""
    seen: dict[str, str] = {}
    for call in model.calls:
        for item in call.input if isinstance(call.input, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                seen[item["call_id"]] = item["output"]
    return seen


def test_a_repeated_call_is_warned_then_blocked_then_stopped_where_replay_says(tmp_path: Path) -> None:
    counter = Counter()
    agent, model = looping_agent(counter)
    path = tmp_path / "loop.jsonl"
    with Session("default", record=path, now_ms=None) as session, pytest.raises(LoopGuardStopped) as stopped:
        asyncio.run(LoopGuard(session).run(agent, "Make the tests pass."))

    expected = replay(load(path), "default")
    assert list(session.steps) == list(expected.steps)
    assert (session.outcome, session.stopped_at, session.stopped_by) == (
        expected.outcome, expected.stopped_at, expected.stopped_by) == ("stopped", 16, "loop_guard")
    tools = [s for s in expected.steps if s.kind == "tool"]
    assert [s.action for s in tools] == ["allow", "allow", "warn", "warn", "block", "block", "block", "stop"]
    # the stop is the SDK's way: an AgentsException out of Runner.run, carrying the verdicts
    assert isinstance(stopped.value, AgentsException)
    assert (stopped.value.outcome, stopped.value.stopped_at, stopped.value.stopped_by) == ("stopped", 16, "loop_guard")
    assert str(stopped.value).startswith("Stopped: tool 'run_tests' was called 8 times in a row")
    # what the model was shown: the output, then the warning; the block message instead of an output
    seen = outputs_seen(model)
    assert seen["call_0_0"] == "1 failed, 12 passed"
    assert seen["call_2_0"].startswith("1 failed, 12 passed\n\nWarning: tool 'run_tests' has been called 3 times")
    assert seen["call_4_0"].startswith("Error: Blocked: tool 'run_tests' called 5 times with identical parameters")
    assert "call_7_0" not in seen  # stopped: the model is never called again


def test_a_blocked_call_never_runs_its_function(tmp_path: Path) -> None:
    counter = Counter()
    agent, _ = looping_agent(counter)
    with Session("default", record=tmp_path / "loop.jsonl", now_ms=None) as session, \
            pytest.raises(LoopGuardStopped):
        asyncio.run(LoopGuard(session).run(agent, "Make the tests pass."))
    actions = [s.action for s in session.steps if s.kind == "tool"]
    assert len(counter.runs) == actions.count("allow") + actions.count("warn") == 4
    assert actions.count("block") + actions.count("stop") == 4


def mixed_agent(counter: Counter, rounds: int = 6) -> tuple[Agent[Any], ScriptedModel]:
    """Each response reads a file, runs the tests and a command that fails, the same three every time."""
    steps = [calls_step(i, ("read_file", {"path": "src/app.py"}), ("run_tests", {"path": "tests/"}),
                        ("run_command", {"command": "pytest -x"})) for i in range(rounds)]
    model = ScriptedModel([*steps, answer(rounds, "I could not fix it.")])
    return Agent(name="dev", model=model, tools=counter.tools), model


def run_until_the_end(session: Session, agent: Agent[Any]) -> None:
    """The guarded run, to its final output or to the stop (room for 30 model calls: the SDK's default is 10)."""
    with contextlib.suppress(LoopGuardStopped):
        asyncio.run(LoopGuard(session).run(agent, "Make the tests pass.", max_turns=30))


SCENARIOS = {  # one call repeated 12 times; three calls (a read, a test run, a failing command) 6 times
    "repeat": looping_agent,
    "mixed": mixed_agent,
}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("preset", preset_names())
def test_the_recording_replays_to_the_live_verdicts_and_messages(preset: str, scenario: str, tmp_path: Path) -> None:
    counter = Counter()
    agent, _ = SCENARIOS[scenario](counter)
    path = tmp_path / f"{preset}.jsonl"
    with Session(preset, record=path, now_ms=None) as session:
        run_until_the_end(session, agent)
    expected = replay(load(path), preset)
    assert list(session.steps) == list(expected.steps)  # actions, engines, reasons, messages, data
    assert (session.outcome, session.stopped_at, session.stopped_by) == (
        expected.outcome, expected.stopped_at, expected.stopped_by)
    # a function ran exactly for the calls recorded with a result (a stop may come after a call ran)
    assert sum(1 for s in load(path).steps if s.kind == "tool" and s.result is not None) == len(counter.runs)


def test_an_agent_without_a_loop_runs_to_completion_unchanged(tmp_path: Path) -> None:
    def script() -> ScriptedModel:
        return ScriptedModel([calls_step(0, ("read_file", {"path": "a.py"}), ("run_tests", {"path": "tests/"})),
                              calls_step(1, ("read_file", {"path": "b.py"})), answer(2, "Fixed.")])

    plain_counter, guarded_counter = Counter(), Counter()
    plain_model, guarded_model = script(), script()
    plain = asyncio.run(Runner.run(Agent(name="dev", model=plain_model, tools=plain_counter.tools), "Fix it."))
    path = tmp_path / "clean.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        guarded = asyncio.run(LoopGuard(session).run(
            Agent(name="dev", model=guarded_model, tools=guarded_counter.tools), "Fix it."))

    assert guarded.final_output == plain.final_output == "Fixed."
    assert guarded_counter.runs == plain_counter.runs
    assert [c.input for c in guarded_model.calls] == [c.input for c in plain_model.calls]  # the model saw the same
    assert [v for s in session.steps for v in s.verdicts] == []
    assert session.outcome == "completed"
    assert [s.kind for s in load(path).steps] == ["message", "llm", "tool", "tool", "llm", "tool", "llm", "done"]
    assert list(replay(load(path), "default").steps) == list(session.steps)


def test_a_failing_tool_is_recorded_as_a_failure_with_what_the_model_saw(tmp_path: Path) -> None:
    counter = Counter()
    model = ScriptedModel([calls_step(0, ("run_command", {"command": "make"})), answer(1)])
    path = tmp_path / "fail.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        asyncio.run(LoopGuard(session).run(Agent(name="dev", model=model, tools=counter.tools), "Build it."))
    tool = next(s for s in load(path).steps if s.kind == "tool")
    assert tool.result is not None and not tool.result.ok
    assert tool.result.error == outputs_seen(model)["call_0_0"] == (
        "An error occurred while running the tool. Please try again.")


def test_a_call_another_guardrail_rejects_is_recorded_as_denied(tmp_path: Path) -> None:
    @tool_input_guardrail
    def no_rm(data: Any) -> ToolGuardrailFunctionOutput:
        if "rm " in json.loads(data.context.tool_arguments)["command"]:
            return ToolGuardrailFunctionOutput.reject_content("rm is not allowed")
        return ToolGuardrailFunctionOutput.allow()

    counter = Counter()
    command = counter.tools[2]
    command.tool_input_guardrails = [no_rm]
    model = ScriptedModel([calls_step(0, ("run_command", {"command": "rm -rf build"}),
                                      ("read_file", {"path": "a.py"})), answer(1)])
    path = tmp_path / "denied.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        asyncio.run(LoopGuard(session).run(Agent(name="dev", model=model, tools=counter.tools), "Clean up."))
    assert counter.runs == [("read_file", {"path": "a.py"})]
    denied = next(s for s in load(path).steps if s.kind == "tool")
    assert denied.not_run is not None and (denied.not_run.how, denied.not_run.by) == ("denied", "rule")
    assert outputs_seen(model)["call_0_0"] == "rm is not allowed"
    assert list(replay(load(path), "default").steps) == list(session.steps)


def test_a_handoff_records_each_agent_by_name_and_the_caller_hooks_still_run(tmp_path: Path) -> None:
    counter = Counter()
    worker_model = ScriptedModel([calls_step(1, ("read_file", {"path": "a.py"})), answer(2, "Read it.")])
    worker = Agent(name="worker", model=worker_model, tools=counter.tools)
    triage_model = ScriptedModel([ModelStep(output=[function_call("transfer_to_worker", {}, call_id="h1")],
                                            usage=usage(0))])
    triage = Agent(name="triage", model=triage_model, tools=counter.tools, handoffs=[worker])
    heard: list[str] = []

    class Mine(RunHooks[Any]):
        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            heard.append(agent.name)

    path = tmp_path / "handoff.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        result = asyncio.run(LoopGuard(session).run(triage, "Read a.py.", hooks=Mine()))
    assert result.final_output == "Read it."
    assert heard == ["triage", "worker", "worker"]
    steps = load(path).steps
    assert [(s.kind, s.agent) for s in steps] == [("message", None), ("llm", "triage"), ("llm", "worker"),
                                                  ("tool", "worker"), ("llm", "worker"), ("done", "worker")]
    assert list(replay(load(path), "default").steps) == list(session.steps)


def test_the_guard_can_build_and_close_its_own_session(tmp_path: Path) -> None:
    counter = Counter()
    agent, _ = looping_agent(counter)
    path = tmp_path / "own.jsonl"
    guard = LoopGuard(policy="default", record=path, now_ms=None)
    with pytest.raises(LoopGuardStopped):
        guard.run_sync(agent, "Make the tests pass.")
    assert guard.session.outcome == "stopped"
    assert list(replay(load(path)).steps) == list(guard.session.steps)


def test_importing_the_package_imports_no_sdk() -> None:
    code = ("import sys, pytest_loopguard, pytest_loopguard.integrations, pytest_loopguard.live\n"
            "pytest_loopguard.Session, pytest_loopguard.replay  # the lazy names load\n"
            "assert not [m for m in sys.modules if m == 'agents' or m.startswith('agents.')], 'agents imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_call_a_person_turns_down_on_approval_is_recorded_as_denied_by_the_user(tmp_path: Path) -> None:
    ran: list[str] = []

    @function_tool(needs_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    model = ScriptedModel([calls_step(0, ("delete", {"path": "build/"})), answer(1, "Left it.")])
    path = tmp_path / "approval.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        guard = LoopGuard(session)
        paused = asyncio.run(guard.run(Agent(name="dev", model=model, tools=[delete]), "Clean up."))
        state = paused.to_state()
        for pending in paused.interruptions:
            state.reject(pending)
        resumed = asyncio.run(Runner.run(paused.last_agent, state, hooks=guard.hooks, run_config=guard.run_config()))
    assert (resumed.final_output, ran) == ("Left it.", [])
    denied = next(s for s in load(path).steps if s.kind == "tool")
    assert denied.not_run is not None and (denied.not_run.how, denied.not_run.by) == ("denied", "user")
    assert session.outcome == "completed"
    assert list(replay(load(path), "default").steps) == list(session.steps)


def test_the_tools_own_output_guardrails_see_the_real_output(tmp_path: Path) -> None:
    @tool_output_guardrail
    def hide_paths(data: Any) -> ToolGuardrailFunctionOutput:
        return ToolGuardrailFunctionOutput.reject_content(str(data.output).replace("a.py", "<file>"))

    counter = Counter()
    read = counter.tools[1]
    read.tool_output_guardrails = [hide_paths]
    model = ScriptedModel([calls_step(0, ("read_file", {"path": "a.py"})), answer(1)])
    path = tmp_path / "own-guardrail.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        asyncio.run(LoopGuard(session).run(Agent(name="dev", model=model, tools=counter.tools), "Read a.py."))
    tool = next(s for s in load(path).steps if s.kind == "tool")
    assert tool.result is not None and tool.result.text == "contents of a.py"  # what the tool gave
    assert outputs_seen(model)["call_0_0"] == "contents of <file>"  # what the model was shown, theirs
    assert read.tool_output_guardrails == [hide_paths]  # the agent's own tools are left as they were


def test_a_streamed_run_with_the_guards_pieces_stops_where_replay_says(tmp_path: Path) -> None:
    counter = Counter()
    agent, _ = looping_agent(counter)
    path = tmp_path / "streamed.jsonl"

    async def stream(session: Session) -> None:
        guard = LoopGuard(session)
        session.message("user", "Make the tests pass.")
        streamed = Runner.run_streamed(guard.agent(agent), "Make the tests pass.", hooks=guard.hooks,
                                       run_config=guard.run_config())
        async for _event in streamed.stream_events():
            pass

    with Session("default", record=path, now_ms=None) as session, pytest.raises(LoopGuardStopped):
        asyncio.run(stream(session))
    assert (session.outcome, session.stopped_at, len(counter.runs)) == ("stopped", 16, 4)
    assert list(replay(load(path), "default").steps) == list(session.steps)


def test_a_model_call_that_raises_is_recorded_as_a_failed_call_and_ends_the_run(tmp_path: Path) -> None:
    counter = Counter()
    model = ScriptedModel([calls_step(0, ("read_file", {"path": "a.py"})),
                           ModelStep.raise_error(ConnectionError("the provider hung up"))])
    path = tmp_path / "model-error.jsonl"
    with Session("default", record=path, now_ms=None) as session, pytest.raises(ConnectionError):
        asyncio.run(LoopGuard(session).run(Agent(name="dev", model=model, tools=counter.tools), "Read a.py."))
    steps = load(path).steps
    assert [s.kind for s in steps] == ["message", "llm", "tool", "llm", "done"]
    assert steps[3].llm is not None and steps[3].llm.error == "ConnectionError: the provider hung up"
    assert steps[4].done is not None and steps[4].done.success is False
    assert list(replay(load(path), "default").steps) == list(session.steps)


@pytest.mark.parametrize("guarded", [False, True])
def test_the_overhead_bench_runs_offline_to_its_answer(guarded: bool) -> None:
    from pytest_loopguard.integrations._openai_agents_bench import overhead_run

    overhead_run(5, guarded)  # raises unless the run (guarded: under `default`) completed with the answer
