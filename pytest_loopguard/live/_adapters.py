"""Adapters between a session and the plain dicts the OpenAI and Anthropic SDKs produce (no SDK import).

    turn = openai_response(completion.model_dump())        # or anthropic_response(message.model_dump())
    session.llm_result(turn.llm, turn.tool_calls)
    for c in turn.calls:
        if session.before_call(c.call).runs: ...
        reply = session.after_call(c.call, result)
        messages.append(openai_tool_message(c.id, reply))   # or anthropic_tool_result(c.id, reply)

Field names follow the SDKs' types (FORMATS.md §1–3). Arguments that are not a JSON object keep their
raw text as the call's only argument, `_raw_arguments`, with the parse error beside the call: equal raw
text stays the same call, so a model repeating a broken call is still seen looping.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, final

from ..core._model import LLMCall, ToolCall, ToolResult
from ._session import ToolReply

__all__ = [
    "RAW_ARGUMENTS",
    "AdaptedCall",
    "ModelTurn",
    "anthropic_response",
    "anthropic_result",
    "anthropic_tool_result",
    "openai_function_call_output",
    "openai_response",
    "openai_result",
    "openai_tool_message",
]

RAW_ARGUMENTS = "_raw_arguments"


@final
@dataclass(frozen=True, slots=True)
class AdaptedCall:
    """One tool call of a model response: the provider's id (to pair its result) and the call."""

    id: str
    call: ToolCall
    parse_error: str | None = None  # the arguments were not a JSON object; args hold the raw text


@final
@dataclass(frozen=True, slots=True)
class ModelTurn:
    """A model response as a session takes it: the model call (usage, text) and the calls asked for."""

    llm: LLMCall
    calls: tuple[AdaptedCall, ...] = ()

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(c.call for c in self.calls)


# ---- OpenAI -----------------------------------------------------------------------------------------
def openai_response(response: Mapping[str, Any]) -> ModelTurn:
    """A Chat Completions response (`choices[0].message`), an assistant message alone, or a Responses API
    response (`output` items) → the model call and its function calls."""
    if "output" in response:
        return _responses(response)
    message = response
    if "choices" in response:
        choices = _list(response["choices"], "choices")
        if not choices:
            raise ValueError("openai response: 'choices' is empty")
        message = _map(_map(choices[0], "choices[0]").get("message"), "choices[0].message")
    calls: list[AdaptedCall] = []
    for i, raw in enumerate(_list(message.get("tool_calls") or [], "tool_calls")):
        item = _map(raw, f"tool_calls[{i}]")
        if item.get("type") == "custom":  # a custom tool's input is free text, not JSON
            custom = _map(item.get("custom"), f"tool_calls[{i}].custom")
            calls.append(AdaptedCall(str(item.get("id", "")), ToolCall.of(_name(custom, f"tool_calls[{i}].custom"),
                                                                           {"input": custom.get("input", "")})))
            continue
        function = _map(item.get("function"), f"tool_calls[{i}].function")
        calls.append(_parsed(str(item.get("id", "")), _name(function, f"tool_calls[{i}].function"),
                             function.get("arguments")))
    legacy = message.get("function_call")  # the deprecated single call
    if legacy and not calls:
        function = _map(legacy, "function_call")
        calls.append(_parsed("", _name(function, "function_call"), function.get("arguments")))
    usage = _map(response.get("usage") or {}, "usage")
    llm = LLMCall(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), None,
                  _text(message.get("content")))
    return ModelTurn(llm, tuple(calls))


def _responses(response: Mapping[str, Any]) -> ModelTurn:
    calls: list[AdaptedCall] = []
    texts: list[str] = []
    for i, raw in enumerate(_list(response["output"], "output")):
        item = _map(raw, f"output[{i}]")
        kind = item.get("type")
        if kind == "function_call":  # `call_id` pairs the output; `id` is only the item's own id
            calls.append(_parsed(str(item.get("call_id", "")), _name(item, f"output[{i}]"), item.get("arguments")))
        elif kind == "message":
            text = _text(item.get("content"))
            if text:
                texts.append(text)
    usage = _map(response.get("usage") or {}, "usage")
    llm = LLMCall(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")), None,
                  "\n".join(texts) or None)
    return ModelTurn(llm, tuple(calls))


def openai_result(message: Mapping[str, Any]) -> ToolResult:
    """A `role: tool` message → its result (Chat Completions has no error flag: always ok)."""
    return ToolResult(text=_text(message.get("content")) or "")


def openai_tool_message(call_id: str, reply: ToolReply) -> dict[str, Any]:
    """The Chat Completions tool message answering `call_id` with what the session says to send."""
    return {"role": "tool", "tool_call_id": call_id, "content": reply.content}


def openai_function_call_output(call_id: str, reply: ToolReply) -> dict[str, Any]:
    """The Responses API input item answering the function call `call_id`."""
    return {"type": "function_call_output", "call_id": call_id, "output": reply.content}


# ---- Anthropic --------------------------------------------------------------------------------------
def anthropic_response(message: Mapping[str, Any]) -> ModelTurn:
    """A Messages API response → the model call (text blocks, usage) and its `tool_use` blocks.

    The prompt size is `input_tokens` plus the cache's read and written tokens (Anthropic counts cached
    prompt tokens apart); thinking blocks are not text the model said.
    """
    calls: list[AdaptedCall] = []
    texts: list[str] = []
    for i, raw in enumerate(_list(message.get("content") or [], "content")):
        block = _map(raw, f"content[{i}]")
        kind = block.get("type")
        if kind == "tool_use":
            tool_input = block.get("input")
            if tool_input is None:
                tool_input = {}
            if not isinstance(tool_input, Mapping):
                raise ValueError(f"anthropic response: content[{i}].input: expected an object, got {tool_input!r}")
            calls.append(AdaptedCall(str(block.get("id", "")), ToolCall.of(_name(block, f"content[{i}]"), tool_input)))
        elif kind == "text" and block.get("text"):
            texts.append(str(block["text"]))
    usage = _map(message.get("usage") or {}, "usage")
    parts = [_int(usage.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    prompt = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
    llm = LLMCall(prompt, _int(usage.get("output_tokens")), None, "\n".join(texts) or None)
    return ModelTurn(llm, tuple(calls))


def anthropic_result(block: Mapping[str, Any]) -> ToolResult:
    """A `tool_result` block → its result; `is_error: true` makes it a failure with the text as error."""
    text = _text(block.get("content")) or ""
    return ToolResult.failure(text) if block.get("is_error") else ToolResult(text=text)


def anthropic_tool_result(call_id: str, reply: ToolReply) -> dict[str, Any]:
    """The `tool_result` block (it goes in a user message) answering the `tool_use` block `call_id`."""
    return {"type": "tool_result", "tool_use_id": call_id, "content": reply.content, "is_error": reply.is_error}


# ---- helpers ------------------------------------------------------------------------------------------
def _parsed(call_id: str, name: str, arguments: Any) -> AdaptedCall:
    if arguments is None or arguments == "":
        return AdaptedCall(call_id, ToolCall.of(name, {}))
    if isinstance(arguments, Mapping):  # some SDK wrappers hand over parsed arguments
        return AdaptedCall(call_id, ToolCall.of(name, arguments))
    raw = str(arguments)
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        error = f"arguments are not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        return AdaptedCall(call_id, ToolCall.of(name, {RAW_ARGUMENTS: raw}), error)
    if not isinstance(parsed, Mapping):
        error = f"arguments are JSON but not an object: {type(parsed).__name__}"
        return AdaptedCall(call_id, ToolCall.of(name, {RAW_ARGUMENTS: raw}), error)
    return AdaptedCall(call_id, ToolCall.of(name, parsed))


def _text(content: Any) -> str | None:
    """Message content as text: a string, or the text of its parts (text, output_text, tool results)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [str(p["text"]) for p in content if isinstance(p, Mapping) and p.get("text") is not None]
        return "\n".join(texts)
    return str(content)


def _name(raw: Mapping[str, Any], where: str) -> str:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tool call at {where}: missing 'name'")
    return name


def _map(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
