"""Anthropic Messages logs (a `messages` list, a request with `system`, or JSONL of request/response records).

Mapping (FORMATS.md §3): each assistant message is one `llm` step (usage and `stop_reason` when the log has
them), then one tool step per `tool_use` block. A `tool_result` block is the result of the call with its
`tool_use_id`; `is_error: true` makes it a failure. Tool results arrive in `user`-role messages, so such a
message is not a person's prompt: its results fill in calls, and any text beside them is a message with
`origin: harness`. Only a user message without tool results is a person's prompt (`origin: user`).
Thinking blocks are not steps (their tokens are already in `output_tokens`). A log that ends with an
assistant message asking for no client tool, stopped by `end_turn` (or with no stop reason), ends with `done`.
Consecutive lines of one streamed response (the same message `id`) are one turn.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .base import ImportedRun
from .json_log import JsonLogImporter
from .run_builder import At, RunBuilder, list_at, mapping_at, parse_arguments, usage_tokens

__all__ = ["AnthropicImporter"]

ORIGIN: Final = "anthropic"
MARK_BLOCKS: Final = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use"})
FINAL_STOPS: Final = (None, "end_turn", "stop_sequence")


@dataclass(slots=True)
class _Entry:
    message: Mapping[str, Any]
    row: int | None
    index: int | str | None  # the message's place: its list position, or a JSON Pointer in a record
    response: Mapping[str, Any] = field(default_factory=dict)


def _unwrap(value: Any) -> Any:
    # Some agent transcripts (Claude Code's JSONL) wrap each message as {"type": ..., "message": {...}}.
    if isinstance(value, Mapping) and "role" not in value and isinstance(value.get("message"), Mapping):
        return value["message"]
    return value


def _is_message(value: Any) -> bool:
    value = _unwrap(value)
    return isinstance(value, Mapping) and value.get("role") in ("user", "assistant") and "content" in value


def _marked(message: Any) -> bool:
    message = _unwrap(message)
    if not isinstance(message, Mapping):
        return False
    if message.get("type") == "message" and message.get("role") == "assistant":
        return True
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return any(isinstance(b, Mapping) and str(b.get("type")) in MARK_BLOCKS for b in blocks)


def _messages_of(doc: Any) -> Sequence[Any] | None:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, Mapping) and isinstance(doc.get("messages"), list):
        return doc["messages"]  # type: ignore[no-any-return]
    return None


def _sniff_document(doc: Any) -> bool:
    """A JSON messages list (or `{messages}` request) with Anthropic blocks: tool_use, tool_result, thinking."""
    messages = _messages_of(doc) or []
    return bool(messages) and all(_is_message(m) for m in messages) and any(_marked(m) for m in messages)


def _is_record(row: Any) -> bool:
    return isinstance(row, Mapping) and isinstance(row.get("response"), Mapping) and _marked(row["response"])


def _sniff_row(row: Any) -> bool:
    """A JSONL line of an Anthropic log: a request/response record, a transcript line wrapping a message
    (`{"type": "user", "message": {...}}`), or a message with Anthropic blocks."""
    wrapped = isinstance(row, Mapping) and "role" not in row and _is_message(row)
    return _is_record(row) or wrapped or (_is_message(row) and _marked(row))


def _run_id(doc: Any, fallback: str) -> str:
    if isinstance(doc, Mapping):
        for key in ("id", "run_id", "session_id", "conversation_id"):
            if isinstance(doc.get(key), str) and doc[key]:
                return str(doc[key])
    return fallback


def _convert_document(doc: Any, file: str, stem: str) -> list[ImportedRun]:
    messages = _messages_of(doc) or []
    builder = RunBuilder(file, _run_id(doc, stem), fmt=ORIGIN)
    if isinstance(doc, Mapping):
        _system(builder, doc, None)
        builder.set_model(doc.get("model"))
    entries = [_Entry(_unwrap(m), None, i) for i, m in enumerate(messages) if isinstance(_unwrap(m), Mapping)]
    return [_convert(builder, entries)]


def _convert_rows(rows: Sequence[tuple[int, Any]], file: str, stem: str) -> list[ImportedRun]:
    """One run from JSONL: request/response records (each request's history counted once) or one message a line."""
    builder = RunBuilder(file, stem, fmt=ORIGIN)
    return [_convert(builder, list(_record_entries(builder, rows)))]


def _record_entries(builder: RunBuilder, rows: Sequence[tuple[int, Any]]) -> Iterator[_Entry]:
    first = True
    for line, row in rows:
        if not _is_record(row):
            message = _unwrap(row)
            if _is_message(message):
                yield _Entry(message, line, None, message if message.get("role") == "assistant" else {})
            continue
        request = mapping_at(row, "request")
        messages = list_at(request, "messages")
        start = 0
        if first:
            _system(builder, request, line)
        else:
            # What is new in a request follows its last assistant message (the previous response).
            start = 1 + max((i for i, m in enumerate(messages) if isinstance(m, Mapping)
                             and m.get("role") == "assistant"), default=-1)
        first = False
        for i in range(start, len(messages)):
            if isinstance(messages[i], Mapping):
                yield _Entry(messages[i], line, f"/request/messages/{i}")
            else:
                builder.note("item that is not a message", (line, f"/request/messages/{i}"))
        yield _Entry(row["response"], line, "/response", row["response"])


def _system(builder: RunBuilder, doc: Mapping[str, Any], row: int | None) -> None:
    system = doc.get("system")
    if system:
        builder.say("system", builder.text(system, (row, None), "the system prompt"), at=(row, None))


def _merged(entries: list[_Entry]) -> list[_Entry]:
    """Consecutive assistant entries of one response (the same message `id`) as one entry.

    Transcripts that stream (Claude Code's) write one line per content block of a response, each repeating
    the id and usage: one response is one turn, so its parallel `tool_use` blocks stay one turn.
    """
    out: list[_Entry] = []
    for entry in entries:
        m, prev = entry.message, out[-1].message if out else {}
        same = m.get("role") == prev.get("role") == "assistant" and isinstance(m.get("id"), str) and \
            m.get("id") == prev.get("id")
        if not same:
            out.append(entry)
            continue
        merged = dict(m)  # the later line carries the final usage and stop reason
        merged["content"] = _blocks(prev.get("content")) + _blocks(m.get("content"))
        out[-1] = _Entry(merged, out[-1].row, out[-1].index, entry.response)
    return out


def _convert(builder: RunBuilder, entries: list[_Entry]) -> ImportedRun:
    entries = _merged(entries)
    for position, entry in enumerate(entries):
        m = entry.message
        if m.get("role") == "assistant":
            _assistant(builder, entry, last=position == len(entries) - 1)
        elif m.get("role") == "user":
            _user(builder, entry)
        else:
            builder.note(f"message with role {m.get('role')!r}", (entry.row, entry.index))
    return builder.build()


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _tool_result(block: Mapping[str, Any], builder: RunBuilder, at: At) -> dict[str, Any]:
    content = block.get("content")
    if isinstance(content, Mapping) and isinstance(content.get("error_code"), str):
        # Server tool results report failure as an `…_error` content object with an error code.
        return {"error": content["error_code"]}
    text = builder.text(content, at, "a tool result")
    if block.get("is_error") is True:
        return {"error": text or "tool_result is_error without text"}
    return {"text": text}


def _user(builder: RunBuilder, entry: _Entry) -> None:
    blocks = _blocks(entry.message.get("content"))
    results = [b for b in blocks if b.get("type") == "tool_result"]
    at = (entry.row, entry.index)
    for block in results:
        call_id = block.get("tool_use_id")
        builder.result(call_id if isinstance(call_id, str) else None, _tool_result(block, builder, at), at=at)
    texts = [b for b in blocks if b.get("type") == "text"]
    for block in blocks:
        if block.get("type") not in ("text", "tool_result"):
            builder.note(f"{block.get('type')} block in a user message", (entry.row, entry.index))
    if texts:
        # Text sent with tool results is what the harness added (reminders, feedback), not a person's prompt.
        text = "\n".join(str(b.get("text", "")) for b in texts)
        builder.say("user", text, origin="harness" if results else "user", at=(entry.row, entry.index))


def _assistant(builder: RunBuilder, entry: _Entry, *, last: bool) -> None:
    m = entry.message
    where = (entry.row, entry.index)
    blocks = _blocks(m.get("content"))
    calls = [b for b in blocks if b.get("type") in ("tool_use", "server_tool_use")]
    text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    usage = m.get("usage", entry.response.get("usage"))
    stop = m.get("stop_reason", entry.response.get("stop_reason"))
    # Server tools ran inside this very response: only a client `tool_use` asks the agent loop to go on.
    final = last and not any(b.get("type") == "tool_use" for b in calls) and stop in FINAL_STOPS
    extensions: dict[str, Any] = {}
    if isinstance(stop, str):
        extensions["x-stop-reason"] = stop
    if isinstance(m.get("id"), str):
        extensions["x-message-id"] = m["id"]
    thinking = sum(1 for b in blocks if b.get("type") in ("thinking", "redacted_thinking"))
    if thinking:
        extensions["x-thinking-blocks"] = thinking
    tokens = usage_tokens(usage, "input_tokens", "output_tokens")
    if isinstance(usage, Mapping):
        # Cached prompt tokens are prompt tokens too: the context a model saw is their sum.
        cached = sum(v for k in ("cache_read_input_tokens", "cache_creation_input_tokens")
                     if isinstance(v := usage.get(k), int) and not isinstance(v, bool))
        if cached and "input_tokens" in tokens:
            extensions["x-uncached-input-tokens"] = tokens["input_tokens"]
            tokens["input_tokens"] += cached
    if isinstance(m.get("model"), str):
        builder.set_model(m["model"])
    builder.turn(tokens=tokens, text="" if final else text, x=extensions, at=where)
    for block in calls:
        call_id = block.get("id") if isinstance(block.get("id"), str) else None
        args, extra = parse_arguments(block.get("input"))
        if block.get("type") == "server_tool_use":
            extra["x-tool-type"] = "server"
        builder.call(call_id, str(block.get("name") or ""), args, x=extra, at=where)
    for block in blocks:
        kind = str(block.get("type"))
        if kind.endswith("_tool_result") and isinstance(block.get("tool_use_id"), str):
            builder.result(block["tool_use_id"], _tool_result(block, builder, where), at=where)
        elif kind not in ("text", "tool_use", "server_tool_use", "thinking", "redacted_thinking"):
            builder.note(f"{kind} block in an assistant message", where)
    if final:
        builder.finish(text=text, at=where)


class AnthropicImporter(JsonLogImporter):
    """Anthropic Messages: tool_use and tool_result blocks."""

    name = "anthropic"
    title = "an Anthropic Messages log"
    description = "Anthropic Messages: tool_use and tool_result blocks"

    def sniff_document(self, doc: Any) -> bool:
        return _sniff_document(doc)

    def sniff_row(self, row: Any) -> bool:
        return _sniff_row(row)

    def convert_document(self, doc: Any, file: str, stem: str) -> list[ImportedRun]:
        return _convert_document(doc, file, stem)

    def convert_rows(self, rows: Sequence[tuple[int, Any]], file: str, stem: str) -> list[ImportedRun]:
        return _convert_rows(rows, file, stem)
