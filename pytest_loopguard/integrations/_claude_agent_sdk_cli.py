"""A scripted stand-in for the Claude Code CLI behind the Claude Agent SDK's `Transport`: runs hooks, no network.

The SDK talks to Claude Code over a `Transport` (JSON lines both ways) and answers the CLI's control requests
(`hook_callback`) with the hooks of `ClaudeAgentOptions`. `ScriptedCLI` plays the CLI's side of that protocol
from a script: it answers `initialize`, and for each of the script's assistant messages it runs the
`PreToolUse` hooks of each `tool_use` (a `deny` skips the tool, its reason is the tool's result), runs the
tool, runs `PostToolUse` (or `PostToolUseFailure` when the tool raised), and ends the run with a `result`
message after an answer without tool calls (after the `Stop` hooks) or once a hook says `continue: false`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import Transport

__all__ = ["ScriptedCLI", "Shown"]

Script = Callable[[int], list[dict[str, Any]]]  # the n-th assistant message's content blocks (0-based)
Tool = Callable[[dict[str, Any]], Any]  # a tool's input -> its output (raise for a failed call)
_END = object()


@dataclass(frozen=True)
class Shown:
    """What the model was given for one tool call: the result (or the deny reason) and the hooks' context."""

    tool_use_id: str
    content: str
    is_error: bool
    context: str = ""  # the hooks' `additionalContext`, which Claude Code adds after the result


class ScriptedCLI(Transport):
    """Claude Code's side of the control protocol, played from `script` with `tools` standing in for its tools.

    `script(n)` gives the n-th assistant message's content blocks: `{"type": "tool_use", "name": ...,
    "input": {...}}` (an `id` is added) or `{"type": "text", "text": ...}`. `shown` lists what the model was
    given for each call, `ran` the calls whose tool really ran, `stop_reason` the hooks' `stopReason`.
    `parallel`: a message's calls go through their hooks concurrently (Claude Code's read-only tools do).
    `refuse`: tools whose calls a permission rule refuses once the `PreToolUse` hooks allowed them (no
    `PostToolUse` follows; Claude is told the call was denied).
    """

    def __init__(self, script: Script, tools: Mapping[str, Tool], *, parallel: bool = False,
                 refuse: Collection[str] = (), max_turns: int = 100) -> None:
        self.script = script
        self.refuse = frozenset(refuse)  # tools the permission system refuses after the hooks allowed them
        self.parallel = parallel  # run a message's calls concurrently, as Claude Code runs its read-only tools
        self.tools = dict(tools)
        self.max_turns = max_turns
        self.shown: list[Shown] = []
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.stop_reason: str | None = None
        self._hooks: dict[str, list[dict[str, Any]]] = {}
        self._out: asyncio.Queue[object] = asyncio.Queue()
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._requests = 0
        self._ready = False
        self._loop_task: asyncio.Task[None] | None = None

    # ---- the Transport ----------------------------------------------------------------------------------
    async def connect(self) -> None:
        self._ready = True

    def is_ready(self) -> bool:
        return self._ready

    async def end_input(self) -> None:
        return None

    async def close(self) -> None:
        self._ready = False
        if self._loop_task is not None and not self._loop_task.done():
            self._loop_task.cancel()

    async def write(self, data: str) -> None:
        message = json.loads(data)
        kind = message.get("type")
        if kind == "control_request" and message["request"].get("subtype") == "initialize":
            self._hooks = message["request"].get("hooks") or {}
            self._out.put_nowait(_control_response(message["request_id"], {"commands": []}))
        elif kind == "control_request":  # interrupt, set_model, ...: accepted, not acted on
            self._out.put_nowait(_control_response(message["request_id"], {}))
        elif kind == "control_response":
            response = message["response"]
            waiting = self._waiting.pop(response["request_id"])
            if response.get("subtype") == "error":
                waiting.set_exception(RuntimeError(response.get("error", "hook failed")))
            else:
                waiting.set_result(response.get("response") or {})
        elif kind == "user" and self._loop_task is None:
            content = message["message"]["content"]
            prompt = content if isinstance(content, str) else "".join(
                b.get("text", "") for b in content if isinstance(b, dict))
            self._loop_task = asyncio.create_task(self._run(prompt))

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            item = await self._out.get()
            if item is _END:
                return
            assert isinstance(item, dict)
            yield item

    # ---- the agent loop -----------------------------------------------------------------------------------
    async def _run(self, prompt: str) -> None:
        try:
            turns = await self._turns(prompt)
            self._emit({"type": "result", "subtype": "success", "duration_ms": 0, "duration_api_ms": 0,
                        "is_error": False, "num_turns": turns, "session_id": "scripted",
                        "stop_reason": self.stop_reason, "result": self.stop_reason or ""})
        finally:
            self._out.put_nowait(_END)

    async def _turns(self, prompt: str) -> int:
        outputs = await self._hook("UserPromptSubmit", {"prompt": prompt})
        if self._stopped(outputs):
            return 0
        for n in range(self.max_turns):
            blocks = [dict(b, id=f"toolu_{n}_{i}") if b.get("type") == "tool_use" else b
                      for i, b in enumerate(self.script(n))]
            self._emit({"type": "assistant", "session_id": "scripted", "parent_tool_use_id": None,
                        "message": {"role": "assistant", "model": "scripted", "content": blocks,
                                    "usage": {"input_tokens": 100 + 10 * n, "output_tokens": 7}}})
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            if not uses:
                text = "".join(b.get("text", "") for b in blocks)
                await self._hook("Stop", {"stop_hook_active": False, "last_assistant_message": text})
                return n + 1
            results = []
            if self.parallel:
                results = [r for r, _ in await asyncio.gather(*(self._call(use) for use in uses))]
            else:
                for use in uses:
                    result, stop = await self._call(use)
                    results.append(result)
                    if stop:
                        break
            self._emit({"type": "user", "session_id": "scripted", "parent_tool_use_id": None,
                        "message": {"role": "user", "content": results}})
            if self.stop_reason is not None:
                return n + 1
        return self.max_turns

    async def _call(self, use: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """One tool call through the hooks: the tool_result block, and whether a hook ended the run."""
        name, args, use_id = use["name"], dict(use.get("input") or {}), use["id"]
        base = {"tool_name": name, "tool_input": args, "tool_use_id": use_id}
        outputs = await self._hook("PreToolUse", base, use_id, name)
        deny = next((o["hookSpecificOutput"] for o in outputs
                     if o.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"), None)
        if deny is not None or self._stopped(outputs):
            reason = (deny or {}).get("permissionDecisionReason") or self.stop_reason or "denied by a hook"
            return self._result(use_id, reason, True, ""), self._stopped(outputs)
        if name in self.refuse:
            return self._result(use_id, f"Permission to use {name} has been denied.", True, ""), False
        self.ran.append((name, args))
        try:
            output = self.tools[name](args)
        except Exception as error:  # the tool failed: Claude Code reports it to the model as an error
            text = f"{type(error).__name__}: {error}"
            outputs = await self._hook("PostToolUseFailure", dict(base, error=text), use_id, name)
            return self._result(use_id, text, True, _context(outputs)), self._stopped(outputs)
        outputs = await self._hook("PostToolUse", dict(base, tool_response=output), use_id, name)
        text = output if isinstance(output, str) else json.dumps(output)
        return self._result(use_id, text, False, _context(outputs)), self._stopped(outputs)

    def _result(self, use_id: str, content: str, is_error: bool, context: str) -> dict[str, Any]:
        self.shown.append(Shown(use_id, content, is_error, context))
        return {"type": "tool_result", "tool_use_id": use_id, "content": content, "is_error": is_error}

    def _stopped(self, outputs: list[dict[str, Any]]) -> bool:
        for output in outputs:
            if output.get("continue") is False:
                self.stop_reason = output.get("stopReason") or "a hook stopped the run"
                return True
        return False

    async def _hook(self, event: str, fields: dict[str, Any], use_id: str | None = None,
                    tool: str | None = None) -> list[dict[str, Any]]:
        """Every callback registered for `event` whose matcher matches `tool`, in order: their outputs."""
        hook_input = {"session_id": "scripted", "transcript_path": "", "cwd": ".", "hook_event_name": event,
                      **fields}
        outputs = []
        for matcher in self._hooks.get(event, []):
            pattern = matcher.get("matcher")
            if pattern and tool is not None and not re.fullmatch(pattern, tool):
                continue
            for callback_id in matcher.get("hookCallbackIds", []):
                self._requests += 1
                request_id = f"cli_{self._requests}"
                waiting: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
                self._waiting[request_id] = waiting
                self._emit({"type": "control_request", "request_id": request_id,
                            "request": {"subtype": "hook_callback", "callback_id": callback_id,
                                        "input": hook_input, "tool_use_id": use_id}})
                outputs.append(await waiting)
        return outputs

    def _emit(self, message: dict[str, Any]) -> None:
        self._out.put_nowait(message)


def _control_response(request_id: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": response}}


def _context(outputs: list[dict[str, Any]]) -> str:
    return "\n".join(o["hookSpecificOutput"]["additionalContext"] for o in outputs
                     if o.get("hookSpecificOutput", {}).get("additionalContext"))
