"""The Guard inside the OpenAI Agents SDK: run hooks report each model call, tool guardrails act on each call.

    from pytest_loopguard import Session
    from pytest_loopguard.integrations.openai_agents import LoopGuard, LoopGuardStopped

    with Session("default", record="runs/today.jsonl") as session:
        try:
            result = await LoopGuard(session).run(agent, "Make the tests pass.")
        except LoopGuardStopped as stop:
            ...                                    # the policy ended the run: stop.decision says why

`LoopGuard.run` is `Runner.run` with three things added, each also usable on its own (`Runner.run_streamed`,
a `Runner` of your own): `guard.agent(agent)`, a copy of the agent whose function tools carry the guard's
tool input and output guardrails (handoff agents too); `guard.hooks`, the `RunHooks` that report each model
response and the calls it asks for; `guard.run_config(config)`, which runs a response's tool calls one after
another, as replay does, and tells the guard which calls raised. What each verdict does:

- `warn`: the tool runs; its output guardrail replaces the output with the output and the warning after it
  (`reject_content`, the SDK's way to change what the model is shown), so the model reads both;
- `block`: the input guardrail rejects the call (`reject_content`): the function is not called and the model
  gets the block message as the tool's output;
- `stop` / `fail`: `LoopGuardStopped`, an `AgentsException`, is raised from the hook or guardrail where the
  verdict came, and propagates out of `Runner.run` as the SDK's own errors do (not a guardrail tripwire:
  a stop can also come on a model response, where no guardrail runs).

`compact` and `retry` are recorded but not acted on: a run hook cannot change a model call, and a failed
model call raises before any hook sees its answer.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections import deque
from collections.abc import Mapping
from typing import Any, final

from agents import Agent, FunctionTool, Handoff, RunConfig, RunHooks, Runner
from agents.exceptions import AgentsException
from agents.items import ModelResponse, TResponseInputItem
from agents.result import RunResult
from agents.run_config import ToolErrorFormatterArgs, ToolExecutionConfig
from agents.run_context import RunContextWrapper
from agents.tool import Tool
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from ..core._model import LLMCall, ToolCall, ToolResult
from ..live._adapters import RAW_ARGUMENTS
from ..live._session import Session
from ..runtime._guard import Decision

__all__ = ["LoopGuard", "LoopGuardStopped"]

_DENIED = "a tool guardrail of the Agents SDK rejected the call before it ran"
_REFUSED = "the person asked to approve the call rejected it"


class LoopGuardStopped(AgentsException):
    """The policy stopped (or failed) the run; raised out of `Runner.run`.

    `decision` holds the verdicts (its `message` is this exception's text); `outcome`, `stopped_at` and
    `stopped_by` are the session's.
    """

    def __init__(self, decision: Decision, session: Session) -> None:
        super().__init__(decision.message or f"the policy ended the run ({decision.action})")
        self.decision = decision
        self.outcome = session.outcome
        self.stopped_at = session.stopped_at
        self.stopped_by = session.stopped_by


@final
class LoopGuard:
    """One guarded run of an Agents SDK agent, reported to a live `Session` in replay's order.

    Pass the `session` (`Session("default", record="runs/x.jsonl")`), or `policy` and `record` (and any other
    `Session` keyword) to have the guard build one, which `run` then closes. One run per session.
    """

    def __init__(self, session: Session | None = None, *, policy: Any = None, **session_options: Any) -> None:
        if session is not None and (policy is not None or session_options):
            raise TypeError("pass a Session, or the policy and options to build one; not both")
        self._owned = session is None
        self.session = Session("default" if policy is None else policy, **session_options) if session is None \
            else session
        self.hooks: RunHooks[Any] = _GuardHooks(self)
        self._input = ToolInputGuardrail[Any](self._before_call, name="loopguard")
        self._output = ToolOutputGuardrail[Any](self._after_call, name="loopguard")
        self._announced: deque[tuple[str, ToolCall]] = deque()  # calls of the last response, not yet reported
        self._running: tuple[str, ToolCall] | None = None  # a call between its two guardrails
        self._raised: set[str] = set()  # the ids of calls whose tool raised (the SDK made its output)
        self._refused: set[str] = set()  # the ids of calls a person turned down (approval rejected)
        self._guarded: dict[int, Agent[Any]] = {}  # id(original agent) -> its guarded copy
        self._tools: set[str] = set()  # the names of the function tools the guard watches
        self._asking = False  # between a model call's start and its answer
        self._multi = False  # more than one agent: each step names its agent

    # ---- wiring ---------------------------------------------------------------------------------------
    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of `agent` whose function tools (and its handoff agents' tools) carry the guard's guardrails:
        first among the tool's input guardrails, first among its output guardrails."""
        guarded = self._guard_agent(agent)
        self._multi = self._multi or len(self._guarded) > 1
        return guarded

    def run_config(self, config: RunConfig | None = None) -> RunConfig:
        """`config` (or a default one) running each response's tool calls one after another, in order, and
        telling the guard which calls raised (a `tool_error_formatter` that hands on to yours)."""
        base = config if config is not None else RunConfig()
        theirs = base.tool_error_formatter

        def formatter(args: ToolErrorFormatterArgs[Any]) -> Any:
            message = theirs(args) if theirs is not None else None
            if args.kind == "tool_exception" and args.call_id:
                self._raised.add(args.call_id)  # its output guardrail sees what the model is shown
            elif args.kind == "approval_rejected" and args.call_id:
                self._refused.add(args.call_id)
            return message

        execution = base.tool_execution if base.tool_execution is not None else ToolExecutionConfig()
        return dataclasses.replace(base, tool_error_formatter=formatter,
                                   tool_execution=dataclasses.replace(execution, max_function_tool_concurrency=1))

    async def run(self, agent: Agent[Any], input: str | list[TResponseInputItem], *,
                  hooks: RunHooks[Any] | None = None, run_config: RunConfig | None = None,
                  **runner_options: Any) -> RunResult:
        """`Runner.run` under the policy: the person's prompt is reported first and the final output last.

        Raises `LoopGuardStopped` when the policy ends the run. The session is closed when the run ends with
        an exception (recording it, as `Session.close` does) and, if the guard built it, when the run is over.
        """
        guarded, options = self._start(agent, input, hooks, run_config, runner_options)
        try:
            result = await Runner.run(guarded, input, **options)
        except BaseException as exc:
            self._ended_by(exc)
            raise
        return self._finish(result)

    def run_sync(self, agent: Agent[Any], input: str | list[TResponseInputItem], *,
                 hooks: RunHooks[Any] | None = None, run_config: RunConfig | None = None,
                 **runner_options: Any) -> RunResult:
        """`run` for code without an event loop (`Runner.run_sync`)."""
        guarded, options = self._start(agent, input, hooks, run_config, runner_options)
        try:
            result = Runner.run_sync(guarded, input, **options)
        except BaseException as exc:
            self._ended_by(exc)
            raise
        return self._finish(result)

    def _start(self, agent: Agent[Any], input: str | list[TResponseInputItem], hooks: RunHooks[Any] | None,
               run_config: RunConfig | None, options: dict[str, Any]) -> tuple[Agent[Any], dict[str, Any]]:
        self._prompt(input)
        if hooks is not None:
            self.hooks = _GuardHooks(self, hooks)
        return self.agent(agent), {**options, "hooks": self.hooks, "run_config": self.run_config(run_config)}

    def _finish(self, result: RunResult) -> RunResult:
        if self._owned and not result.interruptions:  # a run paused for approval goes on in the same session
            self.session.close()
        return result

    # ---- the model ------------------------------------------------------------------------------------
    def _llm_start(self, agent: Agent[Any]) -> None:
        self._settle()
        if self._multi:
            self.session.agent = agent.name
        self._asking = True

    def _llm_end(self, agent: Agent[Any], response: ModelResponse) -> None:
        self._asking = False
        usage = response.usage
        reported = usage.requests > 0 or usage.total_tokens > 0  # a model that reports no usage leaves zeros
        text = _response_text(response)
        llm = LLMCall(usage.input_tokens if reported else None, usage.output_tokens if reported else None, None, text)
        announced = self._announced
        for item in response.output:
            if item.type == "function_call" and item.name in self._tools:
                announced.append((item.call_id, _tool_call(item.name, item.arguments)))
        decision = self.session.llm_result(llm, [call for _, call in announced])
        if self.session.ended:
            announced.clear()  # the session recorded them as never reached
            raise LoopGuardStopped(decision, self.session)

    def _agent_end(self, output: Any) -> None:
        self._settle()
        session = self.session
        if not session.ended:
            decision = session.done(True, output if isinstance(output, str) else str(output))
            if session.outcome in ("stopped", "failed", "exhausted"):  # a verdict on the final answer
                raise LoopGuardStopped(decision, session)

    # ---- the tools ------------------------------------------------------------------------------------
    def _before_call(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        call_id = context.tool_call_id
        self._settle(call_id)
        session = self.session
        if self._announced and self._announced[0][0] == call_id:
            call = self._announced.popleft()[1]
        else:  # no hooks reported the response: each call is a turn of its own (or the session says what is wrong)
            call = _tool_call(context.tool_name, context.tool_arguments)
        if self._multi:
            session.agent = data.agent.name
        decision = session.before_call(call)
        if decision.runs:
            self._running = (call_id, call)
            return ToolGuardrailFunctionOutput.allow(decision)
        reply = session.after_call(call, None)
        if session.ended:
            raise LoopGuardStopped(reply.decision, session)
        return ToolGuardrailFunctionOutput.reject_content(reply.content, reply.decision)

    def _after_call(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        running = self._running
        call_id = data.context.tool_call_id
        if running is None or running[0] != call_id:
            return ToolGuardrailFunctionOutput.allow()
        self._running = None
        output = data.output
        text = output if isinstance(output, str) else str(output)
        if call_id in self._raised:
            self._raised.discard(call_id)
            result = ToolResult.failure(text)
        else:
            result = ToolResult(text=text)
        session = self.session
        reply = session.after_call(running[1], result)
        if session.ended:
            raise LoopGuardStopped(reply.decision, session)
        if reply.content != text:  # a warning goes after the output
            return ToolGuardrailFunctionOutput.reject_content(reply.content, reply.decision)
        return ToolGuardrailFunctionOutput.allow(reply.decision)

    def _settle(self, until: str | None = None) -> None:
        """Report the calls another guardrail or an approval rejected, so the policy hears them as denied by a
        rule: the running call whose output guardrail never came (an input guardrail after the guard's rejected
        it), and the announced calls before `until` (or all) that never reached the guard's input guardrail."""
        session = self.session
        running = self._running
        if running is not None and not session.ended:
            self._running = None
            session.not_run(running[1], "denied", _DENIED, by="rule")
        announced = self._announced
        while announced and announced[0][0] != until and not session.ended:
            call_id, call = announced.popleft()
            if not session.before_call(call).runs:
                session.after_call(call, None)
            elif call_id in self._refused:
                self._refused.discard(call_id)
                session.not_run(call, "denied", _REFUSED, by="user")
            else:
                session.not_run(call, "denied", _DENIED, by="rule")

    # ---- helpers --------------------------------------------------------------------------------------
    def _prompt(self, input: str | list[TResponseInputItem]) -> None:
        if isinstance(input, str):
            self.session.message("user", input)
            return
        for item in input:
            if isinstance(item, Mapping) and item.get("role") == "user" and item.get("type", "message") == "message":
                self.session.message("user", _content_text(item.get("content")))

    def _ended_by(self, exc: BaseException) -> None:
        session = self.session
        if self._asking and not session.ended:
            session.llm_result(LLMCall(error=f"{type(exc).__name__}: {exc}"))  # the model call raised
        self._asking = False
        session.close(exc)  # the run is over: a call left running failed, and the error ends it

    def _guard_agent(self, agent: Agent[Any]) -> Agent[Any]:
        known = self._guarded.get(id(agent))
        if known is not None:
            return known
        if any(agent is copy_ for copy_ in self._guarded.values()):
            return agent  # already guarded
        tools = [self._guard_tool(t) for t in agent.tools]
        guarded = agent.clone(tools=tools, handoffs=[])
        self._guarded[id(agent)] = guarded
        guarded.handoffs = [self._guard_handoff(h) for h in agent.handoffs]  # after: handoffs may loop back
        return guarded

    def _guard_tool(self, tool: Tool) -> Tool:
        if not isinstance(tool, FunctionTool):
            return tool  # hosted, shell and computer tools have no tool guardrails
        self._tools.add(tool.name)
        if tool.tool_input_guardrails and tool.tool_input_guardrails[0] is self._input:
            return tool
        guarded = copy.copy(tool)
        guarded.tool_input_guardrails = [self._input, *(tool.tool_input_guardrails or ())]
        guarded.tool_output_guardrails = [self._output, *(tool.tool_output_guardrails or ())]
        return guarded

    def _guard_handoff(self, handoff: Agent[Any] | Handoff[Any, Any]) -> Agent[Any] | Handoff[Any, Any]:
        if isinstance(handoff, Agent):
            return self._guard_agent(handoff)
        self._multi = True
        invoke = handoff.on_invoke_handoff

        async def on_invoke_handoff(context: RunContextWrapper[Any], arguments: str) -> Any:
            return self._guard_agent(await invoke(context, arguments))

        return dataclasses.replace(handoff, on_invoke_handoff=on_invoke_handoff)


class _GuardHooks(RunHooks[Any]):
    """The run hooks that report each model call to the guard, then hand on to the caller's own hooks."""

    def __init__(self, guard: LoopGuard, inner: RunHooks[Any] | None = None) -> None:
        self._guard = guard
        self._inner = inner

    async def on_llm_start(self, context: RunContextWrapper[Any], agent: Agent[Any], system_prompt: str | None,
                           input_items: list[TResponseInputItem]) -> None:
        self._guard._llm_start(agent)
        if self._inner is not None:
            await self._inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
        self._guard._llm_end(agent, response)
        if self._inner is not None:
            await self._inner.on_llm_end(context, agent, response)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        self._guard._agent_end(output)
        if self._inner is not None:
            await self._inner.on_agent_end(context, agent, output)

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        if self._inner is not None:
            await self._inner.on_agent_start(context, agent)

    async def on_handoff(self, context: RunContextWrapper[Any], from_agent: Any, to_agent: Any) -> None:
        if self._inner is not None:
            await self._inner.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Any, tool: Tool) -> None:
        if self._inner is not None:
            await self._inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Any, tool: Tool, result: object) -> None:
        if self._inner is not None:
            await self._inner.on_tool_end(context, agent, tool, result)


def _tool_call(name: str, arguments: str) -> ToolCall:
    """The call as the policy sees it: its JSON arguments, or the raw text when they are not a JSON object
    (the same call as `live._adapters` makes of an OpenAI call, so a repeated broken call is still a loop)."""
    if not arguments:
        return ToolCall.of(name, {})
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return ToolCall.of(name, {RAW_ARGUMENTS: arguments})
    return ToolCall.of(name, parsed) if isinstance(parsed, dict) else ToolCall.of(name, {RAW_ARGUMENTS: arguments})


def _response_text(response: ModelResponse) -> str | None:
    parts = [part.text for item in response.output if item.type == "message"
             for part in item.content if part.type == "output_text"]
    return "".join(parts) if parts else None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""
