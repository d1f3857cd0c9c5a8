"""What the OpenAI Agents SDK integration costs: one scripted, offline run of the SDK, guarded or not.

`overhead_run(calls, guarded)` runs an agent whose scripted model asks for `calls` tool calls, one a response
and each with new arguments (no policy has cause to act), then answers; with `guarded` the run goes through
`LoopGuard` under `default`, without recording. The model is the SDK's own `ScriptedModel` handing back prebuilt
responses (it records each call, which both runs pay alike: a bare `Model` of ours gave the same ratio, 1.03×).
"""

from __future__ import annotations

import asyncio

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage

from ..live._session import Session
from .openai_agents import LoopGuard

__all__ = ["overhead_run"]


def _scripted(calls: int) -> ScriptedModel:
    """The SDK's own offline test model, holding `calls` prebuilt tool-call responses and then an answer."""
    usage = Usage(requests=1, input_tokens=500, output_tokens=20, total_tokens=520)
    responses = [ModelResponse(output=[function_call("lookup", {"key": f"item-{i}"}, call_id=f"call_{i}")],
                               usage=usage, response_id=None) for i in range(calls)]
    responses.append(ModelResponse(output=[assistant_message("done")], usage=usage, response_id=None))
    return ScriptedModel(responses)


@function_tool
def lookup(key: str) -> str:
    """Look up one key."""
    return f"value of {key}"


def overhead_run(calls: int, guarded: bool) -> None:
    """One offline run of `calls` tool calls through the SDK's runner, under `LoopGuard` when `guarded`."""
    set_tracing_disabled(True)
    agent = Agent(name="bench", model=_scripted(calls), tools=[lookup])
    if guarded:
        with Session("default", now_ms=None) as session:
            result = asyncio.run(LoopGuard(session).run(agent, "Look the items up.", max_turns=calls + 1))
        if session.outcome != "completed":
            raise AssertionError(f"the guarded bench run ended {session.outcome}, not completed")
    else:
        result = asyncio.run(Runner.run(agent, "Look the items up.", max_turns=calls + 1))
    if result.final_output != "done":
        raise AssertionError(f"the bench run gave {result.final_output!r}")
