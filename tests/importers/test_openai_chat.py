"""OpenAI Chat Completions import: FORMATS.md §1 and the §9 pitfalls on small fixtures written from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import ImportedRun, Source, available, detect, import_runs, to_trace
from pytest_loopguard.io._runner import execute

FIXTURES = Path(__file__).parent / "fixtures"


def runs(name: str) -> list[ImportedRun]:
    return import_runs(FIXTURES / name, "openai-chat")


def tools(run: ImportedRun) -> list[dict[str, Any]]:
    return [s for s in run.trace["steps"] if "tool" in s]


def kinds(run: ImportedRun) -> list[str]:
    return [next(k for k in ("tool", "llm", "message", "done") if k in s) for s in run.trace["steps"]]


@pytest.mark.parametrize("name", ["openai_chat_run.json", "openai_chat_records.jsonl", "tau_bench_results.json"])
def test_detected_loaded_and_replayed(name: str) -> None:
    assert detect(Source.from_path(FIXTURES / name), available()).name == "openai-chat"
    for run in runs(name):
        trace = to_trace(run)  # validates: every field the importer wrote is trace format
        assert trace.source is not None and trace.source["kind"] == "imported"
        assert execute(trace).steps  # replays as it is


def test_parallel_calls_are_one_turn_and_out_of_order_results_pair_by_id() -> None:
    (run,) = runs("openai_chat_run.json")
    assert kinds(run)[:5] == ["message", "message", "llm", "tool", "tool"]
    first, second = tools(run)[:2]
    assert (first["args"], first["result"]["text"]) == ({"path": "calc.py"}, "def add(a, b): return a - b")
    assert second["args"] == {"path": "test_calc.py"}
    assert second["result"]["text"] == "def test_add(): assert add(1, 2) == 3"
    assert run.trace["steps"][2]["llm"] == {"text": "Reading both files first."}
    assert second["x-result-source"] == {"index": 3}
    assert second["source"]["index"] == 2


def test_invalid_json_arguments_keep_raw_text_and_parse_error() -> None:
    (run,) = runs("openai_chat_run.json")
    edit = tools(run)[2]
    assert edit["tool"] == "edit_file" and edit["args"] == {}
    assert edit["x-arguments"].startswith('{"path": "calc.py"')
    assert edit["x-arguments-error"].startswith("invalid JSON")
    assert edit["result"] == {"error": "Error: arguments could not be parsed",
                              "x-error-inferred": "text starts with 'Error:'"}


def test_custom_and_legacy_calls() -> None:
    (run,) = runs("openai_chat_run.json")
    patch, legacy, unanswered = tools(run)[3:]
    assert patch["tool"] == "apply_patch" and patch["x-tool-type"] == "custom"
    assert patch["args"]["input"].startswith("*** Update File: calc.py")
    assert legacy["x-legacy"] == "function_call" and legacy["result"] == {"text": "1 passed"}
    assert unanswered["args"] == {} and unanswered["x-result-missing"] is True and "result" not in unanswered


def test_orphans_are_warnings_never_steps() -> None:
    (run,) = runs("openai_chat_run.json")
    assert any("orphan result (call id 'call_zz')" in w for w in run.warnings)
    assert any("call run_tests (call id 'call_e') has no result" in w for w in run.warnings)
    assert "a result nobody asked for" not in str(run.trace)


def test_people_system_and_final_answer() -> None:
    (run,) = runs("openai_chat_run.json")
    steps = run.trace["steps"]
    assert steps[0]["message"] == {"role": "system", "text": "You are a coding agent. Use the tools."}
    assert steps[1]["message"] == {"role": "user", "text": "Fix the failing test in calc.py", "origin": "user"}
    assert steps[1]["x-name"] == "dana"  # a person's name, not an agent's: kept aside
    assert run.unmapped == [f"{FIXTURES / 'openai_chat_run.json'} item 1: image_url content part in a user message"]
    assert steps[-1]["done"] == {"text": "The test passes now: add() subtracted instead of adding."}
    assert execute(to_trace(run)).outcome == "completed"
    assert (run.run_id, run.trace["source"]["model"]) == ("chat-run-7", "gpt-4.1-2025-04-14")


def test_records_count_history_once_and_carry_usage_per_turn() -> None:
    (run,) = runs("openai_chat_records.jsonl")
    assert kinds(run) == ["message", "message", "llm", "tool", "tool", "llm", "done"]
    llms = [s for s in run.trace["steps"] if "llm" in s]
    assert [s["llm"] for s in llms] == [{"input_tokens": 120, "output_tokens": 40},
                                        {"input_tokens": 190, "output_tokens": 12}]
    assert [s["x-finish-reason"] for s in llms] == ["tool_calls", "stop"]
    assert [t["result"]["text"] for t in tools(run)] == ["Paris: 11°C", "Oslo: 2°C"]
    assert tools(run)[1]["x-result-source"] == {"row": 2, "index": "/request/messages/3"}
    assert run.trace["source"]["model"] == "gpt-4o-mini-2024-07-18"


def test_tau_bench_reused_call_ids_pair_by_position_with_warnings() -> None:
    first, second = runs("tau_bench_results.json")
    assert (first.run_id, second.run_id) == ("task-3-trial-0", "task-4-trial-0")
    calls = tools(first)
    assert [c["tool"] for c in calls] == ["get_reservation_details", "cancel_reservation", "cancel_reservation",
                                          "get_user_details"]
    assert [c["result"].get("text", c["result"].get("error")) for c in calls] == [
        '{"status": "active"}', "Error: reservation cannot be cancelled", "Error: reservation cannot be cancelled",
        '{"name": "Ann"}']
    assert sum("call id 'call_0' is reused" in w for w in first.warnings) == 3
    assert first.counts["failed"] == 2
    assert calls[3]["source"]["index"] == "/0/traj/6"
    assert execute(to_trace(second)).outcome == "completed"


def test_wrong_format_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "otel.json"
    path.write_text('{"resourceSpans": []}', encoding="utf-8")
    with pytest.raises(TraceError) as err:
        import_runs(path, "openai-chat")
    assert str(err.value) == (f"{path}: not an openai-chat log (expected OpenAI Chat Completions messages: "
                              "tool_calls and role tool results)")


def test_a_chat_without_tool_calls_needs_from(tmp_path: Path) -> None:
    # role/content text is every chat format's shape: detection claims only chats that call tools
    path = tmp_path / "plain.json"
    path.write_text('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}',
                    encoding="utf-8")
    assert all(imp.name != "openai-chat" for imp in available() if imp.sniff(Source.from_path(path)))
    (run,) = import_runs(path, "openai-chat")
    assert [next(iter(s)) for s in run.trace["steps"]] == ["message", "llm", "done"]


def test_only_the_first_of_several_choices_is_the_turn(tmp_path: Path) -> None:
    choice = {"finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}}
    other = {"finish_reason": "stop", "message": {"role": "assistant", "content": "no"}}
    record = {"request": {"messages": [{"role": "user", "content": "go"}]},
              "response": {"choices": [choice, other], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}}
    path = tmp_path / "n2.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    (run,) = import_runs(path)
    assert [s.get("tool") or next(iter(s)) for s in run.trace["steps"]][:3] == ["message", "llm", "ls"]
    assert sum("other choices of a completion" in u for u in run.unmapped) == 2
