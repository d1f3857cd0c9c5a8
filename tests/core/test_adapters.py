"""SDK adapters: OpenAI and Anthropic response dicts → calls and usage; results and replies back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.core._model import LLMCall, ToolCall, ToolResult
from pytest_loopguard.io._format import load
from pytest_loopguard.live._adapters import (
    RAW_ARGUMENTS,
    anthropic_response,
    anthropic_result,
    anthropic_tool_result,
    openai_function_call_output,
    openai_response,
    openai_result,
    openai_tool_message,
)
from pytest_loopguard.live._session import Session
from pytest_loopguard.runtime._replay import replay

# Shaped as openai-python's ChatCompletion.model_dump() (FORMATS.md §1): two parallel calls, one with
# arguments that are not valid JSON, as the SDK warns can happen.
CHAT_COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [{
        "index": 0,
        "finish_reason": "tool_calls",
        "message": {
            "role": "assistant",
            "content": "Reading both files.",
            "tool_calls": [
                {"id": "call_a", "type": "function",
                 "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
                {"id": "call_b", "type": "function",
                 "function": {"name": "read_file", "arguments": '{"path": "b.py"'}},
            ],
        },
    }],
    "usage": {"prompt_tokens": 1200, "completion_tokens": 35, "total_tokens": 1235,
              "prompt_tokens_details": {"cached_tokens": 1000}},
}

# Shaped as the Responses API's Response.model_dump() (FORMATS.md §2): `id` is not the pairing `call_id`.
RESPONSES: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Listing.", "annotations": []}]},
        {"type": "function_call", "id": "fc_item_1", "call_id": "call_9", "name": "ls", "arguments": '{"dir": "."}'},
        {"type": "function_call", "id": "fc_item_2", "call_id": "call_10", "name": "ls", "arguments": '["x"]'},
    ],
    "usage": {"input_tokens": 800, "output_tokens": 20, "total_tokens": 820},
}

# Shaped as anthropic-sdk-python's Message.model_dump() (FORMATS.md §3).
ANTHROPIC: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude",
    "stop_reason": "tool_use",
    "content": [
        {"type": "thinking", "thinking": "the tests first", "signature": "sig"},
        {"type": "text", "text": "Running the tests."},
        {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "pytest -x"}},
        {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {}},
    ],
    "usage": {"input_tokens": 50, "output_tokens": 70, "cache_creation_input_tokens": 200,
              "cache_read_input_tokens": 3000},
}


def test_openai_chat_completion_gives_usage_text_and_calls_keeping_invalid_arguments_raw() -> None:
    turn = openai_response(CHAT_COMPLETION)
    assert turn.llm == LLMCall(input_tokens=1200, output_tokens=35, text="Reading both files.")
    assert [c.id for c in turn.calls] == ["call_a", "call_b"]
    assert turn.tool_calls[0] == ToolCall.of("read_file", {"path": "a.py"})
    assert turn.calls[0].parse_error is None
    assert turn.tool_calls[1] == ToolCall.of("read_file", {RAW_ARGUMENTS: '{"path": "b.py"'})
    assert turn.calls[1].parse_error is not None and turn.calls[1].parse_error.startswith(
        "arguments are not valid JSON: Expecting ',' delimiter")
    # the message alone (without choices/usage) gives the same calls
    alone = openai_response(CHAT_COMPLETION["choices"][0]["message"])
    assert alone.tool_calls == turn.tool_calls and alone.llm.input_tokens is None


def test_openai_custom_tool_calls_and_the_legacy_function_call() -> None:
    custom = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch"}}]}
    assert openai_response(custom).tool_calls == (ToolCall.of("apply_patch", {"input": "*** Begin Patch"}),)
    legacy = {"role": "assistant", "content": None, "function_call": {"name": "search", "arguments": '{"q": "x"}'}}
    assert openai_response(legacy).tool_calls == (ToolCall.of("search", {"q": "x"}),)
    assert openai_response({"role": "assistant", "content": "done"}).calls == ()


def test_openai_responses_pair_by_call_id_and_skip_reasoning() -> None:
    turn = openai_response(RESPONSES)
    assert turn.llm == LLMCall(input_tokens=800, output_tokens=20, text="Listing.")
    assert [c.id for c in turn.calls] == ["call_9", "call_10"]
    assert turn.tool_calls[0] == ToolCall.of("ls", {"dir": "."})
    assert turn.calls[1].parse_error == "arguments are JSON but not an object: list"


def test_anthropic_tool_use_blocks_usage_with_cache_and_text_without_thinking() -> None:
    turn = anthropic_response(ANTHROPIC)
    assert turn.llm == LLMCall(input_tokens=3250, output_tokens=70, text="Running the tests.")
    assert [(c.id, c.call) for c in turn.calls] == [
        ("toolu_1", ToolCall.of("bash", {"command": "pytest -x"})), ("toolu_2", ToolCall.of("bash", {}))]


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ({"choices": []}, "'choices' is empty"),
        ({"role": "assistant", "tool_calls": [{"id": "x", "type": "function", "function": {"arguments": "{}"}}]},
         r"tool call at tool_calls\[0\].function: missing 'name'"),
        ({"role": "assistant", "tool_calls": {"id": "x"}}, "tool_calls: expected a list, got dict"),
    ],
)
def test_malformed_openai_responses_are_one_clear_error(response: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        openai_response(response)


def test_anthropic_tool_use_input_must_be_an_object() -> None:
    bad = {"content": [{"type": "tool_use", "id": "t", "name": "bash", "input": "ls"}]}
    with pytest.raises(ValueError, match=r"content\[0\]\.input: expected an object, got 'ls'"):
        anthropic_response(bad)


def test_tool_results_from_each_sdk() -> None:
    assert openai_result({"role": "tool", "tool_call_id": "a", "content": "ok"}) == ToolResult(text="ok")
    parts = {"role": "tool", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}
    assert openai_result(parts) == ToolResult(text="x\ny")
    assert anthropic_result({"type": "tool_result", "tool_use_id": "t", "content": "boom", "is_error": True}) == (
        ToolResult.failure("boom"))
    block = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "fine"}]}
    assert anthropic_result(block) == ToolResult(text="fine")


def test_replies_go_back_in_each_sdks_shape(tmp_path: Path) -> None:
    call = ToolCall.of("read_file", {"path": "a.py"})
    with Session("default", now_ms=None) as session:
        replies = []
        for _ in range(5):  # default: identical reads warn at 3, block at 5
            session.before_call(call)
            replies.append(session.after_call(call, "text"))
    ok, warned, blocked = replies[0], replies[2], replies[4]
    assert openai_tool_message("call_a", ok) == {"role": "tool", "tool_call_id": "call_a", "content": "text"}
    assert openai_function_call_output("call_9", warned) == {
        "type": "function_call_output", "call_id": "call_9", "output": warned.content}
    assert warned.content.startswith("text\n\n") and warned.action == "warn"
    assert anthropic_tool_result("toolu_1", blocked) == {
        "type": "tool_result", "tool_use_id": "toolu_1", "content": blocked.content, "is_error": True}
    assert blocked.action == "block" and blocked.content.startswith("Error: ")


def test_an_anthropic_shaped_loop_records_a_trace_that_replays_to_its_verdicts(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    response = {**ANTHROPIC, "content": [ANTHROPIC["content"][2]]}  # the model keeps asking for the same call
    with Session("default", record=path, now_ms=None) as session:
        session.message("user", "make the tests pass")
        for _ in range(8):
            turn = anthropic_response(response)
            session.before_llm()
            session.llm_result(turn.llm, turn.tool_calls)
            for c in turn.calls:
                decision = session.before_call(c.call)
                result = anthropic_result({"content": "1 failed", "is_error": True}) if decision.runs else None
                anthropic_tool_result(c.id, session.after_call(c.call, result))
            if session.ended:
                break
    replayed = replay(load(path))
    assert [s.action for s in session.steps] == [s.action for s in replayed.steps]
    assert session.outcome == replayed.outcome
    assert {"warn", "stop"} <= {s.action for s in session.steps} and session.outcome == "stopped"
