"""What the Google ADK plugin costs: one scripted ADK run of `calls` tool calls, offline, with or without it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from ..live._session import Session
from .google_adk import LoopguardPlugin

__all__ = ["overhead_run"]


class _Scripted(BaseLlm):
    """Asks for `calls` reads of distinct files (no verdict interrupts the run), then answers."""

    model: str = "scripted"
    calls: int = 0
    turns: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        n = self.turns
        self.turns += 1
        part = (types.Part(function_call=types.FunctionCall(name="read_file", args={"path": f"src/m{n}.py"}))
                if n < self.calls else types.Part(text="done"))
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=100 + n, candidates_token_count=9)
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


def read_file(path: str) -> str:
    """Read a file."""
    return f"# {path}\nx = 1\n"


def overhead_run(calls: int, guarded: bool) -> None:
    """One ADK invocation of `calls` model-requested tool calls on `InMemoryRunner`; `guarded` adds the
    Loopguard plugin over a `default` session (virtual clock, no recording)."""
    agent = LlmAgent(name="bench", model=_Scripted(calls=calls), tools=[read_file])
    session = Session("default", now_ms=None) if guarded else None
    app = App(name="bench", root_agent=agent, plugins=[LoopguardPlugin(session)] if session is not None else [])
    runner = InMemoryRunner(app=app)

    async def go() -> None:
        adk = await runner.session_service.create_session(app_name=runner.app_name, user_id="bench")
        prompt = types.Content(role="user", parts=[types.Part(text="Read the sources.")])
        async for _ in runner.run_async(user_id="bench", session_id=adk.id, new_message=prompt):
            pass

    asyncio.run(go())
    if session is not None:
        session.close()
        if session.outcome != "completed":
            raise RuntimeError(f"the guarded bench run did not complete: {session.outcome} at {session.stopped_at}")
