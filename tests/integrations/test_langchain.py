"""LoopguardMiddleware against the real LangChain v1 `create_agent`, driven offline by LangChain's fake chat model."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import ToolException, tool

from pytest_loopguard import Session, load, replay, resolve_policy
from pytest_loopguard.core._model import Task
from pytest_loopguard.integrations.langchain import LoopguardMiddleware
from pytest_loopguard.runtime._policy import preset_names


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, which answers from a script and accepts the agent's tools."""

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any) -> Any:
        return self


class FlakyModel(ScriptedModel):
    """Fails with the given errors first, then answers from the script (a provider's transient errors)."""

    errors: list[str]

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        if self.errors:
            raise RuntimeError(self.errors.pop(0))
        return super()._generate(*args, **kwargs)


_ids = itertools.count()


def ask(*calls: tuple[str, dict[str, Any]], text: str = "") -> AIMessage:
    """A model response asking for `calls` (tool name, arguments), with usage."""
    asked = [{"name": name, "args": args, "id": f"call_{next(_ids)}"} for name, args in calls]
    usage = {"input_tokens": 120, "output_tokens": 8, "total_tokens": 128}
    return AIMessage(text, tool_calls=asked, usage_metadata=usage)


def answer(text: str) -> AIMessage:
    return AIMessage(text, usage_metadata={"input_tokens": 150, "output_tokens": 12, "total_tokens": 162})


def repeating(name: str, args: dict[str, Any], times: int = 20) -> Iterator[AIMessage]:
    """A model stuck asking for one identical call (`times` times: LangChain's recursion limit is 9999 steps)."""
    for _ in range(times):
        yield ask((name, args))
    yield answer("gave up")


class Tools:
    """The agent's tools; `ran` lists every call that actually ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        ran = self.ran

        @tool
        def read_file(path: str) -> str:
            """Read a file."""
            ran.append(("read_file", {"path": path}))
            return f"# {path}\nx = 1\n"

        @tool
        def search_files(pattern: str) -> str:
            """Search the files."""
            ran.append(("search_files", {"pattern": pattern}))
            return f"a.py:1: {pattern}"

        @tool
        def browser_snapshot() -> str:
            """The page as text."""
            ran.append(("browser_snapshot", {}))
            return "<page>checkout</page>"

        @tool
        def navigate(url: str) -> str:
            """Open a page."""
            ran.append(("navigate", {"url": url}))
            return f"opened {url}"

        @tool
        def bash(command: str) -> str:
            """Run a shell command."""
            ran.append(("bash", {"command": command}))
            raise ToolException(f"{command}: exit 1: 3 tests failed")

        bash.handle_tool_error = True  # the model gets the error as the tool's result (status "error")

        self.all = [read_file, search_files, browser_snapshot, navigate, bash]


def run_agent(script: Iterator[AIMessage], tmp_path: Path, policy: str = "default", *, tools: Tools | None = None,
              model: ScriptedModel | None = None, task: Task | None = None,
              **middleware: Any) -> tuple[Session, dict[str, Any], Path]:
    """Run a scripted agent under `policy`, recorded; the session, the agent's final state, the recording."""
    tools = tools or Tools()
    recording = tmp_path / f"{policy}.jsonl"
    with Session(policy, record=recording, now_ms=None, task=task) as session:
        agent = create_agent(model or ScriptedModel(messages=script), tools.all,
                             middleware=[LoopguardMiddleware(session, **middleware)])
        state = agent.invoke({"messages": [HumanMessage("make the checkout test pass")]})
    return session, state, recording


def tool_actions(session: Session) -> list[str]:
    return [str(step.action) for step in session.steps if step.kind == "tool"]


def assert_live_is_replay(session: Session, recording: Path, policy: Any) -> None:
    replayed = replay(load(recording), policy)
    assert list(replayed.steps) == list(session.steps)  # index, kind, tool, action and every verdict, data included
    assert (replayed.outcome, replayed.stopped_at) == (session.outcome, session.stopped_at)


# ---- the loop: warned, blocked, stopped --------------------------------------------------------------------
def test_a_repeated_call_is_warned_then_blocked_then_stopped_where_replay_says(tmp_path: Path) -> None:
    tools = Tools()
    session, state, recording = run_agent(repeating("read_file", {"path": "app.py"}), tmp_path, tools=tools)
    replayed = replay(load(recording), "default")
    assert [str(s.action) for s in replayed.steps if s.kind == "tool"] == tool_actions(session) == [
        "allow", "allow", "warn", "block", "block", "block", "block", "stop"]
    assert (replayed.outcome, replayed.stopped_at) == ("stopped", session.stopped_at) == ("stopped", 16)
    # the model saw the warning after the tool's output, the blocks as the tool's error, and the run ended
    # LangChain's way: the last message is an AIMessage saying why (ToolCallLimitMiddleware's exit_behavior="end")
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert results[2].content.startswith("# app.py\nx = 1\n\n\nWarning:") and results[2].status == "success"
    assert results[3].content.startswith("Error: BLOCKED") and results[3].status == "error"
    assert results[7].content.startswith("Error: Stopped:")
    final = state["messages"][-1]
    assert isinstance(final, AIMessage) and not final.tool_calls and final.content == results[7].content[7:]


def test_a_blocked_tool_is_never_called(tmp_path: Path) -> None:
    tools = Tools()
    session, _, _ = run_agent(repeating("read_file", {"path": "app.py"}), tmp_path, tools=tools)
    ran = [a for a in tool_actions(session) if a in ("allow", "warn")]
    assert len(tools.ran) == len(ran) == 3  # 5 blocked calls and the stopped one never reached the function


# ---- live = replay, under every preset --------------------------------------------------------------------
def busy_script() -> Iterator[AIMessage]:
    """A run that exercises every kind of engine: repeats, searches, page snapshots, navigation, failing
    commands, a ping-pong, a response with two calls, then a final answer."""
    yield from (ask(("read_file", {"path": "a.py"})) for _ in range(4))
    yield from (ask(("search_files", {"pattern": "checkout"})) for _ in range(3))
    yield from (ask(("browser_snapshot", {})) for _ in range(4))
    yield from (ask(("navigate", {"url": "https://shop.test/cart"})) for _ in range(4))
    yield from (ask(("bash", {"command": "pytest tests/test_checkout.py"})) for _ in range(6))
    for _ in range(3):
        yield ask(("read_file", {"path": "a.py"}))
        yield ask(("read_file", {"path": "b.py"}))
    yield ask(("read_file", {"path": "c.py"}), ("search_files", {"pattern": "total"}), text="two at once")
    yield answer("The checkout test passes now.")


# presets whose rules this run cannot reach: mini-swe-agent's need format errors (rejected replies) or 250 model
# calls; SWE-agent's those, a blocklisted command or timed-out commands; OpenCode's and Kilo's doom_loop three identical
# calls in one response. This LangChain run gives none of them
QUIET = frozenset({"mini-swe-agent", "swe-agent", "opencode", "kilo"})


@pytest.mark.parametrize("policy", preset_names())
def test_the_recording_replays_to_the_live_verdicts_under_every_preset(policy: str, tmp_path: Path) -> None:
    # a task opens the budget engine's accounting (openchrome); a provider's transient error reaches the context
    # engine, where the policy has one to retry it (without one the error would end the run)
    errors = ["ServiceUnavailableError: 503"] if "context" in resolve_policy(policy).engines else []
    model = FlakyModel(messages=busy_script(), errors=errors)
    session, _, recording = run_agent(iter(()), tmp_path, policy, model=model, task=Task("make the test pass"),
                                      sleep=lambda seconds: None)
    # the run gave the policy something to say (nothing, under the presets it gives nothing to: OpenCode's and
    # Kilo's doom_loop needs three identical calls in one response, which this script never makes)
    assert any(step.verdicts for step in session.steps) is (policy not in QUIET)
    assert_live_is_replay(session, recording, policy)


def test_a_response_with_several_calls_is_reported_in_the_models_order_async(tmp_path: Path) -> None:
    # LangGraph runs a response's calls concurrently; the middleware reports them in the order asked
    def script() -> Iterator[AIMessage]:
        for _ in range(6):
            yield ask(("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"}),
                      ("search_files", {"pattern": "x"}))
        yield answer("done")

    tools = Tools()
    recording = tmp_path / "async.jsonl"

    async def main() -> tuple[Session, dict[str, Any]]:
        with Session("default", record=recording, now_ms=None) as session:
            agent = create_agent(ScriptedModel(messages=script()), tools.all,
                                 middleware=[LoopguardMiddleware(session)])
            return session, await agent.ainvoke({"messages": [HumanMessage("go")]})

    session, state = asyncio.run(main())
    assert_live_is_replay(session, recording, "default")
    called = [(s.tool, str(s.action)) for s in session.steps if s.kind == "tool"]
    assert [tool for tool, _ in called[:6]] == ["read_file", "read_file", "search_files"] * 2
    assert ("read_file", "block") in called  # the loop was seen across the concurrent batches
    assert len(tools.ran) == sum(1 for _, a in called if a in ("allow", "warn"))
    # every call of every response got its answer, so the conversation stays valid for the provider
    asked = {c["id"] for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls}
    assert asked == {m.tool_call_id for m in state["messages"] if isinstance(m, ToolMessage)}


def test_a_stop_in_the_middle_of_a_response_answers_its_other_calls_without_running_them(tmp_path: Path) -> None:
    def script() -> Iterator[AIMessage]:
        for _ in range(10):
            yield ask(*[("read_file", {"path": "a.py"})] * 3)
        yield answer("gave up")

    tools = Tools()
    session, state, recording = run_agent(script(), tmp_path, tools=tools)
    assert_live_is_replay(session, recording, "default")
    assert session.outcome == "stopped"
    # the 8th read (the 2nd call of the 3rd response) stopped the run; the 3rd call was never reached
    assert [str(s.action) for s in session.steps[-3:]] == ["block", "stop", "not_reached"]
    answered = [m for m in state["messages"] if isinstance(m, ToolMessage)][-2:]
    assert answered[0].content.startswith("Error: Stopped") and answered[1].content.startswith("Execution stopped")
    assert len(tools.ran) == sum(1 for s in session.steps if s.kind == "tool" and str(s.action) in ("allow", "warn"))
    assert isinstance(state["messages"][-1], AIMessage) and state["messages"][-1].content.startswith("Stopped")


# ---- no loop: unchanged -----------------------------------------------------------------------------------
def calm_script() -> Iterator[AIMessage]:
    yield ask(("read_file", {"path": "checkout.py"}))
    yield ask(("search_files", {"pattern": "def total"}))
    yield ask(("read_file", {"path": "cart.py"}), ("navigate", {"url": "https://shop.test/"}))
    yield answer("Fixed the rounding in cart.total().")


def test_an_agent_without_a_loop_runs_to_completion_unchanged(tmp_path: Path) -> None:
    plain = create_agent(ScriptedModel(messages=calm_script()), Tools().all)
    unguarded = plain.invoke({"messages": [HumanMessage("make the checkout test pass")]})
    session, guarded, recording = run_agent(calm_script(), tmp_path)
    assert [(type(m), m.content, getattr(m, "status", None)) for m in guarded["messages"]] == [
        (type(m), m.content, getattr(m, "status", None)) for m in unguarded["messages"]]
    assert session.outcome == "completed"
    assert [s.verdicts for s in session.steps] == [()] * len(session.steps)
    assert [s.kind for s in session.steps] == ["message", "llm", "tool", "llm", "tool", "llm", "tool", "tool", "llm",
                                               "done"]
    assert_live_is_replay(session, recording, "default")


# ---- model calls: retry and compaction --------------------------------------------------------------------
def test_a_transient_model_error_is_retried_after_the_policys_backoff(tmp_path: Path) -> None:
    waited: list[float] = []
    model = FlakyModel(messages=calm_script(), errors=["503 Service Unavailable", "503 Service Unavailable"])
    session, state, recording = run_agent(iter(()), tmp_path, model=model, sleep=waited.append)
    assert waited == [1.0, 2.0]  # default: backoff_base_ms 1000, doubling
    assert session.outcome == "completed" and state["messages"][-1].content == "Fixed the rounding in cart.total()."
    assert [str(s.action) for s in session.steps[:4]] == ["allow", "retry", "retry", "allow"]
    assert_live_is_replay(session, recording, "default")


def test_an_unrecoverable_model_error_fails_the_run_and_reaches_the_caller(tmp_path: Path) -> None:
    model = FlakyModel(messages=calm_script(), errors=["invalid api key"])
    recording = tmp_path / "failed.jsonl"
    session = Session("default", record=recording, now_ms=None)
    agent = create_agent(model, Tools().all, middleware=[LoopguardMiddleware(session)])
    with pytest.raises(RuntimeError, match="invalid api key"), session:  # the session closes on the way out
        agent.invoke({"messages": [HumanMessage("go")]})
    assert (session.outcome, session.stopped_by) == ("failed", "context")
    assert_live_is_replay(session, recording, "default")


def test_a_compaction_rewrites_the_conversation_the_model_sees_and_keeps(tmp_path: Path) -> None:
    policy = {"preset": "default", "context": {"window_tokens": 400, "compact_at": 0.5, "preserve_recent": 2}}
    seen: list[list[str]] = []

    class Watching(ScriptedModel):
        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            seen.append([type(m).__name__ for m in messages])
            return super()._generate(messages, *args, **kwargs)

    def script() -> Iterator[AIMessage]:
        for i in range(8):
            yield ask(("read_file", {"path": f"part{i}.py"}))
        yield answer("read them all")

    recording = tmp_path / "compact.jsonl"
    with Session(policy, record=recording, now_ms=None) as session:
        agent = create_agent(Watching(messages=script()), Tools().all, middleware=[LoopguardMiddleware(session)])
        state = agent.invoke({"messages": [HumanMessage("read every part " + "carefully " * 40)]})
    compactions = [i for i, s in enumerate(session.steps) if str(s.action) == "compact"]
    assert compactions, "the small window never filled"
    # the model's prompt after the first compaction starts with the summary, not the person's long prompt
    first = sum(1 for s in session.steps[:compactions[0]] if s.kind == "llm")
    assert len(seen[first]) < len(seen[first - 1]) + 2
    assert isinstance(state["messages"][0], HumanMessage) and "summar" in str(state["messages"][0].content).lower()
    assert [s.kind for s in session.steps].count("message") == 1  # the summary is not a message of the person's
    assert session.outcome == "completed"
    assert_live_is_replay(session, recording, policy)


def test_only_the_integration_module_imports_langchain() -> None:
    code = ("import sys, pytest_loopguard, pytest_loopguard.integrations, pytest_loopguard.live; "
            "pytest_loopguard.Session('default'); "
            "print(sorted(m for m in sys.modules if m.partition('.')[0] in "
            "('langchain', 'langchain_core', 'langgraph')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_stop_when_the_turn_starts_answers_every_call_and_ends_the_run(tmp_path: Path) -> None:
    policy = {"preset": "default", "context": {"max_turns": 3}}  # the 4th turn is one too many
    tools = Tools()
    recording = tmp_path / "turns.jsonl"
    script = (ask(("read_file", {"path": f"{i}.py"}), ("search_files", {"pattern": str(i)})) for i in range(6))
    with Session(policy, record=recording, now_ms=None) as session:
        agent = create_agent(ScriptedModel(messages=script), tools.all, middleware=[LoopguardMiddleware(session)])
        state = agent.invoke({"messages": [HumanMessage("go")]})
    assert (session.outcome, session.stopped_by) == ("exhausted", "context")
    assert len(tools.ran) == 6  # three turns of two calls; the 4th response's calls never ran
    assert [str(s.action) for s in session.steps[-3:]] == ["stop", "not_reached", "not_reached"]
    # LangChain's shape for an ended run: the response, an error answer for each of its calls, a final AIMessage
    *_, asked, first, second, final = state["messages"]
    assert [c["id"] for c in asked.tool_calls] == [first.tool_call_id, second.tool_call_id]
    assert first.status == second.status == "error" and first.content == second.content == f"Error: {final.content}"
    assert isinstance(final, AIMessage) and not final.tool_calls and "turn" in final.content
    assert_live_is_replay(session, recording, policy)


# ---- the bench row's baseline ------------------------------------------------------------------------------
def test_the_bench_times_beside_the_row_a_middleware_that_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_loopguard.bench import _integrations
    from pytest_loopguard.integrations import _langchain_bench

    # the baseline is the same scripted run, through both hooks of a middleware that only calls on
    passthrough = _langchain_bench.middleware_that_does_nothing(3)
    assert passthrough.calls == 4 + 3  # four model calls (the last one answers), three tool calls
    monkeypatch.setattr(_integrations, "FRAMEWORKS", [f for f in _integrations.FRAMEWORKS if f[1] == "langchain"])
    (row,) = _integrations.integration_rows(calls=3, repeat=1)
    assert row.extra["noop_middleware_us"] > 0
    assert row.extra["ratio_over_noop_middleware"] == pytest.approx(row.min_us / row.extra["noop_middleware_us"],
                                                                    rel=1e-2)
    # and LangChain's own guards that only count, each over the unguarded run
    for name in ("noop_middleware", "tool_call_limit_middleware", "model_call_limit_middleware"):
        assert row.extra[f"{name}_ratio"] == pytest.approx(row.extra[f"{name}_us"] / row.extra["unguarded_us"],
                                                           rel=1e-2)


@pytest.mark.parametrize("baseline", ["tool_call_limit", "model_call_limit"])
def test_langchains_own_limit_middlewares_let_the_bench_run_finish(baseline: str) -> None:
    from pytest_loopguard.integrations import _langchain_bench

    state = getattr(_langchain_bench, baseline)(5)
    messages = state["messages"]
    assert sum(isinstance(m, ToolMessage) and m.status != "error" for m in messages) == 5  # every call ran
    assert messages[-1].content == "all done"  # the script's last answer: no limit ended the run


def test_the_hooks_carry_their_signature_for_langsmith() -> None:
    # LangChain wraps each hook in LangSmith's `traceable`, which asks `inspect.signature` of it on every call: a
    # signature set on the function is read instead of worked out
    for hook in ("wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call"):
        function = getattr(LoopguardMiddleware, hook)
        assert list(vars(function)["__signature__"].parameters) == ["self", "request", "handler"]
        assert list(inspect.signature(getattr(LoopguardMiddleware(), hook)).parameters) == ["request", "handler"]
