"""The Guard inside the Claude Agent SDK: hooks (`PreToolUse`, `PostToolUse`, ...) that feed a live Session.

    from claude_agent_sdk import ClaudeAgentOptions, query
    from pytest_loopguard.integrations.claude_agent_sdk import loopguard_hooks
    from pytest_loopguard.live import Session

    with Session("default", record="runs/today.jsonl") as session:
        options = ClaudeAgentOptions(hooks=loopguard_hooks(session))
        async for message in query(prompt="...", options=options):
            ...

How each verdict acts (docs/integrations/claude_agent_sdk.md): `warn` is the `additionalContext` of the
call's `PostToolUse` hook, which Claude reads after the result; `block` is a `PreToolUse` `deny` whose reason
Claude reads as the tool's result, so the tool never runs; `stop` adds `continue: false` with the message as
`stopReason`, which ends the run. Claude Code gives hooks no event around model calls, so the session hears
tool calls only (each a turn of its own, as in a trace without `llm` steps). Needs the `claude-agent-sdk`
extra; nothing else in the package imports this module.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from claude_agent_sdk import HookContext, HookInput, HookJSONOutput, HookMatcher
from claude_agent_sdk.types import HookEvent

from ..core._model import ToolCall, ToolResult
from ..live._session import Session
from ._claude_agent_sdk_cli import ScriptedCLI, Shown

__all__ = ["LoopguardHooks", "ScriptedCLI", "Shown", "loopguard_hooks", "tool_result"]


def tool_result(response: object) -> ToolResult:
    """A `PostToolUse` hook's `tool_response` as the Guard's result: a string is its text, anything else its
    JSON; a mapping with a true `is_error` / `isError` (an MCP tool's error) or an `error` is a failed call."""
    if isinstance(response, str):
        return ToolResult(text=response)
    text = json.dumps(response, ensure_ascii=False, default=str)
    if isinstance(response, Mapping):
        error = response.get("error")
        if response.get("is_error") is True or response.get("isError") is True or error:
            return ToolResult(ok=False, text=text, error=str(error) if error else None)
    return ToolResult(text=text)


def _ended(session: Session) -> bool:
    """Whether the run is over, read afresh after each event (mypy would keep an earlier `session.ended`)."""
    return session.ended


class LoopguardHooks:
    """The hook callbacks of one guarded run; `hooks()` gives them as `ClaudeAgentOptions(hooks=...)` takes them.

    Claude Code may run a message's concurrency-safe tools (reads, searches) in parallel; replay takes calls
    one after another, so a call's `PreToolUse` waits until the call before it has reported its result.
    A call allowed here that no `PostToolUse` / `PostToolUseFailure` follows (a permission rule or the user
    refused it) is reported as denied when the next call has waited `wait_s` seconds for it, the run stops
    or the next prompt arrives. Without `session`, one is built from `policy` and `record` (`hooks.session`:
    close it after the run).
    """

    def __init__(self, session: Session | None = None, *, policy: Any = "default", record: Any = None,
                 wait_s: float = 30.0) -> None:
        self.session = session if session is not None else Session(policy, record=record)
        self.wait_s = wait_s  # how long a call waits for the one before it (below Claude Code's 60 s hook timeout)
        self._open: dict[str | None, ToolCall] = {}  # tool_use_id -> a call between its Pre and Post hooks
        self._turn: asyncio.Lock | None = None  # one call at a time between before_call and after_call
        self._stop_text = ""  # the stop's message, repeated to every call made after it

    def hooks(
        self, extra: Mapping[HookEvent, Sequence[HookMatcher]] | None = None
    ) -> dict[HookEvent, list[HookMatcher]]:
        """The `hooks=` of `ClaudeAgentOptions`: the Guard's callbacks first, then `extra` (your own hooks)."""
        ours: dict[HookEvent, list[HookMatcher]] = {
            "UserPromptSubmit": [HookMatcher(hooks=[self.user_prompt_submit])],
            "PreToolUse": [HookMatcher(hooks=[self.pre_tool_use])],
            "PostToolUse": [HookMatcher(hooks=[self.post_tool_use])],
            "PostToolUseFailure": [HookMatcher(hooks=[self.post_tool_use_failure])],
            "Stop": [HookMatcher(hooks=[self.stop])],
        }
        for event, matchers in (extra or {}).items():
            ours.setdefault(event, []).extend(matchers)
        return ours

    # ---- the hook callbacks -------------------------------------------------------------------------------
    async def user_prompt_submit(self, hook_input: HookInput, tool_use_id: str | None,
                                 context: HookContext) -> HookJSONOutput:
        self._settle()
        prompt = hook_input.get("prompt")
        if isinstance(prompt, str) and prompt and not self.session.ended:
            self.session.message("user", prompt)
        return {}

    async def pre_tool_use(self, hook_input: HookInput, tool_use_id: str | None,
                           context: HookContext) -> HookJSONOutput:
        name, args = hook_input.get("tool_name"), hook_input.get("tool_input")
        if not isinstance(name, str):
            return {}
        session = self.session
        if session.ended:  # the run was stopped: Claude Code went on anyway (a hook timed out); so does the stop
            return _deny(self._stop_text, stop=True)
        if self._turn is None:
            self._turn = asyncio.Lock()  # made in the SDK's event loop
        turn = self._turn
        await self._take(turn)
        try:
            if _ended(session):
                turn.release()
                return _deny(self._stop_text, stop=True)
            agent = hook_input.get("agent_type")
            session.agent = agent if isinstance(agent, str) else None  # a subagent's calls name it
            call = ToolCall.of(name, args if isinstance(args, Mapping) else {})
            decision = session.before_call(call)
            if decision.runs:
                self._open[tool_use_id] = call  # the turn stays held until its PostToolUse
                return {}
            reply = session.after_call(call, None)
        except BaseException:
            if turn.locked() and tool_use_id not in self._open:
                turn.release()
            raise
        turn.release()
        if _ended(session):
            self._stop_text = reply.decision.message
            return _deny(self._stop_text, stop=True)
        return _deny(reply.decision.message, stop=False)

    async def post_tool_use(self, hook_input: HookInput, tool_use_id: str | None,
                            context: HookContext) -> HookJSONOutput:
        return self._after(tool_use_id, tool_result(hook_input.get("tool_response")), "PostToolUse")

    async def post_tool_use_failure(self, hook_input: HookInput, tool_use_id: str | None,
                                    context: HookContext) -> HookJSONOutput:
        error = hook_input.get("error")
        return self._after(tool_use_id, ToolResult.failure(str(error) if error else "the tool failed"),
                           "PostToolUseFailure")

    async def stop(self, hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        self._settle()
        if not self.session.ended:
            text = hook_input.get("last_assistant_message")
            self.session.done(None, text if isinstance(text, str) else "")
        return {}

    # ---- helpers ------------------------------------------------------------------------------------------
    def _after(self, tool_use_id: str | None, result: ToolResult, event: str) -> HookJSONOutput:
        call = self._open.pop(tool_use_id, None)
        if call is None:
            return {}
        try:
            reply = self.session.after_call(call, result)
        finally:
            self._release()
        body = result.result_text or ""
        note = reply.content[len(body):].strip() if reply.content.startswith(body) else reply.content
        output: dict[str, Any] = {}
        if note:
            output["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": note}
        if _ended(self.session):
            self._stop_text = reply.decision.message
            output.update(continue_=False, stopReason=self._stop_text)
        return output  # type: ignore[return-value]  # a SyncHookJSONOutput built by key

    async def _take(self, turn: asyncio.Lock) -> None:
        """The turn, once the call before has reported its result; a call that kept it `wait_s` seconds never
        ran (a permission rule or the user refused it after the hooks allowed it)."""
        if not turn.locked():
            await turn.acquire()  # free: taken at once
            return
        try:
            await asyncio.wait_for(turn.acquire(), self.wait_s)
        except TimeoutError:
            self._settle()
            await turn.acquire()

    def _release(self) -> None:
        if self._turn is not None and self._turn.locked():
            self._turn.release()

    def _settle(self) -> None:
        """Calls allowed before that never reported a result: a permission rule or the user refused them."""
        for key, call in list(self._open.items()):
            del self._open[key]
            self.session.not_run(call, "denied", "Claude Code did not run the call (a permission rule or the "
                                                 "user refused it)")
            self._release()


def _deny(message: str, *, stop: bool) -> HookJSONOutput:
    output: dict[str, Any] = {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": message}}
    if stop:
        output.update(continue_=False, stopReason=message)
    return output  # type: ignore[return-value]  # a SyncHookJSONOutput built by key


def loopguard_hooks(session: Session, extra: Mapping[HookEvent, Sequence[HookMatcher]] | None = None, *,
                    wait_s: float = 30.0) -> dict[HookEvent, list[HookMatcher]]:
    """`ClaudeAgentOptions(hooks=loopguard_hooks(session))`: the Guard's hooks over `session`, then `extra`
    (`wait_s`: see `LoopguardHooks`; build a `LoopguardHooks` for one that makes its own session)."""
    return LoopguardHooks(session, wait_s=wait_s).hooks(extra)
