"""OpenTelemetry GenAI spans in OTLP JSON (an export document, or the collector's JSONL of exports) as traces.

Mapping (FORMATS.md §4): spans are grouped into runs by `gen_ai.conversation.id` (else by trace id) and
ordered by start time. An inference span (`chat`, `text_completion`, `generate_content`) is an `llm` step with
its usage, under current names (`gen_ai.usage.input_tokens`) or deprecated ones (`gen_ai.usage.prompt_tokens`).
An `execute_tool` span is a tool step: `gen_ai.tool.name`, `gen_ai.tool.call.id`, and the opt-in content
attributes `gen_ai.tool.call.arguments` / `.result` when they were recorded; without them the call has no
arguments, and the run's `unmapped` list says so per call. `error.type` or an ERROR span status makes a step
failed. A step's `agent` is `gen_ai.agent.name` on its span or its nearest ancestor (an `invoke_agent` span).
The first user text found (`gen_ai.input.messages`, the deprecated `gen_ai.user.message` event or flat
`gen_ai.prompt.N.*` attributes) opens the run as a user message. A run with no `execute_tool` span takes its
calls from the `tool_call` parts of the recorded output messages and their results from later input
messages' `tool_call_response` parts (`response`, or `result` as the registry's example writes it). A run
whose last step is a turn that stopped with text ends with `done`. Each step's `t` is its start time in
milliseconds after the run's first span, and `source.index` is its span id.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..core._limits import MAX_INT_DIGITS
from ..core._safeload import parse_foreign_json
from ..errors import TraceError
from .base import ImportedRun
from .build import number_in_text
from .json_log import JsonLogImporter
from .run_builder import At, RunBuilder, content_text, list_at, mapping_at, parse_arguments

__all__ = ["OtelImporter", "attribute_value"]

ORIGIN: Final = "otel"
INFERENCE: Final = frozenset({"chat", "text_completion", "generate_content"})
AGENT_OPS: Final = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})
STATUS_ERROR: Final = (2, "STATUS_CODE_ERROR")
# current name first, then the deprecated one (FORMATS.md §4's table)
INPUT_TOKENS: Final = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
OUTPUT_TOKENS: Final = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
PROVIDER: Final = ("gen_ai.provider.name", "gen_ai.system")
NO_ARGUMENTS: Final = "tool call without arguments (gen_ai.tool.call.arguments not recorded; content capture is opt-in)"
DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
_CAMEL: Final = re.compile(r"(?<!^)(?=[A-Z])")
_PROMPT_ATTR: Final = re.compile(r"^gen_ai\.prompt\.(\d+)\.(role|content)$")


# Parsed JSON holds plain dicts: `isinstance(x, dict)` here, the cheap check, on the per-span paths.
def _get(obj: Any, key: str) -> Any:
    """`obj[key]` under OTLP JSON's lowerCamelCase name or the protobuf snake_case one some exporters write."""
    if not isinstance(obj, dict):
        return None
    if key in obj:
        return obj[key]
    return obj.get(_snake(key))


@functools.cache
def _snake(key: str) -> str:
    return _CAMEL.sub("_", key).lower()


def attribute_value(value: Any) -> Any:
    """A plain Python value from an OTLP `AnyValue` union (`stringValue`, `intValue` as a string, arrays, kvlists)."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        found = _get(value, key)
        if found is not None:
            return found
    number = _get(value, "intValue")
    if number is not None:
        try:
            # int64 travels as a JSON string; a float (Infinity is refused by the reader, a big one is not)
            # or a string of more digits than int() converts stays as it is
            return int(number) if not isinstance(number, str) or len(number) <= MAX_INT_DIGITS else number
        except (TypeError, ValueError, OverflowError):
            return number
    array = _get(value, "arrayValue")
    if isinstance(array, dict):
        return [attribute_value(v) for v in list_at(array, "values")]
    kvlist = _get(value, "kvlistValue")
    if isinstance(kvlist, dict):
        return _attributes(kvlist.get("values"))
    return None


def _attributes(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):  # some exporters write attributes as a plain object
        return dict(raw)
    out: dict[str, Any] = {}
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("key"), str):
            out[entry["key"]] = attribute_value(entry.get("value"))
    return out


@dataclass(slots=True)
class _Span:
    trace_id: str
    span_id: str
    parent: str
    name: str
    start: int
    attributes: dict[str, Any]
    status: Mapping[str, Any]
    events: list[Any]
    row: int | None
    order: int

    @property
    def operation(self) -> str:
        op = self.attributes.get("gen_ai.operation.name")
        return op if isinstance(op, str) else ""

    def first(self, names: Sequence[str]) -> Any:
        return next((self.attributes[n] for n in names if self.attributes.get(n) is not None), None)


def _items(value: Any) -> list[Any]:
    # An export's containers are lists; anything else (a hostile or broken file) holds nothing.
    return value if isinstance(value, list) else []


def _nanos(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _spans(doc: Any, row: int | None, start_order: int) -> Iterator[_Span]:
    order = start_order
    for resource in _items(_get(doc, "resourceSpans")):
        scopes = _items(_get(resource, "scopeSpans") or _get(resource, "instrumentationLibrarySpans"))
        for scope in scopes:
            for raw in _items(_get(scope, "spans")):
                if not isinstance(raw, Mapping):
                    continue
                yield _Span(
                    trace_id=str(_get(raw, "traceId") or ""),
                    span_id=str(_get(raw, "spanId") or ""),
                    parent=str(_get(raw, "parentSpanId") or ""),
                    name=str(raw.get("name") or ""),
                    start=_nanos(_get(raw, "startTimeUnixNano")),
                    attributes=_attributes(raw.get("attributes")),
                    status=mapping_at(raw, "status"),
                    events=list_at(raw, "events"),
                    row=row,
                    order=order,
                )
                order += 1


def _is_export(doc: Any) -> bool:
    return isinstance(_get(doc, "resourceSpans"), list)


class OtelImporter(JsonLogImporter):
    """OpenTelemetry GenAI spans (OTLP JSON)."""

    name = "otel"
    title = "an OpenTelemetry export"
    description = "OpenTelemetry GenAI spans in OTLP JSON (resourceSpans): chat and execute_tool spans"

    def sniff_document(self, doc: Any) -> bool:
        return _is_export(doc)

    def sniff_row(self, row: Any) -> bool:
        return _is_export(row)

    def convert_document(self, doc: Any, file: str, stem: str) -> list[ImportedRun]:
        return _convert(list(_spans(doc, None, 0)), file)

    def convert_rows(self, rows: Sequence[tuple[int, Any]], file: str, stem: str) -> list[ImportedRun]:
        spans: list[_Span] = []
        for line, row in rows:
            spans.extend(_spans(row, line, len(spans)))
        return _convert(spans, file)


def _convert(spans: list[_Span], file: str) -> list[ImportedRun]:
    by_id = {s.span_id: s for s in spans if s.span_id}
    conversation: dict[str, str] = {}
    for s in spans:
        cid = s.attributes.get("gen_ai.conversation.id")
        if isinstance(cid, str) and cid:
            conversation.setdefault(s.trace_id, cid)
    runs: dict[str, list[_Span]] = {}
    for s in spans:
        runs.setdefault(conversation.get(s.trace_id, s.trace_id), []).append(s)
    return [_run(key or "otel-run", members, by_id, file) for key, members in runs.items()]


def _agent(span: _Span, by_id: Mapping[str, _Span]) -> str | None:
    seen: set[str] = set()
    current: _Span | None = span
    while current is not None and current.span_id not in seen:
        name = current.attributes.get("gen_ai.agent.name")
        if isinstance(name, str) and name:
            return name
        seen.add(current.span_id)  # a malformed export may hold a parent cycle
        current = by_id.get(current.parent)
    return None


def _failed(span: _Span) -> str | None:
    """The error of a failed span: the status message, else `error.type`; None when it succeeded."""
    error_type = span.attributes.get("error.type")
    code = span.status.get("code")
    if code not in STATUS_ERROR and not error_type:
        return None
    message = span.status.get("message")
    return str(message or error_type or "span status ERROR")


def _run(key: str, spans: list[_Span], by_id: Mapping[str, _Span], file: str) -> ImportedRun:
    spans.sort(key=lambda s: (s.start, s.order))
    builder = RunBuilder(file, key, fmt=ORIGIN)
    origin_time = spans[0].start if spans else 0
    for span in spans:
        prompt = _first_user_text(span) if span.operation in INFERENCE else None
        if prompt:
            builder.say("user", prompt, origin="user", at=(span.row, span.span_id))
            break
    # Without execute_tool spans the calls live only in the messages the inference spans recorded (opt-in).
    from_messages = not any(span.operation == "execute_tool" for span in spans)
    last_turn: tuple[dict[str, Any], _Span, At, str | None] | None = None
    for span in spans:
        op = span.operation
        at: At = (span.row, span.span_id or span.order)
        agent = _agent(span, by_id)
        if op in INFERENCE:
            if from_messages:
                _message_results(span, builder, at)
            step = builder.turn(tokens=_usage(span), error=_failed(span), x=_llm_extensions(span, builder),
                                at=at, agent=agent)
            last_turn = (step, span, at, agent)
            if from_messages:
                _message_calls(span, builder, at, agent)
        elif op == "execute_tool":
            step = _tool(span, builder, at, agent)
        else:
            if op not in AGENT_OPS:
                builder.note(f"{op} span" if op else "span without gen_ai.operation.name", at)
            continue
        step["t"] = max(0, (span.start - origin_time) // 1_000_000)
    if last_turn is not None and builder.steps[-1] is last_turn[0]:
        # The run ends on a model turn: when it answered in words and stopped, that is the final answer.
        answer = _answer(last_turn[1])
        if answer is not None:
            builder.finish(text=answer, at=last_turn[2], agent=last_turn[3])
    builder.header_x["trace-ids"] = sorted({s.trace_id for s in spans})
    return builder.build()


def _answer(span: _Span) -> str | None:
    """The text of an output that stopped without asking for a tool (`finish_reason: stop`), else None."""
    reasons = span.attributes.get("gen_ai.response.finish_reasons")
    for message in _messages(span, "gen_ai.output.messages"):
        parts = [p for p in list_at(message, "parts") if isinstance(p, Mapping)]
        stopped = message.get("finish_reason", reasons[0] if isinstance(reasons, list) and reasons else None)
        if stopped == "stop" and not any(p.get("type") == "tool_call" for p in parts):
            return content_text(parts) or None
    return None


def _message_calls(span: _Span, builder: RunBuilder, at: At, agent: str | None) -> None:
    """The `tool_call` parts of the span's output messages, as calls waiting for their results."""
    for message in _messages(span, "gen_ai.output.messages"):
        for part in list_at(message, "parts"):
            if isinstance(part, Mapping) and part.get("type") == "tool_call":
                args, extra = parse_arguments(part.get("arguments"))
                call_id = part.get("id") if isinstance(part.get("id"), str) else None
                builder.call(call_id, str(part.get("name") or ""), args, x=extra, at=at, agent=agent)


def _message_results(span: _Span, builder: RunBuilder, at: At) -> None:
    """Results of waiting calls from the `tool_call_response` parts of the span's input messages.

    Each request repeats the history, so a response whose call no longer waits is history, not an orphan.
    The schema names the payload `response`, the registry's example `result`: both are read.
    """
    for message in _messages(span, "gen_ai.input.messages"):
        for part in list_at(message, "parts"):
            if not (isinstance(part, Mapping) and part.get("type") == "tool_call_response"):
                continue
            call_id = part.get("id") if isinstance(part.get("id"), str) else None
            if builder.waits_for(call_id):
                payload = part.get("response", part.get("result"))
                text = payload if isinstance(payload, str) else json.dumps(payload, default=str)
                builder.result(call_id, {"text": text}, at=at)


def _usage(span: _Span) -> dict[str, int]:
    tokens: dict[str, int] = {}
    for key, names in (("input_tokens", INPUT_TOKENS), ("output_tokens", OUTPUT_TOKENS)):
        value = span.first(names)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            tokens[key] = value
    return tokens


def _llm_extensions(span: _Span, builder: RunBuilder) -> dict[str, Any]:
    model = span.first(("gen_ai.response.model", "gen_ai.request.model"))
    if isinstance(model, str):
        builder.set_model(model)
    extensions: dict[str, Any] = {}
    for key, name in (("x-finish-reasons", "gen_ai.response.finish_reasons"), ("x-response-id", "gen_ai.response.id")):
        if span.attributes.get(name) is not None:
            extensions[key] = span.attributes[name]
    provider = span.first(PROVIDER)
    if provider is not None:
        extensions["x-provider"] = provider
    for key, name in (("x-cache-read-tokens", "gen_ai.usage.cache_read.input_tokens"),
                      ("x-reasoning-tokens", "gen_ai.usage.reasoning.output_tokens")):
        if isinstance(span.attributes.get(name), int):
            extensions[key] = span.attributes[name]
    return extensions


def _tool(span: _Span, builder: RunBuilder, at: At, agent: str | None) -> dict[str, Any]:
    name = span.attributes.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        name = span.name.removeprefix("execute_tool").strip()
    raw_args = span.attributes.get("gen_ai.tool.call.arguments")
    args, extra = parse_arguments(raw_args)
    if raw_args is None:
        extra["x-arguments-absent"] = True
        builder.note(NO_ARGUMENTS, at)
    result: dict[str, Any] = {}
    error = _failed(span)
    raw_result = span.attributes.get("gen_ai.tool.call.result")
    if raw_result is not None:
        result["text"] = raw_result if isinstance(raw_result, str) else json.dumps(raw_result, default=str)
    if error is not None:
        result["error"] = error
    call_id = span.attributes.get("gen_ai.tool.call.id")
    # A span without result or error content is a plain success: the format's step without `result`.
    return builder.call(call_id if isinstance(call_id, str) else None, name, args, x=extra,
                        result=result or None, at=at, agent=agent, awaits_result=False)


def _messages(span: _Span, key: str) -> list[Mapping[str, Any]]:
    """`gen_ai.input.messages` / `.output.messages` (JSON text or a structured value), from the span or from
    its `gen_ai.client.inference.operation.details` event, where newer instrumentations record content."""
    value = span.attributes.get(key)
    if value is None:
        for event in span.events:
            if isinstance(event, Mapping) and event.get("name") == DETAILS_EVENT:
                value = _attributes(event.get("attributes")).get(key)
    if isinstance(value, str):
        try:
            value = parse_foreign_json(value)  # the one safe reader: depth, digits, NaN
        except TraceError:
            return []
    return [m for m in value if isinstance(m, Mapping)] if isinstance(value, list) else []


def _first_user_text(span: _Span) -> str | None:
    for message in _messages(span, "gen_ai.input.messages"):
        if message.get("role") == "user":
            text = content_text(message.get("parts") or message.get("content"))
            if text:
                return text
    for event in span.events:
        if isinstance(event, Mapping) and event.get("name") == "gen_ai.user.message":
            content = _attributes(event.get("attributes")).get("content")
            if isinstance(content, str) and content:
                return content
    prompts: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if key.startswith("gen_ai.prompt.") and (match := _PROMPT_ATTR.match(key)) and (
                index := number_in_text(match[1])) is not None:
            prompts.setdefault(index, {})[match[2]] = value
    for _, prompt in sorted(prompts.items()):
        if prompt.get("role") == "user" and isinstance(prompt.get("content"), str) and prompt["content"]:
            return str(prompt["content"])
    return None
