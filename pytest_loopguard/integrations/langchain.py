"""LangChain v1 agents under a loop policy: `create_agent(model, tools, middleware=[LoopguardMiddleware(session)])`.

    with Session("default", record="runs/today.jsonl") as session:
        agent = create_agent(model, tools, middleware=[LoopguardMiddleware(session)])
        agent.invoke({"messages": [HumanMessage("fix the failing test")]})
    print(session.outcome, [step.action for step in session.steps])

The middleware hooks the two places LangChain lets a middleware act, and only those, so it adds no node to
the agent's graph: `wrap_model_call` reports the person's new messages, then each model call (`before_llm`,
the call, `llm_result` with the calls the model asked for; the final answer as `done`), and acts on the
model-call verdicts (`compact` rewrites the conversation, `retry` / `compact_retry` call the model again);
`wrap_tool_call` reports each call before and after it runs. `warn` appends the warning to the tool's
output, `block` answers the call with the block message without running the tool, and `stop` ends the run
the way LangChain's own `ToolCallLimitMiddleware(exit_behavior="end")` does: the calls left unanswered get
an error `ToolMessage` and the agent's last message is an `AIMessage` saying why, so `invoke` returns and
`session.outcome == "stopped"`.

LangGraph runs a response's tool calls concurrently; the session needs them in the order the model asked
for them (replay's order), so each call waits for the ones before it.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..core._model import Action, LLMCall, ToolCall, ToolResult
from ..live._session import Session, ToolReply
from ..runtime._guard import Decision

__all__ = ["LoopguardMiddleware"]

ModelResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]
ToolOutput = ToolMessage | Command[Any]
_RETRIES = (Action.RETRY, Action.COMPACT_RETRY)
# what a call of a stopped response is answered (ToolCallLimitMiddleware's wording for its batch's other calls)
_NOT_REACHED = "Execution stopped before this tool call could run: the loop policy ended the run."


class LoopguardMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Runs a LangChain v1 agent under `session`'s policy and records it the way `session` records.

    Without `session`, one is built from `policy` and `record` (`middleware.session`; close it, or use it
    as a context manager, when the run is over). `agent`: the name recorded on this agent's steps when
    several agents share one session. `count_tokens`: your count of a prompt's tokens (the messages
    about to be sent, system message first), which the recording's `llm.input_tokens` then holds; without
    it the provider's count is kept as `x-input_tokens`. `sleep`: how a `retry` verdict's back-off waits
    (seconds; the async agent awaits `asyncio.sleep` unless you pass your own).
    """

    def __init__(
        self,
        session: Session | None = None,
        *,
        policy: Any = "default",
        record: Any = None,
        agent: str | None = None,
        count_tokens: Callable[[Sequence[BaseMessage]], int] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__()
        self.session = session if session is not None else Session(policy, record=record)
        self.agent = agent
        self._count_tokens = count_tokens
        self._sleep = sleep
        self._heard: set[str] = set()  # ids of the person's messages already reported
        self._scanned = 0  # how many of the conversation's messages the last model call had
        self._calls: dict[str, ToolCall] = {}  # tool_call id -> the call, for the response's calls not reported
        self._order: list[str] = []  # their ids, in the order the model asked for them
        self._several = False  # whether the last response asked for more than one call (only then can one wait)
        self._turn = threading.Condition()  # a call waits here for the ones before it (sync agents)
        self._aturn: asyncio.Condition | None = None  # the same for async agents, made in the running loop
        self._ended = ""  # why the run ended early: the final message the agent shows
        self._rewrite: list[AnyMessage] | None = None  # the conversation a compaction before this model call left

    # ---- model calls ------------------------------------------------------------------------------------
    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResult:
        """One model call under the policy: compaction before it, retries after a failed one."""
        ended = self._start(request)
        if ended is not None:
            return ended
        while True:
            request = self._ask(request)
            try:
                response = handler(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                request, delay = self._failed(request, exc)
                self._sleep(delay)
                continue
            return self._answer(response)

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelResult:
        """`wrap_model_call` for an agent run with `ainvoke` / `astream`."""
        ended = self._start(request)
        if ended is not None:
            return ended
        self._aturn = asyncio.Condition()  # bound to this run's event loop
        while True:
            request = self._ask(request)
            try:
                response = await handler(request)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                request, delay = self._failed(request, exc)
                if self._sleep is time.sleep:
                    await asyncio.sleep(delay)
                else:
                    self._sleep(delay)
                continue
            return self._answer(response)

    def _start(self, request: ModelRequest[Any]) -> AIMessage | None:
        """Report the person's new messages; once the run ended, the final message instead of a model call."""
        session = self.session
        if session.ended:
            return AIMessage(self._ended or f"The run is {session.outcome}.")
        self._rewrite = None
        heard = self._heard
        messages = request.messages
        # only the messages since the last model call can be new (all of them after a compaction shrank the list)
        count = len(messages)
        start = self._scanned if self._scanned <= count else 0
        self._scanned = count
        for i in range(start, count):
            message = messages[i]
            if isinstance(message, HumanMessage) and message.id not in heard:
                if message.id is not None:
                    heard.add(message.id)
                self._as_agent()
                session.message("user", _text(message))
        return None

    def _ask(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """`before_llm`; a `compact` verdict rewrites the conversation (and the agent's state, after the call)."""
        if self.agent is not None:
            self.session.agent = self.agent
        prompt = None
        if self._count_tokens is not None:
            system = [request.system_message] if request.system_message is not None else []
            prompt = self._count_tokens([*system, *request.messages])
        decision = self.session.before_llm(prompt)
        return request if decision.action is not Action.COMPACT else self._compacted(request, decision)

    def _failed(self, request: ModelRequest[Any], exc: Exception) -> tuple[ModelRequest[Any], float]:
        """A failed model call: the request to send again and how long to wait first, or the error re-raised."""
        decision = self.session.llm_result(LLMCall(error=f"{type(exc).__name__}: {exc}"))
        if decision.action not in _RETRIES:
            raise exc  # the provider's error ends the run, as without a policy (`fail`: the policy gave up too)
        if decision.action == Action.COMPACT_RETRY:
            request = self._compacted(request, decision)
        delay = next((v.data.get("delay_ms", 0) for v in decision.verdicts if v.action == Action.RETRY), 0)
        return request, delay / 1000

    def _answer(self, response: ModelResponse[Any]) -> ModelResult:
        """`llm_result` with the calls the response asks for; its final answer is `done`; a stop ends the run."""
        session = self.session
        result = response.result
        ai = result[-1] if result and isinstance(result[-1], AIMessage) else \
            next((m for m in reversed(result) if isinstance(m, AIMessage)), None)
        if ai is None:  # a structured-output response without a message: nothing to report
            return response
        usage = ai.usage_metadata
        llm = LLMCall(usage["input_tokens"] if usage else None, usage["output_tokens"] if usage else None,
                      None, _text(ai) or None)
        tool_calls = ai.tool_calls
        asked = [ToolCall.of(c["name"], c["args"]) for c in tool_calls]
        if self.agent is not None:
            session.agent = self.agent
        decision = session.llm_result(llm, asked)
        if session.ended:  # the turn's start stopped the run: answer every call, then say why
            self._ended = decision.message or f"The run {session.outcome}."
            answers: list[BaseMessage] = [
                ToolMessage(f"Error: {self._ended}", tool_call_id=c["id"], name=c["name"], status="error")
                for c in ai.tool_calls
            ]
            response = ModelResponse([*response.result, *answers, AIMessage(self._ended)],
                                     response.structured_response)
        elif not asked:
            session.done(True, _text(ai))
        else:
            # no call of this response runs before the model call returns, and every call of the last one has
            # answered: nothing reads these meanwhile
            order = [str(c["id"]) for c in tool_calls]
            self._calls = dict(zip(order, asked, strict=True))
            self._order = order
            self._several = len(order) > 1
        rewrite = self._rewrite
        if rewrite is None:
            return response
        # the compacted conversation replaces the state's, the response after it
        messages = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *rewrite, *response.result]
        keep: Command[Any] = Command(update={"messages": messages})
        return ExtendedModelResponse(response, keep)

    def _compacted(self, request: ModelRequest[Any], decision: Decision) -> ModelRequest[Any]:
        """The request with the conversation as the policy's compacted prompt view has it: its summary (and the
        note it injected after it) first, then the messages it kept, never starting at a tool result whose call
        it dropped. The agent's state gets the same conversation when the model has answered."""
        data = next((v.data for v in decision.verdicts if v.action in (Action.COMPACT, Action.COMPACT_RETRY)), {})
        view = self.session.guard.run.view.entries
        kept = int(data.get("preserved", len(view)))
        notes = [view[0].text] if view and view[0].role == "summary" else []
        if data.get("injected") and view:
            notes.append(view[-1].text)
        messages = request.messages
        cut = max(0, len(messages) - kept)
        while 0 < cut < len(messages) and isinstance(messages[cut], ToolMessage):
            cut -= 1
        if cut == 0 or not notes:
            return request
        # the summary is the policy's, not the person's: it is never reported as a message of theirs
        summary = HumanMessage("\n\n".join(notes), id=f"loopguard-summary-{len(self._heard)}")
        self._heard.add(str(summary.id))
        self._scanned = 0
        rewritten: list[AnyMessage] = [summary, *messages[cut:]]
        self._rewrite = rewritten
        return request.override(messages=rewritten)

    # ---- tool calls -------------------------------------------------------------------------------------
    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolOutput]) -> ToolOutput:
        """One tool call under the policy, after the calls the model asked for before it."""
        call_id = str(request.tool_call["id"])
        if self._waits(call_id):
            with self._turn:
                self._turn.wait_for(lambda: not self._waits(call_id))
        try:
            call, runs = self._before(request, call_id)
            if call is None:
                return _answer(request, _NOT_REACHED)
            if not runs:
                return self._blocked(request, call)
            try:
                out = handler(request)
            except GraphBubbleUp:
                self.session.not_run(call, "cancelled", "the agent was interrupted")
                raise
            except Exception as exc:
                self.session.after_call(call, ToolResult.failure(f"{type(exc).__name__}: {exc}"))
                raise
            return self._after(call_id, call, out)
        finally:
            if self._several:
                with self._turn:
                    self._done_with(call_id)
                    self._turn.notify_all()
            else:  # the response's only call: no other waits for it
                self._done_with(call_id)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolOutput]]
    ) -> ToolOutput:
        """`wrap_tool_call` for an agent run with `ainvoke` / `astream`."""
        call_id = str(request.tool_call["id"])
        turn = self._aturn
        if turn is None:
            turn = self._aturn = asyncio.Condition()
        if self._waits(call_id):
            async with turn:
                await turn.wait_for(lambda: not self._waits(call_id))
        try:
            call, runs = self._before(request, call_id)
            if call is None:
                return _answer(request, _NOT_REACHED)
            if not runs:
                return self._blocked(request, call)
            try:
                out = await handler(request)
            except GraphBubbleUp:
                self.session.not_run(call, "cancelled", "the agent was interrupted")
                raise
            except Exception as exc:
                self.session.after_call(call, ToolResult.failure(f"{type(exc).__name__}: {exc}"))
                raise
            return self._after(call_id, call, out)
        finally:
            if self._several:
                async with turn:
                    self._done_with(call_id)
                    turn.notify_all()
            else:
                self._done_with(call_id)

    def _waits(self, call_id: str) -> bool:
        """Whether a call of the response the model asked for before this one has not been answered yet.

        Read without the lock first: once false it stays false (only this call removes itself from the
        order; the next response's order is set after every call of this one answered)."""
        order = self._order
        return bool(order) and order[0] != call_id and call_id in order

    def _before(self, request: ToolCallRequest, call_id: str) -> tuple[ToolCall | None, bool]:
        """`before_call` for this call, and whether it runs; no call when the run ended before it was reached."""
        call = self._calls.get(call_id)
        session = self.session
        if call is None:
            if session.ended:
                return None, False
            # a call no model response announced (another middleware made it): the session says what it expected
            call = ToolCall.of(request.tool_call["name"], request.tool_call["args"])
        if self.agent is not None:
            session.agent = self.agent
        return call, session.before_call(call).runs

    def _blocked(self, request: ToolCallRequest, call: ToolCall) -> ToolMessage:
        reply = self.session.after_call(call, None)
        if self.session.ended:
            self._ended = reply.decision.message or self._ended
        return _answer(request, reply.content)

    def _after(self, call_id: str, call: ToolCall, out: ToolOutput) -> ToolOutput:
        """`after_call` with what the tool gave; the model gets the tool's output with any warnings after it."""
        session = self.session
        message = out if isinstance(out, ToolMessage) else _tool_message(out, call_id)
        if message is None:
            session.after_call(call, ToolResult(text=""))
            return out
        text = _text(message)
        result = ToolResult(ok=False, error=text) if message.status == "error" else ToolResult(text=text)
        reply = session.after_call(call, result)
        if session.ended:
            self._ended = reply.decision.message or self._ended
        shown = _shown(message, text, reply)
        if shown is message:
            return out
        if isinstance(out, ToolMessage):
            return shown
        update = dict(out.update) if isinstance(out.update, dict) else {}
        update["messages"] = [shown if m is message else m for m in update.get("messages", [])]
        return Command(graph=out.graph, update=update, resume=out.resume, goto=out.goto)

    def _done_with(self, call_id: str) -> None:
        self._calls.pop(call_id, None)
        if call_id in self._order:
            self._order.remove(call_id)
        if self.session.ended:  # the calls left of a stopped response are not reached: let them answer so
            self._calls.clear()
            self._order.clear()

    def _as_agent(self) -> None:
        if self.agent is not None:
            self.session.agent = self.agent


def _answer(request: ToolCallRequest, content: str) -> ToolMessage:
    """The error answer of a call that did not run."""
    return ToolMessage(content, tool_call_id=request.tool_call["id"], name=request.tool_call["name"], status="error")


def _text(message: BaseMessage) -> str:
    """A message's text as a plain `str` (`message.text` wraps it in an accessor); string content as it is."""
    content = message.content
    return content if type(content) is str else str(message.text)


def _tool_message(out: ToolOutput, call_id: str) -> ToolMessage | None:
    """The message answering `call_id` in what the tool gave (a ToolMessage, or a Command carrying it)."""
    if isinstance(out, ToolMessage):
        return out
    update = out.update
    messages = update.get("messages", []) if isinstance(update, dict) else []
    return next((m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id), None)


def _shown(message: ToolMessage, text: str, reply: ToolReply) -> ToolMessage:
    """`message` with the warnings the session appended to its text (the same message when there are none)."""
    if reply.content == text or not reply.content.startswith(text):
        return message
    if isinstance(message.content, str):
        return message.model_copy(update={"content": reply.content})
    extra = {"type": "text", "text": reply.content[len(text):]}
    return message.model_copy(update={"content": [*message.content, extra]})


# LangChain runs each middleware hook inside LangSmith's `traceable`, which works out the hook's signature on every
# call, tracing on or off (`inspect.signature`: about a third of the wrapper's cost per call); a signature set once
# on the function makes that a look-up
for _hook in (LoopguardMiddleware.wrap_model_call, LoopguardMiddleware.awrap_model_call,
              LoopguardMiddleware.wrap_tool_call, LoopguardMiddleware.awrap_tool_call):
    setattr(_hook, "__signature__", inspect.signature(_hook))  # noqa: B010 (mypy knows no __signature__ on a function)
