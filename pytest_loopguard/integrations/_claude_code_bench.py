"""What the Claude Agent SDK hooks cost next to the real Claude Code CLI: one `query()` of `calls` tool calls.

The CLI is the one bundled in the SDK's wheel, its model a scripted Messages API on localhost (`MessagesAPI`), so
the run is offline and each call is what a user's is minus the model's thinking time: Claude Code asks the
"model", runs its Read tool on a real file, and sends the result back.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, query

from ..live._session import Session
from ._messages_api import MessagesAPI, text, tool_use
from .claude_agent_sdk import loopguard_hooks

__all__ = ["BASELINES", "overhead_run"]


async def _nothing(hook_input: Any, tool_use_id: str | None, context: Any) -> Any:
    return {}


def hooks_that_do_nothing(calls: int) -> None:
    """The same run with hooks on the same events that answer at once: what Claude Code's hook machinery costs
    by itself, which any hook pays (the guarded run's cost beyond it is the Guard's)."""
    events = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop")
    _run(calls, {event: [HookMatcher(hooks=[_nothing])] for event in events}, None)


# further runs the bench times in turns with the two above, each shown beside the row (`noop_hooks_us`)
BASELINES: dict[str, Callable[[int], None]] = {"noop_hooks": hooks_that_do_nothing}


def overhead_run(calls: int, guarded: bool) -> None:
    """One run of Claude Code reading `calls` distinct files (no verdict interrupts it); `guarded` adds the
    Loopguard hooks over a `default` session (virtual clock, no recording)."""
    session = Session("default", now_ms=None) if guarded else None
    _run(calls, loopguard_hooks(session) if session is not None else None, session)


def _run(calls: int, hooks: Any, session: Session | None) -> None:
    def script(n: int, request: Any) -> list[dict[str, Any]]:
        return [tool_use("Read", file_path=f"src/m{n}.py")] if n < calls else text("done")

    with tempfile.TemporaryDirectory(prefix="loopguard-bench-") as folder:
        root = Path(folder)
        (root / "src").mkdir()
        (root / "home").mkdir()
        for n in range(calls):
            (root / "src" / f"m{n}.py").write_text(f"# module {n}\nx = {n}\n")
        api = MessagesAPI(script)
        with api:
            options = ClaudeAgentOptions(env=api.env(home=str(root / "home")), cwd=str(root), allowed_tools=["Read"],
                                         setting_sources=[], max_turns=calls + 2,
                                         hooks=hooks)

            async def go() -> None:
                async for _ in query(prompt="Read the sources.", options=options):
                    pass

            asyncio.run(go())
        if len(api.requests) != calls + 1:
            raise RuntimeError(f"Claude Code made {len(api.requests)} model requests, expected {calls + 1}")
        if session is not None:
            session.close()
            if session.outcome != "completed":
                raise RuntimeError(f"the guarded bench run did not complete: {session.outcome} at {session.stopped_at}")
