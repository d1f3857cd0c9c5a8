"""What the Pydantic AI integration costs: one scripted, offline agent run with and without `LoopGuard`."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from ..live._session import Session
from .pydantic_ai import LoopGuard

__all__ = ["overhead_run"]


def _agent(calls: int) -> Agent[None, str]:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = len(messages) // 2  # the prompt, then one response and one tool return per step
        if step >= calls:
            return ModelResponse(parts=[TextPart("all steps done")])
        # a different command each step: a run the default policy lets through (bash is exempt from the
        # same-tool budget), so both runs make every call and the difference is the guard's own cost
        return ModelResponse(parts=[ToolCallPart("bash", {"command": f"echo step {step}"}, tool_call_id=f"c{step}")])

    agent = Agent(FunctionModel(answer))

    @agent.tool_plain
    def bash(command: str) -> str:
        return command.removeprefix("echo ")

    return agent


def overhead_run(calls: int, guarded: bool) -> None:
    """Run a scripted agent that makes `calls` tool calls, one per model response, then answers; under the
    `default` policy through `LoopGuard` (a session that records nothing) when `guarded`."""
    agent = _agent(calls)
    prompt = "Run each step."
    limits = UsageLimits(request_limit=None)  # Pydantic AI stops a run at 50 requests by default
    if not guarded:
        agent.run_sync(prompt, usage_limits=limits)
        return
    with Session("default", now_ms=None) as session:
        result: Any = agent.run_sync(prompt, usage_limits=limits, capabilities=[LoopGuard(session)])
    if result.output != "all steps done" or session.outcome != "completed":
        raise RuntimeError(f"the guarded bench run did not complete: {session.outcome}")
