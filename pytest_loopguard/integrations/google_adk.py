"""The Guard inside Google ADK: a runner plugin that feeds a live Session from ADK's model and tool callbacks.

    from google.adk.runners import InMemoryRunner
    from pytest_loopguard.integrations.google_adk import LoopguardPlugin
    from pytest_loopguard.live import Session

    with Session("default", record="runs/today.jsonl") as session:
        runner = InMemoryRunner(agent=agent, plugins=[LoopguardPlugin(session)])
        async for event in runner.run_async(user_id=..., session_id=..., new_message=...):
            ...

How each verdict acts (docs/integrations/google_adk.md): `warn` adds a `loopguard` key to the tool's result
dict; `block` answers the call from `before_tool_callback` with `{"error": ...}`, so the tool function never
runs; `stop` makes the last event ADK's final response (a tool response with `skip_summarization`, or the
model's answer replaced by the stop message) and answers any later model call with it. Needs the
`google-adk` extra; nothing else in the package imports this module.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from ..core._model import LLMCall, ToolCall, ToolResult
from ..errors import SessionError
from ..live._session import Session

__all__ = ["WARNING_KEY", "LoopguardPlugin", "tool_result"]

#: the key of a tool's result dict that carries the Guard's warnings to the model
WARNING_KEY = "loopguard"
_ERROR_STATUSES = frozenset({"error", "failed", "failure"})


def tool_result(value: object) -> ToolResult:
    """An ADK tool's return value as the Guard's result: a string is its text; anything else its JSON.

    A dict follows ADK's conventions for a failed call: a truthy `error` or `error_message`, or a `status`
    of error; an integer `exit_code` is kept (non-zero is a failure, as in a trace file)."""
    if isinstance(value, str):
        return ToolResult(text=value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if not isinstance(value, dict):
        return ToolResult(text=text)
    error = value.get("error") or value.get("error_message")
    code = value.get("exit_code")
    exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    status = value.get("status")
    failed = bool(error) or (isinstance(status, str) and status.lower() in _ERROR_STATUSES) or bool(exit_code)
    if not failed:
        return ToolResult(text=text, exit_code=exit_code)
    return ToolResult(ok=False, text=text, error=str(error) if error else None, exit_code=exit_code)


def _ended(session: Session) -> bool:
    """Whether the run is over, read afresh after each event (mypy would keep an earlier `session.ended`)."""
    return session.ended


def _message(content: str) -> str:
    """The block or stop message of a reply (`Error: ...`): the `error` of ADK's tool response says it is one."""
    return content.removeprefix("Error: ")


def _final(text: str) -> LlmResponse:
    """A model answer with no function call: ADK takes it as the agent's final response."""
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


class LoopguardPlugin(BasePlugin):
    """Guards one ADK invocation (`runner.run_async(...)`) with a live `Session`; pass it in the runner's `plugins`.

    The plugin reports the user's message, each model call (`before_model_callback` / `after_model_callback`),
    each tool call (`before_tool_callback` / `after_tool_callback` / `on_tool_error_callback`) and the final
    answer (`after_run_callback`) to the session, in replay's order. ADK runs a response's function calls
    concurrently; the plugin lets one call at a time through (in the response's order), as replay does.
    `count_prompt`: your token count of an `LlmRequest`, for the recording's `llm.input_tokens` (ADK knows the
    prompt's size only after the call: without it the provider's count is kept as `x-input_tokens`).
    A nested invocation (an `AgentTool`'s agent, which inherits the runner's plugins) is one call of the
    guarded agent: its own events are not reported. Build a new Session and plugin for each invocation.
    Without `session`, one is built from `policy` and `record` (`plugin.session`: close it after the run).
    """

    def __init__(
        self,
        session: Session | None = None,
        *,
        policy: Any = "default",
        record: Any = None,
        name: str = "loopguard",
        count_prompt: Callable[[LlmRequest], int | None] | None = None,
    ) -> None:
        super().__init__(name=name)
        self.session = session if session is not None else Session(policy, record=record)
        self._count_prompt = count_prompt
        self._invocation: str | None = None  # the guarded invocation's id: nested ones are not reported
        self._multi_agent = False  # record each step's agent only where there is more than one
        self._announced: list[ToolCall] = []  # calls of the last response not reported yet, in order
        self._open: dict[str | None, ToolCall] = {}  # function call id -> the call between before and after
        self._answered: set[str | None] = set()  # calls the plugin answered itself (blocked, or after the end)
        self._turn: asyncio.Lock | None = None  # one call at a time between before_call and after_call
        self._final_text: str | None = None  # the model's last answer without function calls
        self._stop_text = ""  # what the model is shown once the run has ended

    # ---- which invocation ---------------------------------------------------------------------------------
    def _ours(self, invocation_id: str) -> bool:
        return invocation_id == self._invocation

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> types.Content | None:
        if self._invocation is None:
            self._invocation = invocation_context.invocation_id
            self._multi_agent = bool(getattr(invocation_context.agent, "sub_agents", None))
            self._turn = asyncio.Lock()  # made in the invocation's event loop
        elif not self._open and not self._ours(invocation_context.invocation_id):
            raise SessionError("a LoopguardPlugin guards one invocation: build a new Session and plugin for "
                               "each runner.run_async(...)")
        return None

    async def on_user_message_callback(
        self, *, invocation_context: InvocationContext, user_message: types.Content
    ) -> types.Content | None:
        if self._invocation is None or self._ours(invocation_context.invocation_id):
            text = "".join(p.text for p in user_message.parts or () if p.text)
            if text and not self.session.ended:
                self.session.message("user", text)
        return None

    # ---- model calls --------------------------------------------------------------------------------------
    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        if not self._ours(callback_context.invocation_id):
            return None
        session = self.session
        if session.ended:  # a later agent of the run (SequentialAgent, transfer): answer it with the stop
            return _final(self._stop_text)
        self._settle("ADK never ran the call")
        if self._multi_agent:
            session.agent = callback_context.agent_name
        tokens = self._count_prompt(llm_request) if self._count_prompt is not None else None
        decision = session.before_llm(tokens)
        if _ended(session):  # a budget stopped the run before this model call: it is not made
            self._stop_text = decision.message
            return _final(decision.message)
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        if llm_response.partial or not self._ours(callback_context.invocation_id) or self.session.ended:
            return None
        parts = (llm_response.content.parts or []) if llm_response.content is not None else []
        calls = [ToolCall.of(p.function_call.name or "", p.function_call.args or {})
                 for p in parts if p.function_call is not None]
        text = "".join(p.text for p in parts if p.text and not p.thought) or None
        usage = llm_response.usage_metadata
        error = llm_response.error_message or llm_response.error_code
        llm = LLMCall(
            input_tokens=usage.prompt_token_count if usage is not None else None,
            output_tokens=usage.candidates_token_count if usage is not None else None,
            error=str(error) if error else None,
            text=text,
        )
        decision = self.session.llm_result(llm, () if llm.failed else calls)
        if _ended(self.session):  # the response's calls never run: ADK's final answer is the stop instead
            self._announced = []
            self._stop_text = decision.message
            return _final(decision.message)
        self._announced = [] if llm.failed else calls
        if not calls:
            self._final_text = text or ""
        return None

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse | None:
        if self._ours(callback_context.invocation_id) and not self.session.ended:
            self.session.llm_result(LLMCall(error=f"{type(error).__name__}: {error}"))
        return None  # ADK raises the error, as without the plugin

    # ---- tool calls ---------------------------------------------------------------------------------------
    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if not self._ours(tool_context.invocation_id):
            return None
        key = tool_context.function_call_id
        turn = self._turn
        assert turn is not None  # set by before_run_callback, which ADK runs first
        await turn.acquire()  # ADK runs a response's calls concurrently; the Guard hears them one by one
        session = self.session
        if session.ended:  # an earlier call of the batch stopped the run: this one is not reached
            turn.release()
            self._answered.add(key)
            tool_context.actions.skip_summarization = True
            return {"error": self._stop_text}
        call = ToolCall.of(tool.name, tool_args)
        if call in self._announced:
            self._announced.remove(call)
        try:
            decision = session.before_call(call)
        except BaseException:
            turn.release()
            raise
        if decision.runs:
            self._open[key] = call  # the turn stays held until its after_tool (or error) callback
            return None
        try:
            reply = session.after_call(call, None)
        finally:
            turn.release()
        self._answered.add(key)
        if _ended(session):
            self._stop_text = reply.decision.message
            tool_context.actions.skip_summarization = True  # this response is the run's last event
        return {"error": _message(reply.content)}

    async def after_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        key = tool_context.function_call_id
        if key in self._answered:  # ADK runs the after-tool callbacks on the answer a before-tool gave too
            self._answered.discard(key)
            return None
        call = self._open.pop(key, None) if self._ours(tool_context.invocation_id) else None
        if call is None:
            return None
        given = tool_result(result)
        try:
            reply = self.session.after_call(call, given)
        finally:
            self._release()
        if self.session.ended:
            self._stop_text = reply.decision.message
            tool_context.actions.skip_summarization = True
        body = given.result_text or ""
        note = reply.content[len(body):].strip() if reply.content.startswith(body) else reply.content
        if not note:
            return None  # unchanged: ADK's other callbacks see the tool's own result
        shown: dict[str, Any] = dict(result) if isinstance(result, dict) else {"result": result}
        shown[WARNING_KEY] = note
        return shown

    async def on_tool_error_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> dict[str, Any] | None:
        key = tool_context.function_call_id
        call = self._open.pop(key, None) if self._ours(tool_context.invocation_id) else None
        if call is not None:
            try:
                self.session.after_call(call, ToolResult.failure(f"{type(error).__name__}: {error}"))
            finally:
                self._release()
        return None  # ADK answers or raises as it would without the plugin

    # ---- the end ------------------------------------------------------------------------------------------
    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        if not self._ours(invocation_context.invocation_id) or self._open:
            return
        self._settle("the invocation ended before ADK ran the call")
        if not self.session.ended:
            self.session.done(None, self._final_text or "")

    # ---- helpers ------------------------------------------------------------------------------------------
    def _release(self) -> None:
        if self._turn is not None and self._turn.locked():
            self._turn.release()

    def _settle(self, reason: str) -> None:
        """Calls a response asked for that ADK never ran (its call lookup, a pause): reported as cancelled, so
        the recording's turn holds every call the response asked for."""
        session = self.session
        while self._announced and not session.ended:
            call = self._announced.pop(0)
            session.before_call(call)
            session.not_run(call, "cancelled", reason)  # a call the policy blocks here is recorded as blocked
