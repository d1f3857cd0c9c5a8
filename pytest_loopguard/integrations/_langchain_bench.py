"""What LoopguardMiddleware adds to a LangChain v1 agent: a scripted offline run, timed with and without it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.tools import BaseTool, tool

from ..live._session import Session
from .langchain import LoopguardMiddleware

__all__ = ["overhead_run"]

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


def overhead_run(calls: int, guarded: bool) -> None:
    """Run a scripted agent that makes `calls` tool calls (one per model response, none repeated) and then
    answers; with `guarded`, under `LoopguardMiddleware` and the `default` policy (no recording)."""
    session = Session("default") if guarded else None
    middleware = [LoopguardMiddleware(session)] if session is not None else []
    agent = create_agent(_ScriptedModel(messages=_script(calls)), _tools(), middleware=middleware)
    agent.invoke({"messages": [HumanMessage("tidy the repository")]}, {"recursion_limit": 2 * calls + 10})
    if session is not None and session.outcome != "completed":  # a bench run the policy cut short measures less
        raise AssertionError(f"the guarded bench run ended {session.outcome}, at step {session.stopped_at}")
