"""What the OpenAI Agents SDK integration costs: one scripted, offline run of the SDK, guarded or not.

`overhead_run(calls, guarded)` runs an agent whose scripted model asks for `calls` tool calls, one a response
and each with new arguments (no policy has cause to act), then answers; with `guarded` the run goes through
`LoopGuard` under `default`, without recording. The model is a bare `Model` that hands back prebuilt
responses, so the SDK's own loop and the guard are what the time measures.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, ModelSettings, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelTracing
from agents.testing import assistant_message, function_call
from agents.usage import Usage

from ..live._session import Session
from .openai_agents import LoopGuard

__all__ = ["overhead_run"]


class _ScriptedCalls(Model):
    """A model answering with the next prebuilt response each time it is called."""

    def __init__(self, calls: int) -> None:
        usage = Usage(requests=1, input_tokens=500, output_tokens=20, total_tokens=520)
        self._responses = [
            ModelResponse(output=[function_call("lookup", {"key": f"item-{i}"}, call_id=f"call_{i}")], usage=usage,
                          response_id=None)
            for i in range(calls)
        ]
        self._responses.append(ModelResponse(output=[assistant_message("done")], usage=usage, response_id=None))
        self._next = 0

    async def get_response(self, system_instructions: str | None, input: str | list[TResponseInputItem],
                           model_settings: ModelSettings, tools: list[Any], output_schema: Any, handoffs: list[Any],
                           tracing: ModelTracing, *, previous_response_id: str | None, conversation_id: str | None,
                           prompt: Any) -> ModelResponse:
        response = self._responses[self._next]
        self._next += 1
        return response

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        # the SDK's Model interface requires it; the bench calls Runner.run, which never streams
        raise NotImplementedError("the bench runs without streaming")


@function_tool
def lookup(key: str) -> str:
    """Look up one key."""
    return f"value of {key}"


def overhead_run(calls: int, guarded: bool) -> None:
    """One offline run of `calls` tool calls through the SDK's runner, under `LoopGuard` when `guarded`."""
    set_tracing_disabled(True)
    agent = Agent(name="bench", model=_ScriptedCalls(calls), tools=[lookup])
    if guarded:
        with Session("default", now_ms=None) as session:
            result = asyncio.run(LoopGuard(session).run(agent, "Look the items up.", max_turns=calls + 1))
        if session.outcome != "completed":
            raise AssertionError(f"the guarded bench run ended {session.outcome}, not completed")
    else:
        result = asyncio.run(Runner.run(agent, "Look the items up.", max_turns=calls + 1))
    if result.final_output != "done":
        raise AssertionError(f"the bench run gave {result.final_output!r}")
