"""The SDK-log importers never crash: any JSON in a recognisable shape imports to traces that load, or is one
`TraceError` line; odd fields become warnings and unmapped items, never tracebacks."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import Source, get, to_trace
from pytest_loopguard.importers.sdk_formats import sdk_importers

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["", "x", "{", "{}", "[1]"]))
KEYS = st.sampled_from([
    "role", "content", "tool_calls", "tool_call_id", "function", "name", "arguments", "id", "type", "call_id",
    "output", "input", "text", "is_error", "tool_use_id", "usage", "stop_reason", "status", "action", "custom",
    "function_call", "choices", "message", "response", "request", "messages", "parts", "key", "value",
    "stringValue", "intValue", "attributes", "spans", "scopeSpans", "traceId", "spanId", "parentSpanId",
    "startTimeUnixNano", "kvlistValue", "arrayValue", "values", "events",
])
VALUES = st.one_of(
    SCALARS,
    st.sampled_from(["user", "assistant", "tool", "system", "function_call", "function_call_output", "tool_use",
                     "tool_result", "reasoning", "message", "execute_tool", "chat", "gen_ai.operation.name",
                     "gen_ai.tool.call.arguments", "shell_call_output", "local_shell_call"]),
)
JSON = st.recursive(VALUES, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(KEYS, inner, max_size=6)), max_leaves=40)
SHAPES = {
    "openai-chat": lambda v: {"messages": [{"role": "assistant", "tool_calls": v}, {"role": "tool", "content": v}]},
    "openai-responses": lambda v: [{"type": "function_call", "call_id": "c", "arguments": v}, v],
    "anthropic": lambda v: {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "input": v}, v]},
                                         {"role": "user", "content": v}]},
    "otel": lambda v: {"resourceSpans": [{"scopeSpans": [{"spans": [v, {"attributes": v}]}]}]},
}
RECORDS = {  # request/response records (JSONL), whose request repeats odd history
    "openai-chat": lambda v: {"request": {"messages": [v, {"role": "assistant"}, v]}, "response": {"choices": [v]}},
    "openai-responses": lambda v: {"request": {"input": [v, {"type": "reasoning"}, v]},
                                   "response": {"object": "response", "output": [v]}},
    "anthropic": lambda v: {"request": {"messages": [v, {"role": "assistant", "content": v}, v], "system": v},
                            "response": {"type": "message", "role": "assistant", "content": v}},
}


@given(st.sampled_from(sorted(SHAPES)), JSON, st.booleans())
def test_any_json_in_a_known_shape_imports_or_fails_in_one_line(fmt: str, value: Any, as_jsonl: bool) -> None:
    doc = SHAPES[fmt](value)
    text = json.dumps(doc)
    if as_jsonl:
        record = RECORDS.get(fmt, SHAPES[fmt])(value)
        text = json.dumps(record) + "\n" + json.dumps(record) + "\n" + json.dumps(value) + "\n"
    source = Source.from_bytes("fuzz.json", text.encode())
    importer = get(fmt, sdk_importers())
    try:
        runs = list(importer.convert(source))
    except TraceError as exc:
        assert "\n" not in str(exc)
        return
    for run in runs:
        to_trace(run)  # what an importer wrote always loads


@given(JSON, st.booleans())
def test_recognising_any_json_never_raises(value: Any, as_jsonl: bool) -> None:
    text = json.dumps(value) + ("\n" + json.dumps(value) + "\n" if as_jsonl else "")
    for importer in sdk_importers():
        assert importer.sniff(Source.from_bytes("any.json", text.encode())) in (True, False)
