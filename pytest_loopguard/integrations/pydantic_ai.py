"""Pydantic AI agents under a loop-guard policy: a capability reporting each model request and tool call to a Session.

    from pydantic_ai import Agent
    from pytest_loopguard import Session
    from pytest_loopguard.integrations.pydantic_ai import LoopGuard, LoopGuardStopped

    with Session("default", record="runs/today.jsonl") as session:
        try:
            result = agent.run_sync("Make the tests pass.", capabilities=[LoopGuard(session)])
        except LoopGuardStopped as stop:
            ...                                   # the policy ended the run (stop.stopped_by, stop.message)

`LoopGuard` is a Pydantic AI capability (`pydantic_ai.capabilities.AbstractCapability`), the framework's own
middleware: its model-request hooks report each response and the calls it asks for (`llm_result`), its
tool-execution hook reports each call before and after it runs, and the run's start and end report the
prompt and the final answer. Verdicts act the framework's way:

- `warn`: the tool runs and its result, with the warnings appended, is what the model sees;
- `block`: the tool function is not called; the call ends with `ToolFailed(<the block message>)`, a failed
  tool result the model sees (it does not use up the tool's retry budget, as `ModelRetry` would);
- `stop` / `fail`: the run ends with `LoopGuardStopped`, an `AgentRunError` like `UsageLimitExceeded`;
- `retry` (a transient model error): the request is attempted again (`RetryModelRequest`) after the backoff.

Tool calls run one at a time in the order the model asked for them (the run is put in Pydantic AI's
`sequential` execution mode), because replay hears them in that order.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import (
    AgentRunError,
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    RetryModelRequest,
    SkipToolExecution,
    ToolFailed,
    ToolFailedError,
    ToolRetryError,
)
from pydantic_ai.messages import ModelResponse, ToolCallPart, ToolReturn, ToolReturnPart
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import DeferredToolRequests

from ..core._model import LLMCall, ToolCall, ToolResult
from ..live._session import Session, ToolReply

if TYPE_CHECKING:
    from pydantic_ai.capabilities import (
        RawToolArgs,
        ValidatedToolArgs,
        WrapRunHandler,
        WrapToolExecuteHandler,
        WrapToolValidateHandler,
    )
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import RunContext, ToolDefinition

    from ..runtime._guard import Decision

__all__ = ["LoopGuard", "LoopGuardStopped"]

# the reason recorded for a call the response asked for that Pydantic AI never ran (deferred for
# approval or to an external executor, or skipped once a final output was accepted)
_NOT_RUN_REASON = "not run by the agent: deferred (approval or an external tool) or skipped after the final output"


class LoopGuardStopped(AgentRunError):
    """The policy ended the run (`stop`, or `fail`): raised out of `agent.run` as Pydantic AI ends runs on
    its own limits (`UsageLimitExceeded`). `action`, `message`, and the step and engine that ended it."""

    def __init__(self, session: Session, decision: Decision | None = None) -> None:
        self.action = str(decision.action) if decision is not None else str(session.outcome)
        self.stopped_at = session.stopped_at
        self.stopped_by = session.stopped_by
        self.outcome = session.outcome
        reason = decision.message if decision is not None and decision.message else ""
        where = f" at step {self.stopped_at} by {self.stopped_by}" if self.stopped_by else ""
        super().__init__(f"loopguard ended the run ({self.outcome}{where})" + (f": {reason}" if reason else ""))


@dataclass(slots=True)
class _Announced:
    """A call the last response asked for, not reported to the session yet."""

    tool_call_id: str
    call: ToolCall


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


@dataclass
class LoopGuard(AbstractCapability[Any]):
    """The capability that puts one run of an agent under `session`'s policy.

    Pass it per run (`agent.run(..., capabilities=[LoopGuard(session)])`) or to the `Agent` for an agent
    that runs once: a session is one run. `sleep` waits out a `retry` verdict's backoff (seconds; tests
    pass their own). The session is the caller's: leaving its `with` block closes it and its recording.
    """

    session: Session
    sleep: Callable[[float], Awaitable[None]] = _sleep
    _announced: list[_Announced] = field(default_factory=list, init=False, repr=False)
    _invalid: dict[str, str] = field(default_factory=dict, init=False, repr=False)  # id -> validation error
    _known: frozenset[str] = field(default=frozenset(), init=False, repr=False)  # the step's function tools

    # ---- the run --------------------------------------------------------------------------------------
    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        # replay hears a response's calls one after another, in the order asked: run them that way
        with ToolManager.parallel_execution_mode("sequential"):
            return await handler()

    async def before_run(self, ctx: RunContext[Any]) -> None:
        prompt = _prompt_text(ctx.prompt)
        if prompt:
            self.session.message("user", prompt)

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        self._settle(None)
        output = result.output
        if not isinstance(output, DeferredToolRequests) and not self.session.ended:
            # a run paused on deferred calls is not over: its session stays open (incomplete)
            decision = self.session.done(None, output if isinstance(output, str) else repr(output))
            if self.session.outcome not in (None, "completed"):  # a verdict on the answer ended the run
                raise LoopGuardStopped(self.session, decision)
        return result

    # ---- model requests -------------------------------------------------------------------------------
    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        self._settle(None)  # calls of the last response that never ran are reported before the next request
        self._known = frozenset(t.name for t in request_context.model_request_parameters.function_tools)
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        output_tools = {t.name for t in request_context.model_request_parameters.output_tools}
        parts = [p for p in response.tool_calls if p.tool_name not in output_tools]  # the output is the answer
        calls = [_tool_call(p) for p in parts]
        usage = response.usage
        llm = LLMCall(usage.input_tokens, usage.output_tokens, None, response.text)
        decision = self.session.llm_result(llm, calls)
        self._announced = [_Announced(p.tool_call_id, c) for p, c in zip(parts, calls, strict=True)]
        if self.session.ended:
            raise LoopGuardStopped(self.session, decision)
        return response

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        decision = self.session.llm_result(LLMCall(error=f"{type(error).__name__}: {error}"))
        if self.session.ended:
            raise LoopGuardStopped(self.session, decision) from error
        if decision.action == "retry":
            delay_ms = max((v.data.get("delay_ms", 0) for v in decision.verdicts if v.action == "retry"), default=0)
            if delay_ms:
                await self.sleep(delay_ms / 1000)
            raise RetryModelRequest() from error
        # compact_retry: the policy would compact the prompt and ask again; this capability cannot shorten
        # Pydantic AI's history, so the error goes on (a history processor is the framework's way)
        raise error

    # ---- tool calls -----------------------------------------------------------------------------------
    async def wrap_tool_validate(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: RawToolArgs,
        handler: WrapToolValidateHandler,
    ) -> ValidatedToolArgs:
        try:
            return await handler(args)
        except Exception as e:
            # invalid arguments (pydantic's ValidationError, or a validator's ModelRetry / ToolFailed): the
            # call never runs, and is reported as a failed call in its turn
            self._invalid[call.tool_call_id] = f"invalid arguments: {_validation_text(e)}"
            raise

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        announced = self._settle(call.tool_call_id)
        if announced is None:  # a call no response of this run asked for (a resumed approval): not guarded
            return await handler(args)
        session, guarded = self.session, announced.call
        decision = session.before_call(guarded)
        if not decision.runs:
            reply = session.after_call(guarded, None)
            if session.ended:
                raise LoopGuardStopped(session, decision)
            raise ToolFailed(reply.content)  # blocked: the function is not called; the model sees why
        try:
            value = await handler(args)
        except (CallDeferred, ApprovalRequired) as e:
            needs = "approval" if isinstance(e, ApprovalRequired) else "an external tool to run it"
            session.not_run(guarded, "cancelled", f"deferred: the call needs {needs}")
            raise
        except SkipToolExecution as skip:  # another capability answered for the tool
            reply = session.after_call(guarded, ToolResult(text=_model_text(skip.result)))
            self._stop_if_ended(reply)
            raise
        except ToolRetryError as e:  # the tool raised ModelRetry: a failure the model is asked to correct
            e.tool_retry = self._failed(guarded, e.tool_retry)
            raise
        except ToolFailedError as e:
            e.tool_failed = self._failed(guarded, e.tool_failed)
            raise
        except Exception as e:
            reply = session.after_call(guarded, ToolResult.failure(f"{type(e).__name__}: {e}"))
            self._stop_if_ended(reply)
            raise
        text = _model_text(value)
        reply = session.after_call(guarded, ToolResult(text=text))
        self._stop_if_ended(reply)
        if reply.content != text:  # warnings reach the model after the result, as the Guard's prompt view has it
            return _with_text(value, reply.content)
        return value

    # ---- helpers --------------------------------------------------------------------------------------
    def _failed(self, call: ToolCall, part: Any) -> Any:
        """Report a call whose tool failed with the part the model will see; that part with any warnings."""
        text = part.model_response_str(wrap_if_error=False) if isinstance(part, ToolReturnPart) else str(part)
        reply = self.session.after_call(call, ToolResult.failure(text))
        self._stop_if_ended(reply)
        if reply.content != text and isinstance(part, ToolReturnPart) and isinstance(part.content, str):
            extra = reply.content[len(text):] if reply.content.startswith(text) else "\n\n" + reply.content
            return dataclasses.replace(part, content=part.content + extra)
        return part

    def _stop_if_ended(self, reply: ToolReply) -> None:
        if self.session.ended:
            raise LoopGuardStopped(self.session, reply.decision)

    def _settle(self, tool_call_id: str | None) -> _Announced | None:
        """Report the announced calls before `tool_call_id` (all of them for None) that never reached the
        tool hook: one with invalid arguments or an unknown tool as a failed call, any other as not run.
        Returns the call named `tool_call_id`, taken off the list, or None."""
        session = self.session
        if tool_call_id is not None and all(a.tool_call_id != tool_call_id for a in self._announced):
            return None
        while self._announced:
            first = self._announced.pop(0)
            if first.tool_call_id == tool_call_id:
                return first
            if session.ended:
                continue  # the session records the rest as not reached
            decision = session.before_call(first.call)
            error = self._invalid.pop(first.tool_call_id, None)
            if error is None and first.call.tool not in self._known:
                error = f"unknown tool {first.call.tool!r}"
            if error is not None:
                session.after_call(first.call, ToolResult.failure(error) if decision.runs else None)
            else:
                session.not_run(first.call, "cancelled", _NOT_RUN_REASON)
            if session.outcome is not None:  # (a verdict on this call ended the run)
                self._announced.clear()
                raise LoopGuardStopped(session, decision)
        self._invalid.clear()
        return None


def _tool_call(part: ToolCallPart) -> ToolCall:
    """The call as the model asked for it (its own tool name and arguments; broken JSON as `INVALID_JSON`)."""
    return ToolCall.of(part.tool_name, part.args_as_dict())


def _validation_text(error: Exception) -> str:
    """A validation failure in one line: each pydantic error as `field: message` (no docs URL, which names
    pydantic's version), or a validator's own message."""
    if isinstance(error, ModelRetry | ToolFailed):
        return error.message
    errors = getattr(error, "errors", None)
    if callable(errors):  # pydantic's ValidationError, matched by shape: pydantic is not imported here
        return "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'args'}: {e['msg']}" for e in errors())
    return f"{type(error).__name__}: {error}"


def _prompt_text(prompt: str | Sequence[Any] | None) -> str:
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    return "\n".join(p for p in prompt if isinstance(p, str))  # the text of a multimodal prompt


def _model_text(value: Any) -> str:
    """What the model is shown of a tool's return value (Pydantic AI's own serialisation)."""
    if isinstance(value, str):
        return value  # what most tools return, shown as it is
    if isinstance(value, ToolReturn):
        value = value.return_value
    return ToolReturnPart(tool_name="", content=value).model_response_str()


def _with_text(value: Any, text: str) -> Any:
    """The tool's return value with the model-facing text replaced (the result followed by the warnings)."""
    if isinstance(value, ToolReturn):
        return dataclasses.replace(value, return_value=text)
    return text
