"""mini-swe-agent trajectories (`*.traj.json`): `mini-swe-agent-1` (text actions) and `-1.1` (tool calls).

Both are `{info, messages, trajectory_format, instance_id}`. In format 1 an assistant message holds one
```` ```bash ```` block and the next user message is the harness's reply; in 1.1 the assistant message has
`tool_calls` and each result is a `tool` message with its `tool_call_id`. The heuristics (what is a
rejected turn, a failed call, the submission) are listed in docs/import.md and tested on the real files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, ClassVar

from ..errors import TraceError
from .base import ImportedRun, Importer, Source
from .build import ImportedRunBuilder, exit_code, obj, parse_arguments, result

__all__ = ["MiniSweAgent1", "MiniSweAgent11", "convert_messages"]

# mini-swe-agent's own action regex (agents/default.py, action_regex)
ACTION_RE = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
RETURNCODE_RE = re.compile(r"^\s*<returncode>(-?\d+)</returncode>")
TIMEOUT_RE = re.compile(r"^The last command <command>.*?</command> timed out", re.DOTALL)
# the harness's format-error replies: v1 "Please always provide EXACTLY ONE action in triple backticks,
# found N actions."; v2 tool calling "No tool calls found in the response. ..."
REJECT_RE = re.compile(r"EXACTLY ONE action|No tool calls found")
SUBMIT_MARK = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
SHELL_TOOL = "bash"


def _text(content: Any) -> str:
    """Message content as text (a list of content parts is joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _usage(msg: dict[str, Any]) -> tuple[int | None, int | None]:
    extra = msg.get("extra")
    resp = extra.get("response") if isinstance(extra, dict) else None
    usage = resp.get("usage") if isinstance(resp, dict) else None
    if not isinstance(usage, dict):
        return None, None
    return usage.get("prompt_tokens"), usage.get("completion_tokens")


def _is_rejection(msg: dict[str, Any]) -> bool:
    if msg.get("role") != "user":
        return False
    extra = msg.get("extra")
    if isinstance(extra, dict) and extra.get("interrupt_type") == "FormatError":
        return True
    return bool(REJECT_RE.search(_text(msg.get("content"))[:300]))


def _reply_result(msg: dict[str, Any]) -> dict[str, Any] | None:
    """The result a harness reply reports, or None when the reply is not a command's output."""
    text = _text(msg.get("content"))
    m = RETURNCODE_RE.match(text)
    extra = msg.get("extra")
    code = extra.get("returncode") if isinstance(extra, dict) else None
    if m:
        return result(text, exit_code=exit_code(m.group(1)))
    if TIMEOUT_RE.match(text):
        return result(text, error=text.split("\n", 1)[0])
    if msg.get("role") == "tool":
        return result(text, exit_code=code if isinstance(code, int) else None)
    return None


def _model(doc: dict[str, Any]) -> str | None:
    for msg in doc.get("messages") or ():
        extra = msg.get("extra") if isinstance(msg, dict) else None
        resp = extra.get("response") if isinstance(extra, dict) else None
        if isinstance(resp, dict) and isinstance(resp.get("model"), str):
            return str(resp["model"])
    return None


def convert_messages(doc: dict[str, Any], source: Source, fmt: str) -> ImportedRun:
    """One run from a mini-swe-agent trajectory document (both formats share everything but the calls)."""
    info = obj(doc.get("info"))
    run_id = str(doc.get("instance_id") or source.stem.removesuffix(".traj"))
    version = info.get("mini_version")
    b = ImportedRunBuilder(run_id, file=source.name, agent=f"mini-swe-agent {version}" if version else "mini-swe-agent",
                     model=_model(doc), description=f"{fmt} trajectory of {run_id}")
    b.header_x.update({"x-trajectory_format": fmt, "x-exit_status": info.get("exit_status"),
                       "x-model_stats": info.get("model_stats")})
    msgs = doc.get("messages")
    if not isinstance(msgs, list):
        b.warn("no 'messages' list: an empty run")
        return b.build()
    _Walker(b, msgs).run()
    return b.build()


class _Walker:
    """Walks the message list once; a harness reply is consumed by the assistant turn it answers."""

    def __init__(self, b: ImportedRunBuilder, msgs: list[Any]) -> None:
        self.b = b
        self.msgs = msgs
        self.used: set[int] = set()
        self.seen_assistant = False
        # tool_call_id -> tool steps awaiting a result, oldest first (a reused id pairs by position)
        self.pending: dict[str, list[dict[str, Any]]] = {}

    def run(self) -> None:
        for i, msg in enumerate(self.msgs):
            if i in self.used:
                continue
            if not isinstance(msg, dict):
                self.b.skip(f"messages[{i}]: not an object")
                continue
            role = msg.get("role")
            if role == "assistant":
                self.seen_assistant = True
                self.assistant(i, msg)
            elif role == "tool":
                self.tool_result(i, msg)
            elif role == "system":
                self.b.message("system", _text(msg.get("content")), index=i)
            elif role == "exit":
                self.b.done(index=i, text=_text(msg.get("content")), x=_exit_x(msg))
            elif role == "user" and _is_rejection(msg):
                # gpt-5-mini: the rejected assistant turn is not stored; the harness reply stands for it
                self.b.rejected(_first_line(msg), index=i)
            elif role == "user":
                origin = "harness" if self.seen_assistant else "user"
                self.b.message("user", _text(msg.get("content")), origin=origin, index=i)
            else:
                self.b.skip(f"messages[{i}]: role {role!r}")
        for call_id, steps in self.pending.items():
            self.b.warn(f"call {call_id} has no result" + (f" ({len(steps)} calls)" if len(steps) > 1 else ""))

    def reply(self, i: int) -> tuple[int, dict[str, Any]] | None:
        j = i + 1
        if j < len(self.msgs) and isinstance(self.msgs[j], dict) and self.msgs[j].get("role") in ("user", "exit"):
            return j, self.msgs[j]
        return None

    def assistant(self, i: int, msg: dict[str, Any]) -> None:
        content = _text(msg.get("content"))
        tin, tout = _usage(msg)
        calls = msg.get("tool_calls")
        reply = self.reply(i)
        if not calls and reply is not None and _is_rejection(reply[1]):
            self.used.add(reply[0])
            self.b.rejected(_first_line(reply[1]), index=i, text=content, input_tokens=tin, output_tokens=tout)
            return
        self.b.llm(index=i, input_tokens=tin, output_tokens=tout, text=content)
        if isinstance(calls, list) and calls:
            for n, call in enumerate(calls):
                self.tool_call(i, n, call, len(calls))
            return
        if calls:
            self.b.skip(f"messages[{i}].tool_calls: not a list")
        actions = ACTION_RE.findall(content)
        command = actions[0] if actions else ""
        if len(actions) != 1:
            self.b.warn(f"messages[{i}]: {len(actions)} bash blocks but no rejection reply; kept as one call")
        if reply is not None and SUBMIT_MARK in command and _reply_result(reply[1]) is None:
            self.used.add(reply[0])
            self.b.done(index=i, text=_text(reply[1].get("content")), x=_exit_x(reply[1]))
            return
        if reply is None and SUBMIT_MARK in command:
            self.b.done(index=i)
            return
        step = self.b.tool(SHELL_TOOL, {"command": command}, index=i)
        if reply is None:
            self.b.warn(f"messages[{i}]: a call with no reply")
            return
        r = _reply_result(reply[1])
        if r is None:
            # an unknown harness reply: the call keeps no result, the reply becomes a harness message
            self.b.warn(f"messages[{reply[0]}]: a reply that is neither output nor a rejection")
            return
        self.used.add(reply[0])
        self.b.set_result(step, r)

    def tool_call(self, i: int, n: int, call: Any, total: int) -> None:
        if not isinstance(call, dict):
            self.b.skip(f"messages[{i}].tool_calls[{n}]: not an object")
            return
        fn = obj(call.get("function"))
        name = str(fn.get("name") or "?")
        args, x = parse_arguments(fn.get("arguments"))
        call_id = str(call.get("id") or f"{i}.{n}")
        reply = self.reply(i)
        if (total == 1 and SUBMIT_MARK in str(args.get("command", "")) and reply is not None
                and reply[1].get("role") == "exit"):
            self.used.add(reply[0])
            self.b.done(index=i, text=_text(reply[1].get("content")), x=_exit_x(reply[1]))
            return
        if total > 1:
            x["x-call"] = f"{n + 1}/{total}"
        if call_id in self.pending:
            self.b.warn(f"messages[{i}]: call id {call_id} reused before its result arrived")
        x["x-tool_call_id"] = call_id
        self.pending.setdefault(call_id, []).append(self.b.tool(name, args, index=i, x=x))

    def tool_result(self, i: int, msg: dict[str, Any]) -> None:
        call_id = str(msg.get("tool_call_id"))
        waiting = self.pending.get(call_id)
        step = waiting.pop(0) if waiting else None
        if waiting == []:
            del self.pending[call_id]
        if step is None:
            self.b.warn(f"messages[{i}]: orphan result for call id {call_id}")
            self.b.skip(f"messages[{i}]: orphan tool result")
            return
        r = _reply_result(msg)
        assert r is not None  # a tool message always gives a result
        self.b.set_result(step, r)


def _first_line(msg: dict[str, Any]) -> str:
    return _text(msg.get("content")).strip().split("\n", 1)[0]


def _exit_x(msg: dict[str, Any]) -> dict[str, Any]:
    extra = msg.get("extra")
    return {"x-exit_status": extra.get("exit_status")} if isinstance(extra, dict) and "exit_status" in extra else {}


def _sniff(source: Source, fmt: str) -> bool:
    doc = source.parsed
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return False
    declared = doc.get("trajectory_format")
    if declared is not None:
        return bool(declared == fmt)
    info = doc.get("info")
    if not (isinstance(info, dict) and "mini_version" in info):
        return False
    # undeclared: tool_calls on any assistant message means the tool-calling format
    tool_calling = any(isinstance(m, dict) and m.get("tool_calls") for m in doc["messages"])
    return tool_calling == (fmt == "mini-swe-agent-1.1")


class MiniSweAgent1(Importer):
    name: ClassVar[str] = "mini-swe-agent-1"
    description: ClassVar[str] = "mini-swe-agent trajectory, text actions (```bash blocks)"

    def sniff(self, source: Source) -> bool:
        return _sniff(source, self.name)

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        doc = source.document
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            raise TraceError("expected a mini-swe-agent trajectory: a JSON object with a 'messages' list",
                             file=source.name, field="messages")
        yield convert_messages(doc, source, self.name)


class MiniSweAgent11(MiniSweAgent1):
    name: ClassVar[str] = "mini-swe-agent-1.1"
    description: ClassVar[str] = "mini-swe-agent trajectory, tool calls"
