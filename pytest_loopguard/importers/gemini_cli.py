"""Gemini CLI logs: saved chats (`~/.gemini/tmp/<project hash>/chats/session-*.json`) and the `logs.json` prompt log.

A saved chat is the `ConversationRecord` of gemini-cli's chat recording service: `{sessionId, projectHash,
startTime, lastUpdated, messages[]}`. Each message has `type`:

- `user`: the person's prompt (`origin: user`).
- `gemini`: one model turn, an `llm` step with its usage, then one tool step per `toolCalls[]` entry
  (name, `args`, `status`, `result` as `functionResponse` parts). Its `thoughts` are not steps (their
  tokens are in the usage). The last message of the chat, a model answer asking for no tool, is `done`.
- `info`, `warning`: what the CLI showed the person (`origin: harness`); `error`: a model request that
  failed (an `llm` step with `error`). Any other type is unmapped.

A tool call's `status` is gemini-cli's scheduler status, the only failure signal it writes:
`success` → a result; `error` → a failed result (`functionResponse.response.error`, else its output or
`resultDisplay`); `cancelled` → the call never ran: `denied` by the user when the reason is the scheduler's
USER_DENIAL marker (the person answered "no" to the confirmation), else `cancelled` (the person pressed
Esc, or the batch was aborted). A call left in any other status (`executing`, `awaiting_approval`: the
session ended mid-call) keeps no result and is listed as unmapped.

Token usage (`tokens`: `input` = promptTokenCount, `output` = candidatesTokenCount, `cached`,
`thoughts`, `tool` = toolUsePromptTokenCount): `input_tokens` = input + tool (both are prompt the model
read; `cached` is a part of `input`, kept as `x-cached-input-tokens`), `output_tokens` = output +
thoughts (thinking is generated output, as Anthropic and OpenAI count it; kept as `x-thoughts-tokens`).

`logs.json` is a prompt log (`[{sessionId, messageId, type: user, message, timestamp}]`): no model
turns, no calls. It is imported as one run per `sessionId` holding the person's prompts as `user`
messages, so a scan still sees the session; there is nothing to replay in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..errors import TraceError
from .base import ImportedRun
from .build import obj, parse_arguments, result, seq, text_of
from .json_log import JsonLogImporter
from .run_builder import RunBuilder, content_text

__all__ = ["USER_DENIAL", "GeminiCliImporter"]

ORIGIN: Final = "gemini-cli"
# coreToolScheduler's reason when the person answers the confirmation with "no" (ToolConfirmationOutcome.Cancel)
USER_DENIAL: Final = "User did not allow tool call"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _is_session(doc: Any) -> bool:
    """A ConversationRecord: `sessionId` and a `messages` list whose items are typed user/gemini/…"""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("sessionId"), str):
        return False
    messages = doc.get("messages")
    if not isinstance(messages, list):
        return False
    typed = [m for m in messages if isinstance(m, Mapping) and isinstance(m.get("type"), str)]
    return "projectHash" in doc or any(m.get("type") == "gemini" for m in typed)


def _is_prompt_log(doc: Any) -> bool:
    """logs.json: a non-empty list of `{sessionId, messageId, type, message}` entries."""
    return isinstance(doc, list) and bool(doc) and all(
        isinstance(e, Mapping) and isinstance(e.get("sessionId"), str) and "messageId" in e and "message" in e
        and isinstance(e.get("type"), str) for e in doc)


def _response(value: Any) -> tuple[str, str, list[str]]:
    """(output text, error text, kinds of parts with no text) of a tool call's `result` (PartListUnion)."""
    parts = value if isinstance(value, list) else [value] if value is not None else []
    outputs: list[str] = []
    errors: list[str] = []
    skipped: list[str] = []
    for part in parts:
        if isinstance(part, str):
            outputs.append(part)
            continue
        part = obj(part)
        if "functionResponse" in part:
            response = obj(obj(part["functionResponse"]).get("response"))
            if "error" in response:
                errors.append(text_of(response["error"]))
            elif "output" in response:
                outputs.append(text_of(response["output"]))
            elif response:
                outputs.append(text_of(response))
        elif isinstance(part.get("text"), str):
            outputs.append(part["text"])
        elif part:
            skipped.append(next(iter(part)))
    return "\n".join(outputs), "\n".join(errors), skipped


def _usage(tokens: Mapping[str, Any]) -> tuple[int | None, int | None, dict[str, Any]]:
    prompt, tool, out, thoughts = (_count(tokens.get(k)) for k in ("input", "tool", "output", "thoughts"))
    x: dict[str, Any] = {}
    cached = _count(tokens.get("cached"))
    if cached:
        x["x-cached-input-tokens"] = cached
    if thoughts:
        x["x-thoughts-tokens"] = thoughts
    if tool:
        x["x-tool-prompt-tokens"] = tool
    input_tokens = prompt + (tool or 0) if prompt is not None else None
    output_tokens = out + (thoughts or 0) if out is not None else None
    return input_tokens, output_tokens, x


def _call(b: RunBuilder, call: Mapping[str, Any], index: str) -> None:
    name = call.get("name") if isinstance(call.get("name"), str) and call.get("name") else "unnamed"
    args, extra = parse_arguments(call.get("args"))
    status = call.get("status")
    if isinstance(call.get("id"), str):
        extra["x-call-id"] = call["id"]
    if isinstance(status, str):
        extra["x-status"] = status
    step = b.tool(str(name), args, index=index, x=extra)
    output, error, skipped = _response(call.get("result"))
    for kind in skipped:
        b.note(f"{kind} part in a tool result", (None, index))
    display = call.get("resultDisplay") if isinstance(call.get("resultDisplay"), str) else ""
    if status == "success":
        b.set_result(step, result(output))
    elif status == "error":
        b.set_result(step, result(output or None, error=error or output or display or "status: error"))
    elif status == "cancelled":
        reason = error or output or display or "status: cancelled"
        if USER_DENIAL in reason:
            b.not_run(step, "denied", reason, by="user")
        else:
            b.not_run(step, "cancelled", reason)
    else:
        step["x-result-missing"] = True
        b.note(f"tool call with status {status!r} (no result)", (None, index))


def _gemini(b: RunBuilder, m: Mapping[str, Any], i: int, text: str, *, last: bool) -> None:
    index = f"/messages/{i}"
    calls = seq(m.get("toolCalls"))
    input_tokens, output_tokens, x = _usage(obj(m.get("tokens")))
    if isinstance(m.get("id"), str):
        x["x-message-id"] = m["id"]
    thoughts = seq(m.get("thoughts"))
    if thoughts:
        x["x-thoughts"] = len(thoughts)
    b.set_model(m.get("model"))
    final = last and not calls
    b.llm(index=index, input_tokens=input_tokens, output_tokens=output_tokens, text="" if final else text, x=x)
    for j, call in enumerate(calls):
        if isinstance(call, Mapping):
            _call(b, call, f"{index}/toolCalls/{j}")
        else:
            b.note("tool call that is not an object", (None, f"{index}/toolCalls/{j}"))
    if final:
        b.done(index=index, text=text)


def _convert_session(doc: Mapping[str, Any], file: str, stem: str) -> ImportedRun:
    b = RunBuilder(file, str(doc.get("sessionId") or stem), fmt=ORIGIN)
    b.source["agent"] = "gemini-cli"
    for key in ("projectHash", "startTime", "lastUpdated", "summary"):
        if isinstance(doc.get(key), str):
            b.header_x[key] = doc[key]
    messages = seq(doc.get("messages"))
    for i, m in enumerate(messages):
        index = f"/messages/{i}"
        if not isinstance(m, Mapping):
            b.note("message that is not an object", (None, index))
            continue
        kind = m.get("type")
        skipped: list[str] = []
        text = content_text(m.get("content"), skipped)
        for part in skipped:
            b.note(f"{part} content part in a {kind} message", (None, index))
        if kind == "user":
            b.message("user", text, index=index, origin="user")
        elif kind == "gemini":
            _gemini(b, m, i, text, last=i == len(messages) - 1)
        elif kind in ("info", "warning"):
            b.message("system", text, index=index, origin="harness", x={"type": kind})
        elif kind == "error":
            b.llm(index=index, error=text or "error", x={"type": kind})
        else:
            b.note(f"message of type {kind!r}", (None, index))
    return b.build()


def _convert_prompt_log(doc: Sequence[Any], file: str) -> list[ImportedRun]:
    builders: dict[str, RunBuilder] = {}
    for k, entry in enumerate(doc):
        entry = obj(entry)
        session = str(entry.get("sessionId"))
        b = builders.get(session)
        if b is None:
            b = builders[session] = RunBuilder(file, session, fmt=ORIGIN)
            b.source["agent"] = "gemini-cli"
            b.header_x["prompt-log"] = True
            b.description = "Gemini CLI prompt log: the person's prompts only (no model turns, no calls)"
        if entry.get("type") == "user":
            b.message("user", text_of(entry.get("message")), index=k, origin="user",
                      x={"message-id": entry["messageId"]} if entry.get("messageId") is not None else None)
        else:
            b.note(f"prompt-log entry of type {entry.get('type')!r}", (None, k))
    return [b.build() for b in builders.values()]


class GeminiCliImporter(JsonLogImporter):
    """Gemini CLI: saved chats (`session-*.json`) and the `logs.json` prompt log."""

    name = "gemini-cli"
    title = "a Gemini CLI chat (session-*.json) or prompt log (logs.json)"
    description = "Gemini CLI saved chats (messages typed user/gemini with toolCalls) and logs.json prompt logs"

    def sniff_document(self, doc: Any) -> bool:
        return _is_session(doc) or _is_prompt_log(doc)

    def sniff_row(self, row: Any) -> bool:
        return False

    def reads_document(self, doc: Any) -> bool:
        return self.sniff_document(doc) or (isinstance(doc, Mapping) and isinstance(doc.get("messages"), list))

    def convert_document(self, doc: Any, file: str, stem: str) -> list[ImportedRun]:
        if isinstance(doc, list):
            return _convert_prompt_log(doc, file)
        return [_convert_session(doc, file, stem)]

    def convert_rows(self, rows: Sequence[tuple[int, Any]], file: str, stem: str) -> list[ImportedRun]:
        raise TraceError(f"JSONL; expected {self.description}", file=file)

    @property
    def expected(self) -> str:
        return f"a Gemini CLI log (expected {self.description})"
