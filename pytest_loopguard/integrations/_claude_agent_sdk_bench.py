"""What the Claude Agent SDK hooks cost: one scripted `query()` of `calls` tool calls, offline, with or without them."""

from __future__ import annotations

import asyncio
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, query

from ..live._session import Session
from ._claude_agent_sdk_cli import ScriptedCLI
from .claude_agent_sdk import loopguard_hooks

__all__ = ["overhead_run"]


def overhead_run(calls: int, guarded: bool) -> None:
    """One `query()` over a `ScriptedCLI` that asks for `calls` reads of distinct files (no verdict interrupts
    it); `guarded` adds the Loopguard hooks over a `default` session (virtual clock, no recording).

    The unguarded run sends no hook requests at all, so the difference is the hooks' whole cost: the SDK's
    control round trips (two per call) as well as the Guard. The scripted CLI stands in for Claude Code and
    its model at next to no cost, so the ratio is against the SDK's message handling alone: read the
    difference per call (about 140 µs here, 85 of them the SDK's round trips) against a real turn's model call."""

    def script(n: int) -> list[dict[str, Any]]:
        if n < calls:
            return [{"type": "tool_use", "name": "Read", "input": {"file_path": f"/src/m{n}.py"}}]
        return [{"type": "text", "text": "done"}]

    cli = ScriptedCLI(script, {"Read": lambda args: f"# {args['file_path']}\nx = 1\n"}, max_turns=calls + 1)
    session = Session("default", now_ms=None) if guarded else None
    options = ClaudeAgentOptions(hooks=loopguard_hooks(session)) if session is not None else ClaudeAgentOptions()

    async def go() -> None:
        async for _ in query(prompt="Read the sources.", options=options, transport=cli):
            pass

    asyncio.run(go())
    if session is not None:
        session.close()
        if session.outcome != "completed":
            raise RuntimeError(f"the guarded bench run did not complete: {session.outcome} at {session.stopped_at}")
