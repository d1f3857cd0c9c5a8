"""The Google ADK integration against the real library: a scripted `BaseLlm` run by `InMemoryRunner`, offline."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.apps import App
from google.adk.events import Event
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from pytest_loopguard import load_file, replay
from pytest_loopguard.integrations.google_adk import WARNING_KEY, LoopguardPlugin, tool_result
from pytest_loopguard.live import Session
from pytest_loopguard.runtime._policy import preset_names

Script = Callable[[int], list[types.Part]]  # the model's n-th answer (0-based) as parts


class ScriptedModel(BaseLlm):
    """ADK's model seam: answers from a script, with usage, never over the network."""

    model: str = "scripted"
    script: Script
    turns: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = self.script(self.turns)
        self.turns += 1
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=100 + 10 * self.turns,
                                                           candidates_token_count=7)
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


def call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def text(words: str) -> types.Part:
    return types.Part(text=words)


class Tools:
    """The agent's tools, counting how often ADK really ran each."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def run(self, cmd: str) -> dict[str, Any]:
        """Run a shell command."""
        self.ran.append(f"run {cmd}")
        return {"exit_code": 1, "output": "1 failed"}

    async def read_file(self, path: str) -> str:
        """Read a file."""
        self.ran.append(f"read_file {path}")
        await asyncio.sleep(0)  # yields to the loop: ADK's concurrent calls of one response interleave here
        return f"contents of {path}"


def run_agent(session: Session | None, script: Script, tools: Tools) -> list[Event]:
    """One invocation of an agent with `tools`, guarded by `session` (unguarded without one)."""
    agent = LlmAgent(name="fixer", model=ScriptedModel(script=script), tools=[tools.run, tools.read_file])
    app = App(name="fixer", root_agent=agent, plugins=[LoopguardPlugin(session)] if session is not None else [])
    runner = InMemoryRunner(app=app)

    async def go() -> list[Event]:
        adk = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
        prompt = types.Content(role="user", parts=[types.Part(text="Make the tests pass.")])
        return [e async for e in runner.run_async(user_id="u", session_id=adk.id, new_message=prompt)]

    return asyncio.run(go())


def same_failing_command(n: int) -> list[types.Part]:
    return [call("run", cmd="pytest -x")] if n < 20 else [text("I give up.")]


def responses(events: list[Event]) -> list[dict[str, Any]]:
    """What the model was shown for each call, in order."""
    return [dict(r.response or {}) for e in events for r in e.get_function_responses()]


def guarded(tmp_path: Path, policy: str, script: Script, tools: Tools) -> tuple[Session, list[Event], Path]:
    path = tmp_path / f"{policy}.jsonl"
    with Session(policy, record=path, now_ms=None) as session:
        events = run_agent(session, script, tools)
    return session, events, path


def test_a_repeated_call_is_warned_then_blocked_then_stopped_where_replay_says(tmp_path: Path) -> None:
    tools = Tools()
    session, events, path = guarded(tmp_path, "default", same_failing_command, tools)
    replayed = replay(load_file(path)[0], "default")
    live = [(s.index, s.kind, s.action) for s in session.steps]
    assert live == [(s.index, s.kind, s.action) for s in replayed.steps]
    assert (session.outcome, session.stopped_at, session.stopped_by) == (
        replayed.outcome, replayed.stopped_at, replayed.stopped_by) == ("stopped", 16, "loop_guard")
    # default's loop guard: warned at the 3rd identical call, blocked from the 5th, stopped at the 8th
    assert [a for _, kind, a in live if kind == "tool"] == ["allow"] * 2 + ["warn"] * 2 + ["block"] * 3 + ["stop"]
    shown = responses(events)
    assert [WARNING_KEY in r for r in shown] == [False, False, True, True, False, False, False, False]
    assert "called 3 times with identical parameters" in shown[2][WARNING_KEY]
    assert shown[4] == {"error": "Blocked: tool 'run' called 5 times with identical parameters. "
                                 "Try a different approach or different parameters."}
    assert shown[-1]["error"].startswith("Stopped: tool 'run' was called 8 times")
    # the stop is ADK's final response: the model was not asked again
    assert events[-1].is_final_response() and events[-1].get_function_responses()


def test_a_blocked_tool_never_runs(tmp_path: Path) -> None:
    tools = Tools()
    session, events, _ = guarded(tmp_path, "default", same_failing_command, tools)
    asked = [c for e in events for c in e.get_function_calls()]
    assert len(asked) == 8
    assert tools.ran == ["run pytest -x"] * 4  # the three blocked calls and the stopped one never ran
    assert sum(s.action == "block" for s in session.steps) == 3


def mixed(n: int) -> list[types.Part]:
    """Re-reads one file, repeats a failing command, two calls per answer at times; then answers."""
    if n < 6:
        return [call("read_file", path="app.py")]
    if n < 9:
        return [call("run", cmd="make test"), call("read_file", path=f"log{n % 2}.txt")]
    if n < 16:
        return [call("run", cmd="make test")]
    return [text("Done.")]


@pytest.mark.parametrize("policy", preset_names())
def test_the_recording_replays_to_the_live_verdicts_and_messages(tmp_path: Path, policy: str) -> None:
    session, _, path = guarded(tmp_path, policy, mixed, Tools())
    replayed = replay(load_file(path)[0], policy)

    def seen(steps: Any) -> list[Any]:
        return [(s.index, s.kind, s.tool, s.action, [v.to_dict() for v in s.verdicts])
                for s in steps]

    assert seen(session.steps) == seen(replayed.steps)
    assert (session.outcome, session.stopped_at, session.stopped_by) == (
        replayed.outcome, replayed.stopped_at, replayed.stopped_by)


def test_a_policy_that_acts_on_the_mixed_run_is_among_them(tmp_path: Path) -> None:
    """The preset loop above proves something only if the run draws verdicts of every kind under some preset."""
    actions = set()
    for policy in ("default", "gemini-cli"):
        session, _, _ = guarded(tmp_path, policy, mixed, Tools())
        actions |= {s.action for s in session.steps}
    assert {"warn", "block", "stop"} <= actions


def two_different_reads_then_answer(n: int) -> list[types.Part]:
    if n == 0:
        return [call("read_file", path="a.py"), call("read_file", path="b.py")]
    if n == 1:
        return [call("run", cmd="pytest -q")]
    return [text("All green.")]


def test_an_agent_without_a_loop_runs_to_completion_unchanged(tmp_path: Path) -> None:
    bare_tools, tools = Tools(), Tools()
    bare = run_agent(None, two_different_reads_then_answer, bare_tools)
    session, events, path = guarded(tmp_path, "default", two_different_reads_then_answer, tools)
    assert session.outcome == "completed" and session.stopped_at is None
    assert all(s.action == "allow" and not s.verdicts for s in session.steps)
    assert tools.ran == bare_tools.ran == ["read_file a.py", "read_file b.py", "run pytest -q"]
    assert responses(events) == responses(bare)
    assert events[-1].content is not None and events[-1].content.parts is not None
    assert events[-1].content.parts[0].text == "All green."
    steps = load_file(path)[0].steps
    assert [s.kind for s in steps] == ["message", "llm", "tool", "tool", "llm", "tool", "llm", "done"]
    assert [s.call.args for s in steps if s.call is not None] == [{"path": "a.py"}, {"path": "b.py"},
                                                                 {"cmd": "pytest -q"}]


def test_tool_results_follow_adks_conventions() -> None:
    assert tool_result("x") .text == "x"
    assert tool_result({"status": "error", "error_message": "no such city"}).ok is False
    assert tool_result({"error": "boom"}).error == "boom"
    failed = tool_result({"exit_code": 2, "output": "E"})
    assert (failed.ok, failed.exit_code, failed.result_text) == (False, 2, '{"exit_code": 2, "output": "E"}')
    assert tool_result({"status": "success", "report": "sunny"}).ok is True
    assert tool_result([1, 2]).text == "[1, 2]"


def test_importing_the_package_imports_no_framework() -> None:
    code = ("import sys, pytest_loopguard, pytest_loopguard.integrations, pytest_loopguard.live; "
            "assert not [m for m in sys.modules if m.startswith('google')], 'google imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# ADK 2 deprecates SequentialAgent for Workflow, which cannot yet hold LlmAgents
@pytest.mark.filterwarnings("ignore:SequentialAgent is deprecated:DeprecationWarning")
def test_in_a_multi_agent_app_each_step_names_its_agent_and_the_stop_holds_for_the_next(tmp_path: Path) -> None:
    tools, reviewer = Tools(), ScriptedModel(script=lambda n: [text("Looks good.")])
    fixer = LlmAgent(name="fixer", model=ScriptedModel(script=same_failing_command), tools=[tools.run])
    team = SequentialAgent(name="team", sub_agents=[fixer, LlmAgent(name="reviewer", model=reviewer)])
    path = tmp_path / "team.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        runner = InMemoryRunner(app=App(name="team", root_agent=team, plugins=[LoopguardPlugin(session)]))

        async def go() -> list[Event]:
            adk = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
            prompt = types.Content(role="user", parts=[types.Part(text="Fix it, then review.")])
            return [e async for e in runner.run_async(user_id="u", session_id=adk.id, new_message=prompt)]

        events = asyncio.run(go())
    assert session.outcome == "stopped" and len(tools.ran) == 4
    assert reviewer.turns == 0  # the reviewer's model was never called: the stop answered it
    last = events[-1]
    assert last.author == "reviewer" and last.content is not None and last.content.parts is not None
    assert (last.content.parts[0].text or "").startswith("Stopped: tool 'run' was called 8 times")
    steps = load_file(path)[0].steps
    assert {s.agent for s in steps if s.kind in ("llm", "tool")} == {"fixer"}
    assert [s.action for s in replay(load_file(path)[0], "default").steps] == [s.action for s in session.steps]


def test_without_a_session_the_plugin_builds_one_from_policy_and_record(tmp_path: Path) -> None:
    plugin, tools = LoopguardPlugin(policy="default", record=tmp_path / "own.jsonl"), Tools()
    agent = LlmAgent(name="fixer", model=ScriptedModel(script=same_failing_command), tools=[tools.run])
    runner = InMemoryRunner(app=App(name="fixer", root_agent=agent, plugins=[plugin]))

    async def go() -> None:
        adk = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
        prompt = types.Content(role="user", parts=[types.Part(text="Make the tests pass.")])
        async for _ in runner.run_async(user_id="u", session_id=adk.id, new_message=prompt):
            pass

    with plugin.session:
        asyncio.run(go())
    replayed = replay(load_file(tmp_path / "own.jsonl")[0])
    assert (replayed.outcome, replayed.stopped_at) == (plugin.session.outcome, plugin.session.stopped_at) == (
        "stopped", 16)
