"""OpenAI Chat Completions logs (a `messages` list, or JSONL of request/response records) as traces.

Mapping (FORMATS.md §1): each assistant message is one `llm` step (its usage when the log has it), then one
tool step per `tool_calls[]` entry (parallel calls are one turn); a `role: tool` message is the result of
the call with its `tool_call_id` (a reused id pairs with the oldest call of that id still waiting);
`system`/`developer` messages are system messages; `user` messages are a person's prompts (`origin: user`).
A tool message whose text opens with `Error:` is a failed result (chat has no error flag; see
`tool_result`); so is one opening with an OpenHands error text in a chat that calls OpenHands' tools.
A log that ends with an assistant message asking for no call ends with a `done` step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .base import ImportedRun
from .build import exit_code
from .json_log import JsonLogImporter
from .run_builder import RunBuilder, list_at, mapping_at, parse_arguments, response_facts, usage_tokens

__all__ = ["ChatImporter"]

ORIGIN: Final = "openai-chat"
ERROR_PREFIX: Final = "Error:"
ROLES: Final = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# A chat that calls these tools is the OpenHands SDK's (`file_editor`, `terminal`) or OpenHands V0's CodeAct
# agent's (`str_replace_editor`, `execute_bash`): their tools report failures in the result text only.
SDK_TOOLS: Final = frozenset({"file_editor", "terminal", "str_replace_editor", "execute_bash"})
# what the SDK puts before an observation's text when its `is_error` is set (newer, then older versions)
SDK_ERROR_HEADERS: Final = ("[An error occurred during execution.]", "Tool Execution Error.")
# The texts a result opens with when an OpenHands tool failed (software-agent-sdk's file editor ToolErrors,
# the agent's argument check, V0's `ERROR:` block); docs/import.md lists them.
SDK_ERROR_MARKERS: Final = tuple(re.compile(p, re.S) for p in (
    r"Ran into .+ while trying to (?:read|write to) ",
    r"Invalid `[^`]+` parameter: ",
    r"Parameter `[^`]+` is required for command: ",
    r"No replacement was performed",
    r"Unrecognized command \S+\. The allowed commands for ",
    r"No edit history found for ",
    r"File validation failed for ",
    r"Failed to read image file ",
    r"Cannot view .+: file contains binary content",
    r"Operation '[^']+' is not allowed on file '",
    r"Error validating args .+ for tool '",
    r"ERROR:\n",
))
SDK_EXIT_RE: Final = re.compile(r"\[Command finished with exit code (-?\d+)\]\s*$")


@dataclass(slots=True)
class _Entry:
    """One message and where it sits; `response` is the completion it came from (usage, finish reason)."""

    message: Any  # a mapping when the log is well formed; anything else is noted as unmapped
    row: int | None
    index: int | str | None  # the message's place: its list position, or a JSON Pointer in a record
    response: Mapping[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None


# ---- recognising -----------------------------------------------------------------------------------------
def _is_chat_message(value: Any) -> bool:
    return isinstance(value, Mapping) and str(value.get("role")) in ROLES and (
        "content" in value or "tool_calls" in value or "function_call" in value
    )


def _is_chat(messages: Sequence[Any]) -> bool:
    """A list shaped as Chat Completions and not Anthropic: no content blocks typed tool_use/tool_result."""
    if not messages or not all(_is_chat_message(m) for m in messages):
        return False
    for m in messages:
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result", "thinking") for b in content
        ):
            return False
    return True


def _calls_tools(message: Any) -> bool:
    return isinstance(message, Mapping) and (
        "tool_calls" in message or "function_call" in message or message.get("role") in ("tool", "function")
    )


def _has_chat_marks(messages: Sequence[Any]) -> bool:
    """A chat that detection may claim: plain role/content text is every chat format's shape (mini-swe-agent's
    too), so only a chat that calls tools the Chat Completions way is recognised without `--from`."""
    return _is_chat(messages) and any(_calls_tools(m) for m in messages)


def _messages_of(doc: Any) -> Sequence[Any] | None:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, Mapping):
        for key in ("messages", "traj"):  # `traj`: tau-bench's EnvRunResult
            if isinstance(doc.get(key), list):
                return doc[key]  # type: ignore[no-any-return]
    return None


def _is_record(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    response = value.get("response", value)
    return isinstance(response, Mapping) and isinstance(response.get("choices"), list)


def _sniff_document(doc: Any) -> bool:
    """A JSON document holding one chat (messages list, `{messages}`, tau-bench `{traj}`) or a list of them."""
    messages = _messages_of(doc)
    if messages is not None and _has_chat_marks(messages):
        return True
    runs = [_messages_of(d) if isinstance(d, Mapping) else None for d in doc] if isinstance(doc, list) else []
    return bool(runs) and all(m is not None and _is_chat(m) for m in runs) and any(
        _has_chat_marks(m) for m in runs if m is not None)


def _sniff_row(row: Any) -> bool:
    """A JSONL line of a chat log: a request/response record, a bare completion, a message calling tools or
    returning a tool result, or `{messages}` with tool calls."""
    if _is_record(row) or (_is_chat_message(row) and _calls_tools(row)):
        return True
    messages = _messages_of(row)
    return isinstance(row, Mapping) and messages is not None and _has_chat_marks(messages)


# ---- converting ------------------------------------------------------------------------------------------
def _run_id(doc: Any, fallback: str) -> str:
    if isinstance(doc, Mapping):
        if doc.get("task_id") is not None:
            trial = doc.get("trial")
            return f"task-{doc['task_id']}" + (f"-trial-{trial}" if trial is not None else "")
        for key in ("id", "run_id", "conversation_id"):
            if isinstance(doc.get(key), (str, int)) and str(doc[key]):
                return str(doc[key])
    return fallback


def _convert_document(doc: Any, file: str, stem: str) -> list[ImportedRun]:
    """Every run in a JSON document that `sniff_document` accepted."""
    messages = _messages_of(doc)
    if messages is not None and _is_chat(messages):
        entries = (_Entry(m, None, i) for i, m in enumerate(messages))
        return [_convert(entries, file, _run_id(doc, stem), doc)]
    runs = []
    for position, item in enumerate(doc):
        key = "traj" if isinstance(item, Mapping) and "traj" in item else "messages"
        entries = (_Entry(m, None, f"/{position}/{key}/{i}") for i, m in enumerate(_messages_of(item) or []))
        runs.append(_convert(entries, file, _run_id(item, f"{stem}-{position}"), item))
    return runs


def _convert_rows(rows: Sequence[tuple[int, Any]], file: str, stem: str) -> list[ImportedRun]:
    """Every run in a JSONL file of (line number, parsed line): records or messages make one run, and each
    `{messages}` line (a fine-tuning or eval dataset) is a run of its own."""
    if rows and all(isinstance(r, Mapping) and _messages_of(r) is not None and not _is_record(r) for _, r in rows):
        runs = []
        for line, row in rows:
            entries = (_Entry(m, line, i) for i, m in enumerate(_messages_of(row) or []))
            runs.append(_convert(entries, file, _run_id(row, f"{stem}-{line}"), row))
        return runs
    return [_convert(_record_entries(rows), file, stem, None)]


def _record_entries(rows: Sequence[tuple[int, Any]]) -> Iterator[_Entry]:
    """Messages in conversation order from request/response records, each request's history counted once.

    Each request repeats the history; what is new in it comes after its last assistant message (the previous
    response), which still holds when the agent trimmed older history. The first request is new in full.
    """
    first = True
    for line, row in rows:
        if _is_chat_message(row) or not isinstance(row, Mapping):
            yield _Entry(row, line, None)
            continue
        request = mapping_at(row, "request")
        messages = list_at(request, "messages")
        start = 0
        if not first:
            last = max((i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "assistant"),
                       default=-1)
            start = last + 1
        for i in range(start, len(messages)):
            yield _Entry(messages[i], line, f"/request/messages/{i}")
        first = False
        response = mapping_at(row, "response") if "response" in row else row
        choices = list_at(response, "choices")
        if not choices or not isinstance(choices[0], Mapping):
            continue
        choice = choices[0]
        message = mapping_at(choice, "message")
        if len(choices) > 1:  # n > 1: the agent went on with one of them, and the log says which only by order
            message = {**message, "x-other-choices": len(choices) - 1}
        pointer = "/response/choices/0/message" if "response" in row else "/choices/0/message"
        yield _Entry(message, line, pointer, response, choice.get("finish_reason"))


def sdk_error(text: str) -> str | None:
    """The OpenHands marker a tool result of the SDK's tools opens with, or None: the SDK sends the model
    its observation's text only, so a log of the chat it sent marks a failure in the text alone."""
    body = text.lstrip()
    for header in SDK_ERROR_HEADERS:
        if body.startswith(header):
            return header
    for marker in SDK_ERROR_MARKERS:
        if marker.match(body):
            return marker.pattern
    return None


def tool_result(text: str, *, sdk: bool = False) -> dict[str, Any]:
    """A tool message's result. Chat has no error flag; a text opening with `Error:` is how tau-bench and
    most hand-written tool loops report an exception (`f"Error: {e}"`), so such a result is a failure. In a
    log of the OpenHands SDK's tools (`sdk`), its own error texts (SDK_ERROR_MARKERS) are failures too, and
    the terminal's closing `[Command finished with exit code N]` is the exit code."""
    if text.lstrip().startswith(ERROR_PREFIX):
        return {"error": text, "x-error-inferred": f"text starts with {ERROR_PREFIX!r}"}
    if sdk:
        marker = sdk_error(text)
        if marker is not None:
            return {"error": text, "x-error-inferred": f"OpenHands error text: {marker}"}
        found = SDK_EXIT_RE.search(text)
        code = exit_code(found.group(1)) if found else None
        if code is not None and code != -1:  # -1: still running at the soft timeout, not an exit
            return {"text": text, "exit_code": code}
    return {"text": text}


def _is_sdk_log(items: Sequence[_Entry]) -> bool:
    """A chat whose model calls the OpenHands tools (the SDK's `file_editor`/`terminal`, V0's CodeAct names)."""
    for entry in items:
        m = entry.message
        if isinstance(m, Mapping) and m.get("role", "assistant" if entry.response else None) == "assistant":
            for call in list_at(m, "tool_calls"):
                name = mapping_at(call, "function").get("name") if isinstance(call, Mapping) else None
                if isinstance(name, str) and name in SDK_TOOLS:  # a log may hold a list there: not hashable
                    return True
    return False


def _convert(entries: Iterable[_Entry], file: str, run_id: str, doc: Any) -> ImportedRun:
    builder = RunBuilder(file, run_id, fmt=ORIGIN)
    items = list(entries)
    sdk = _is_sdk_log(items)
    for position, entry in enumerate(items):
        m = entry.message
        if not isinstance(m, Mapping):
            builder.note("item that is not a message", (entry.row, entry.index))
            continue
        role = m.get("role", "assistant" if entry.response else None)
        where = (entry.row, entry.index)
        if role in ("system", "developer"):
            builder.say("system", builder.text(m.get("content"), where, "a system message"), at=where)
        elif role == "user":
            name = m.get("name") if isinstance(m.get("name"), str) else None
            text = builder.text(m.get("content"), where, "a user message")
            builder.say("user", text, origin="user", name=name, at=where)
        elif role == "assistant":
            _assistant(builder, entry, last=position == len(items) - 1)
        elif role in ("tool", "function"):
            call_id = m.get("tool_call_id") if role == "tool" else None
            text = builder.text(m.get("content"), where, "a tool result")
            builder.result(call_id if isinstance(call_id, str) else None, tool_result(text, sdk=sdk), at=where)
        else:
            builder.note(f"message with role {role!r}", where)
    if isinstance(doc, Mapping):
        builder.set_model(doc.get("model"))
    return builder.build()


def _assistant(builder: RunBuilder, entry: _Entry, *, last: bool) -> None:
    m, response = entry.message, entry.response
    where = (entry.row, entry.index)
    calls = [c for c in list_at(m, "tool_calls") if isinstance(c, Mapping)]
    legacy = m.get("function_call") if isinstance(m.get("function_call"), Mapping) else None
    text = builder.text(m.get("content"), where, "an assistant message")
    final = last and not calls and legacy is None
    usage = response.get("usage")
    extensions: dict[str, Any] = {}
    if entry.finish_reason:
        extensions["x-finish-reason"] = entry.finish_reason
    extensions.update(response_facts(builder, response, "completion_tokens_details"))
    if m.get("x-other-choices"):
        builder.note("other choices of a completion (n > 1): the first is taken as the turn", where)
    if isinstance(m.get("refusal"), str) and m["refusal"]:
        extensions["x-refusal"] = m["refusal"]
    builder.turn(tokens=usage_tokens(usage, "prompt_tokens", "completion_tokens"), text="" if final else text,
                x=extensions, at=where)
    for call in calls:
        kind = call.get("type", "function")
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        if kind == "custom" and isinstance(call.get("custom"), Mapping):
            # A custom tool takes free text (possibly under a grammar), not JSON: it is the one argument.
            body = call["custom"]
            builder.call(call_id, str(body.get("name") or ""), {"input": body.get("input", "")},
                         x={"x-tool-type": "custom"}, at=where)
            continue
        function = mapping_at(call, "function")
        args, extra = parse_arguments(function.get("arguments"))
        if kind != "function":
            extra["x-tool-type"] = kind
        builder.call(call_id, str(function.get("name") or ""), args, x=extra, at=where)
    if legacy is not None:
        args, extra = parse_arguments(legacy.get("arguments"))
        # The deprecated form has no id: its result is the next `role: function` message.
        builder.call(None, str(legacy.get("name") or ""), args, x={"x-legacy": "function_call", **extra},
                     at=where)
    if final:
        builder.finish(text=text, at=where)


class ChatImporter(JsonLogImporter):
    """OpenAI Chat Completions messages: tool_calls and role tool results."""

    name = "openai-chat"
    title = "an OpenAI Chat Completions log"
    description = "OpenAI Chat Completions messages: tool_calls and role tool results"

    def sniff_document(self, doc: Any) -> bool:
        return _sniff_document(doc)

    def sniff_row(self, row: Any) -> bool:
        return _sniff_row(row)

    def reads_document(self, doc: Any) -> bool:
        messages = _messages_of(doc)
        if messages is not None and _is_chat(messages):
            return True
        return isinstance(doc, list) and bool(doc) and all(
            isinstance(d, Mapping) and (m := _messages_of(d)) is not None and _is_chat(m) for d in doc)

    def reads_row(self, row: Any) -> bool:
        messages = _messages_of(row)
        return _is_record(row) or _is_chat_message(row) or (
            isinstance(row, Mapping) and messages is not None and _is_chat(messages))

    def convert_document(self, doc: Any, file: str, stem: str) -> list[ImportedRun]:
        return _convert_document(doc, file, stem)

    def convert_rows(self, rows: Sequence[tuple[int, Any]], file: str, stem: str) -> list[ImportedRun]:
        return _convert_rows(rows, file, stem)
