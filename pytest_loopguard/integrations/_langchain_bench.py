"""What LoopguardMiddleware adds to a LangChain v1 agent: a scripted offline run, timed with and without it.

Beside the two, the same run under a middleware whose two wrap hooks only call the next handler
(`middleware_that_does_nothing`): what LangChain charges any middleware with those hooks (each wrap hook
call goes through a LangSmith `traceable` span set up per call, tracing on or off), so the guarded run's
cost beyond it is the Guard's own. And under LangChain's own guards against runaway agents,
`ToolCallLimitMiddleware` and `ModelCallLimitMiddleware`, with limits the run never reaches: what a
LangChain user already pays for a loop guard that only counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState, ModelCallLimitMiddleware, ToolCallLimitMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.tools import BaseTool, tool

from ..live._session import Session
from .langchain import LoopguardMiddleware

__all__ = ["BASELINES", "overhead_run"]

_USAGE: UsageMetadata = {"input_tokens": 900, "output_tokens": 20, "total_tokens": 920}
_TOOLS = ("read_file", "search_files", "write_file", "bash")  # a coding agent's mix: no call repeats


class _ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, answering from a script; it takes the agent's tools and ignores them."""

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any) -> Any:
        return self


def _script(calls: int) -> Iterator[AIMessage]:
    for i in range(calls):
        name = _TOOLS[i % len(_TOOLS)]
        yield AIMessage("", tool_calls=[{"name": name, "args": {"arg": f"item-{i}"}, "id": f"call_{i}"}],
                        usage_metadata=_USAGE)
    yield AIMessage("all done", usage_metadata=_USAGE)


def _tools() -> list[BaseTool]:
    def make(name: str) -> BaseTool:
        def run(arg: str) -> str:
            return f"{name}: {arg}: ok"

        run.__name__ = name
        run.__doc__ = f"The {name} tool."
        return tool(run)

    return [make(name) for name in _TOOLS]


class _Passthrough(AgentMiddleware[AgentState[Any], Any, Any]):
    """A middleware with LoopguardMiddleware's two hooks, each only calling the next handler."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0  # hook calls, so a test can tell the hooks ran

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self.calls += 1
        return handler(request)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self.calls += 1
        return handler(request)


def middleware_that_does_nothing(calls: int) -> _Passthrough:
    """The same run under `_Passthrough`: LangChain's own cost of a middleware with the two wrap hooks."""
    middleware = _Passthrough()
    _run(calls, [middleware])
    return middleware


def tool_call_limit(calls: int) -> dict[str, Any]:
    """The same run under LangChain's `ToolCallLimitMiddleware` (an `after_model` node), never reaching its limit;
    the agent's final state."""
    return _run(calls, [ToolCallLimitMiddleware(run_limit=10 * calls + 10)])


def model_call_limit(calls: int) -> dict[str, Any]:
    """The same run under LangChain's `ModelCallLimitMiddleware` (`before_model` and `after_model` nodes), never
    reaching its limit; the agent's final state."""
    return _run(calls, [ModelCallLimitMiddleware(run_limit=10 * calls + 10)])


# further runs the bench times in turns with the two below, each shown beside the row (`noop_middleware_us`, ...)
BASELINES: dict[str, Callable[[int], object]] = {
    "noop_middleware": middleware_that_does_nothing,
    "tool_call_limit_middleware": tool_call_limit,
    "model_call_limit_middleware": model_call_limit,
}


def overhead_run(calls: int, guarded: bool) -> None:
    """Run a scripted agent that makes `calls` tool calls (one per model response, none repeated) and then
    answers; with `guarded`, under `LoopguardMiddleware` and the `default` policy (no recording)."""
    session = Session("default") if guarded else None
    _run(calls, [LoopguardMiddleware(session)] if session is not None else [])
    if session is not None and session.outcome != "completed":  # a bench run the policy cut short measures less
        raise AssertionError(f"the guarded bench run ended {session.outcome}, at step {session.stopped_at}")


def _run(calls: int, middleware: Sequence[AgentMiddleware[Any, Any, Any]]) -> dict[str, Any]:
    agent = create_agent(_ScriptedModel(messages=_script(calls)), _tools(), middleware=middleware)
    # a superstep for the model and one for the tools per call, and one per middleware node (at most two)
    return agent.invoke({"messages": [HumanMessage("tidy the repository")]}, {"recursion_limit": 4 * calls + 10})
