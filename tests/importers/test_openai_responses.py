"""OpenAI Responses import: FORMATS.md §2 and the §9 pitfalls (call_id ≠ id, reasoning, parallel calls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.importers import ImportedRun, Source, available, detect, import_runs, to_trace
from pytest_loopguard.io._runner import execute

FIXTURES = Path(__file__).parent / "fixtures"


def run_of(name: str) -> ImportedRun:
    (run,) = import_runs(FIXTURES / name, "openai-responses")
    return run


def tools(run: ImportedRun) -> list[dict[str, Any]]:
    return [s for s in run.trace["steps"] if "tool" in s]


@pytest.mark.parametrize("name", ["openai_responses_items.json", "openai_responses_records.jsonl"])
def test_detected_loaded_and_replayed(name: str) -> None:
    assert detect(Source.from_path(FIXTURES / name), available()).name == "openai-responses"
    assert execute(to_trace(run_of(name))).steps


def test_outputs_pair_by_call_id_not_item_id_in_any_order() -> None:
    makefile, log = tools(run_of("openai_responses_items.json"))[:2]
    assert (makefile["x-call-id"], makefile["x-item-id"]) == ("call_mk", "fc_item_1")
    assert makefile["result"] == {"text": "all:\n\tcc -o app main.c"}  # its output came second
    assert log["result"] == {"text": "make: *** [all] Error 2"}


def test_reasoning_items_are_not_steps_and_consecutive_output_items_are_one_turn() -> None:
    run = run_of("openai_responses_items.json")
    steps = run.trace["steps"]
    assert not any("reasoning" in json.dumps(s.get("llm", {})) for s in steps)
    assert [next(k for k in ("tool", "llm", "message", "done") if k in s) for s in steps[:5]] == [
        "message", "message", "llm", "tool", "tool"]
    assert steps[2]["x-reasoning-items"] == 1
    assert steps[0]["message"] == {"role": "system", "text": "You are a shell agent."}  # developer role


def test_client_side_tool_items_and_failures() -> None:
    run = run_of("openai_responses_items.json")
    shell, patch, cut, search = tools(run)[2:]
    assert shell["tool"] == "local_shell" and shell["args"]["command"] == ["make", "all"]
    assert shell["result"] == {"text": "main.c:3: error: expected ';'"}  # its output names the call in `id`
    assert (patch["tool"], patch["args"]["input"][:8], patch["x-tool-type"]) == ("apply_patch", "*** Upda", "custom")
    assert cut["args"] == {} and cut["x-arguments-error"].startswith("invalid JSON") and cut["x-status"] == "incomplete"
    assert cut["result"] == {"error": "arguments were cut off"}
    assert search["result"] == {"error": "status: failed"} and search["x-tool-type"] == "server"
    assert run.counts["failed"] == 2
    assert any("orphan result (call id 'call_ghost')" in w for w in run.warnings)


def test_records_usage_reasoning_tokens_exit_codes_and_done() -> None:
    run = run_of("openai_responses_records.jsonl")
    steps = run.trace["steps"]
    assert steps[0]["message"] == {"role": "user", "text": "List the files, then count them.", "origin": "user"}
    assert steps[1]["llm"] == {"input_tokens": 300, "output_tokens": 220}  # reasoning tokens are inside output
    assert (steps[1]["x-reasoning-tokens"], steps[1]["x-reasoning-items"]) == (192, 1)
    ls, count = tools(run)
    assert ls["result"] == {"text": "a.py\nb.py"}  # previous_response_id: the request holds only what is new
    assert count["args"] == {"commands": ["ls | wc -l", "false"], "timeout_ms": 1000}
    assert count["result"] == {"text": "2\n", "exit_code": 1}
    assert run.counts["failed"] == 1
    assert steps[-1]["done"] == {"text": "There are 2 files."}
    result = execute(to_trace(run))
    assert result.outcome == "completed"
    assert result.trace.steps[4].result is not None and result.trace.steps[4].result.ok is False


def test_input_and_output_document(tmp_path: Path) -> None:
    doc = {"id": "resp_doc", "input": [{"role": "user", "content": "hi"},
                                       {"type": "function_call_output", "call_id": "c0", "output": "x"}],
           "output": [{"type": "function_call", "id": "fc", "call_id": "c1", "name": "ping", "arguments": "{}"}],
           "response": {"usage": {"input_tokens": 5, "output_tokens": 1}}}
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (run,) = import_runs(path)
    assert run.run_id == "resp_doc"
    assert [s.get("tool") or next(iter(s)) for s in run.trace["steps"]] == ["message", "llm", "ping"]
    assert run.trace["steps"][1]["llm"] == {"input_tokens": 5, "output_tokens": 1}
    assert run.trace["steps"][2]["source"]["index"] == "/output/0"
    assert any("orphan result (call id 'c0')" in w for w in run.warnings)
