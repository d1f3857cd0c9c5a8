"""Anthropic Messages import: FORMATS.md §3 and the §9 pitfalls (results in user messages, is_error, thinking)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.importers import ImportedRun, Source, available, detect, import_runs, to_trace
from pytest_loopguard.io._runner import execute

FIXTURES = Path(__file__).parent / "fixtures"


def run_of(name: str) -> ImportedRun:
    (run,) = import_runs(FIXTURES / name, "anthropic")
    return run


def tools(run: ImportedRun) -> list[dict[str, Any]]:
    return [s for s in run.trace["steps"] if "tool" in s]


@pytest.mark.parametrize("name", ["anthropic_messages.json", "anthropic_records.jsonl"])
def test_detected_loaded_and_replayed(name: str) -> None:
    assert detect(Source.from_path(FIXTURES / name), available()).name == "anthropic"
    assert execute(to_trace(run_of(name))).steps


def test_a_user_message_of_tool_results_is_not_a_person_speaking() -> None:
    run = run_of("anthropic_messages.json")
    messages = [s["message"] for s in run.trace["steps"] if "message" in s]
    assert messages == [
        {"role": "system", "text": "You are a careful coding agent."},
        {"role": "user", "text": "The CI job fails on test_parse. Find out why.", "origin": "user"},
        # text sent beside tool results is the harness talking, not the person
        {"role": "user", "text": "<system-reminder>The todo list is empty.</system-reminder>", "origin": "harness"},
        {"role": "user", "text": "Stop re-running it; explain the failure.", "origin": "user"},
    ]
    assert (run.counts["messages.user"], run.counts["messages.harness"]) == (2, 1)
    trace = to_trace(run)
    assert [s.message.origin for s in trace.steps if s.message is not None and s.message.role == "user"] == [
        "user", "harness", "user"]


def test_results_pair_by_tool_use_id_and_is_error_fails() -> None:
    run = run_of("anthropic_messages.json")
    test, view, again, search = tools(run)
    assert view["result"] == {"text": "def parse(s):\n    return int(s)"}
    assert test["result"] == {"error": "FAILED tests/test_parse.py::test_parse - ValueError"}
    assert again["args"] == test["args"] and again["result"] == test["result"]
    assert search["result"] == {"error": "max_uses_exceeded"} and search["x-tool-type"] == "server"
    assert run.counts["failed"] == 3
    assert any("orphan result (call id 'toolu_99')" in w for w in run.warnings)
    assert run.unmapped == []


def test_thinking_is_no_step_but_tokens_count_with_cache() -> None:
    run = run_of("anthropic_messages.json")
    first, second, last = (s for s in run.trace["steps"] if "llm" in s)
    # input_tokens leaves out cached prompt tokens; the context the model saw is the sum
    assert first["llm"] == {"input_tokens": 2340, "output_tokens": 180,
                            "text": "Running the test and reading the parser."}
    assert (first["x-uncached-input-tokens"], first["x-thinking-blocks"], first["x-stop-reason"]) == (40, 1, "tool_use")
    assert second["x-thinking-blocks"] == 1 and "text" not in second["llm"]
    assert "thinking" not in json.dumps(run.trace["steps"]).replace("x-thinking-blocks", "")
    assert last["x-stop-reason"] == "end_turn"


def test_end_turn_is_done_after_server_tools_but_max_tokens_is_not() -> None:
    done = run_of("anthropic_messages.json").trace["steps"][-1]
    assert done["done"] == {"text": "parse() calls int() on text with a trailing newline."}
    records = run_of("anthropic_records.jsonl")
    assert "done" not in records.trace["steps"][-1] and records.trace["steps"][-1]["x-stop-reason"] == "max_tokens"
    assert execute(to_trace(records)).outcome == "incomplete"


def test_records_count_history_once() -> None:
    run = run_of("anthropic_records.jsonl")
    assert [next(iter(s)) for s in run.trace["steps"]] == ["message", "message", "llm", "tool", "llm"]
    assert tools(run)[0]["result"] == {"text": "buy milk"}
    assert tools(run)[0]["x-result-source"] == {"row": 2, "index": "/request/messages/2"}
    assert run.trace["steps"][4]["source"] == {"file": str(FIXTURES / "anthropic_records.jsonl"), "row": 2,
                                               "index": "/response"}


def test_wrapped_transcript_lines(tmp_path: Path) -> None:
    lines = [
        {"type": "user", "message": {"role": "user", "content": "list files"}},
        # a streamed response: one line per content block, each repeating the message id
        {"type": "assistant", "message": {"id": "msg_9", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t0", "name": "Bash", "input": {"command": "pwd"}}], "stop_reason": None,
            "usage": {"input_tokens": 7, "output_tokens": 1}}},
        {"type": "assistant", "message": {"id": "msg_9", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}], "stop_reason": "tool_use",
            "usage": {"input_tokens": 9, "output_tokens": 3}}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                                    "content": "a.py"}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0",
                                                                    "content": "/src"}]}},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    (run,) = import_runs(path)
    assert [next(iter(s)) for s in run.trace["steps"]] == ["message", "llm", "tool", "tool"]  # one turn
    assert run.trace["steps"][1]["llm"] == {"input_tokens": 9, "output_tokens": 3}  # the response's last usage
    assert [s["result"] for s in run.trace["steps"][2:]] == [{"text": "/src"}, {"text": "a.py"}]
