"""OpenTelemetry GenAI import (OTLP JSON): FORMATS.md §4 and the §9 pitfall 7 (opt-in content, old names)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.importers import ImportedRun, Source, available, detect, import_runs, to_trace
from pytest_loopguard.importers.otel import NO_ARGUMENTS, attribute_value
from pytest_loopguard.io._runner import execute

FIXTURES = Path(__file__).parent / "fixtures"
EXPORT = FIXTURES / "otel_export.json"


def conversation(runs: list[ImportedRun]) -> ImportedRun:
    return next(r for r in runs if r.run_id == "conv-42")


def tools(run: ImportedRun) -> list[dict[str, Any]]:
    return [s for s in run.trace["steps"] if "tool" in s]


def test_detected_grouped_loaded_and_replayed() -> None:
    assert detect(Source.from_path(EXPORT), available()).name == "otel"
    runs = import_runs(EXPORT)
    assert sorted(r.run_id for r in runs) == ["0af7651916cd43dd8448eb211c80319c", "conv-42"]
    for run in runs:
        assert execute(to_trace(run)).steps


def test_steps_in_start_time_order_with_times_agents_and_span_ids() -> None:
    run = conversation(import_runs(EXPORT))
    steps = run.trace["steps"]
    assert [s.get("tool") or next(iter(s)) for s in steps] == [
        "message", "llm", "search_flights", "search_flights", "llm", "book", "book"]
    assert [s.get("t") for s in steps] == [None, 10, 500, 520, 900, 1500, 1700]
    assert [s.get("agent") for s in steps[1:]] == ["planner"] * 5 + ["booker"]  # nearest invoke_agent ancestor
    assert steps[2]["source"] == {"file": str(EXPORT), "row": None, "index": "00000000000000t1"}
    assert steps[0]["message"] == {"role": "user", "text": "Book the cheapest flight to Lisbon on May 3.",
                                   "origin": "user"}


def test_current_and_deprecated_usage_names() -> None:
    first, second = (s for s in conversation(import_runs(EXPORT)).trace["steps"] if "llm" in s)
    assert first["llm"] == {"input_tokens": 1200, "output_tokens": 80}
    assert (first["x-provider"], first["x-finish-reasons"], first["x-cache-read-tokens"]) == ("openai", ["tool_calls"],
                                                                                           1024)
    assert second["llm"] == {"input_tokens": 1500, "output_tokens": 64}  # gen_ai.usage.prompt_tokens, .completion_…
    assert second["x-provider"] == "openai"  # gen_ai.system


def test_tool_content_when_recorded_and_honest_absence_when_not() -> None:
    run = conversation(import_runs(EXPORT))
    recorded, bare, timed_out, broken = tools(run)
    assert recorded["args"] == {"to": "LIS", "date": "2026-05-03"}
    assert recorded["result"] == {"text": '[{"flight": "TP1351", "price": 89}]'}
    assert bare["args"] == {} and bare["x-arguments-absent"] is True and "result" not in bare
    assert [u.split(": ", 1)[1] for u in run.unmapped if "00t2" in u] == [NO_ARGUMENTS]
    assert timed_out["args"] == {"flight": "TP1351", "seats": 1}  # a kvlistValue
    assert timed_out["result"] == {"error": "booking service timed out"}
    assert broken["args"] == {} and broken["x-arguments-error"].startswith("invalid JSON")
    assert broken["result"] == {"text": '{"confirmation": "X7Q2"}'}
    assert run.counts["failed"] == 1
    assert [u.split(": ", 1)[1] for u in run.unmapped] == ["span without gen_ai.operation.name", NO_ARGUMENTS]


def test_the_import_table_says_which_calls_have_no_arguments(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["import", str(EXPORT), "-o", str(tmp_path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("conv-42"))
    assert NO_ARGUMENTS in row and "span without gen_ai.operation.name" in row


def test_failed_inference_span_is_an_llm_error() -> None:
    run = next(r for r in import_runs(EXPORT) if r.run_id != "conv-42")
    assert run.trace["steps"][0]["llm"] == {"error": "Overloaded"}


def _snake(value: Any) -> Any:
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): _snake(v) for k, v in value.items()}
    return [_snake(v) for v in value] if isinstance(value, list) else value


def test_collector_jsonl_and_snake_case_exports_give_the_same_steps(tmp_path: Path) -> None:
    doc = json.loads(EXPORT.read_text(encoding="utf-8"))
    (resource,) = doc["resourceSpans"]
    lines = [{"resourceSpans": [{**resource, "scopeSpans": [scope]}]} for scope in resource["scopeSpans"]]
    jsonl = tmp_path / "export.jsonl"
    jsonl.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    snake = tmp_path / "snake.json"
    snake.write_text(json.dumps(_snake(doc)), encoding="utf-8")

    def shape(path: Path) -> list[Any]:
        run = conversation(import_runs(path))
        return [{k: v for k, v in s.items() if k != "source"} for s in run.trace["steps"]]

    assert shape(jsonl) == shape(EXPORT) == shape(snake)
    rows = [s["source"]["row"] for s in conversation(import_runs(jsonl)).trace["steps"]]
    assert rows == [1, 1, 2, 2, 1, 2, 2]


@pytest.mark.parametrize("span_extra", [
    {"events": [{"name": "gen_ai.user.message", "attributes": [{"key": "content", "value": {"stringValue": "hi"}}]}]},
    {"attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.prompt.0.role", "value": {"stringValue": "system"}},
                    {"key": "gen_ai.prompt.0.content", "value": {"stringValue": "be nice"}},
                    {"key": "gen_ai.prompt.1.role", "value": {"stringValue": "user"}},
                    {"key": "gen_ai.prompt.1.content", "value": {"stringValue": "hi"}}]},
], ids=["deprecated-event", "flat-prompt-attributes"])
def test_first_user_text_from_older_instrumentations(tmp_path: Path, span_extra: dict[str, Any]) -> None:
    span = {"traceId": "t", "spanId": "s", "name": "chat m", "startTimeUnixNano": "5",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}], **span_extra}
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}), encoding="utf-8")
    (run,) = import_runs(path)
    assert run.trace["steps"][0]["message"] == {"role": "user", "text": "hi", "origin": "user"}


def test_attribute_value_unions() -> None:
    assert attribute_value({"intValue": "12"}) == 12
    assert attribute_value({"doubleValue": 0.5}) == 0.5
    assert attribute_value({"boolValue": False}) is False
    assert attribute_value({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": 2}]}}) == ["a", 2]
    assert attribute_value({"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}) == {"k": "v"}
    assert attribute_value({"string_value": "snake"}) == "snake"
    assert attribute_value({}) is None


def test_without_tool_spans_calls_come_from_the_recorded_messages() -> None:
    (run,) = import_runs(FIXTURES / "otel_messages_only.json")
    steps = run.trace["steps"]
    assert [s.get("tool") or next(iter(s)) for s in steps] == [
        "message", "llm", "read_file", "stat", "llm", "read_file", "llm", "done"]
    first, stat, again = (s for s in steps if "tool" in s)
    assert (first["x-call-id"], first["args"]) == ("call_a", {"path": "notes.txt"})  # `arguments` is an object
    assert first["result"] == {"text": "one\ntwo\nthree"}  # the schema's `response`
    assert stat["result"] == {"text": '{"size": 14}'}  # the registry example's `result`
    assert again["result"] == {"text": "one\ntwo\nthree"}  # recorded on the operation-details event
    assert first["x-result-source"] == {"index": "00000000000000s2"}
    assert run.warnings == []  # each request repeats earlier responses: history, not orphans
    assert steps[-1]["done"] == {"text": "It has 3 lines."}
    assert execute(to_trace(run)).outcome == "completed"


def test_tool_spans_win_over_recorded_messages(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "otel_messages_only.json").read_text(encoding="utf-8"))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append({"traceId": spans[0]["traceId"], "spanId": "00000000000000x1", "name": "execute_tool read_file",
                  "startTimeUnixNano": "1700000000100000000",
                  "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                                 {"key": "gen_ai.tool.name", "value": {"stringValue": "read_file"}}]})
    path = tmp_path / "both.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (run,) = import_runs(path)
    assert [s["tool"] for s in run.trace["steps"] if "tool" in s] == ["read_file"]  # counted once, from its span


@pytest.mark.parametrize("doc", [
    {"resourceSpans": [{"scopeSpans": 5}]},
    {"resourceSpans": [{"scopeSpans": [{"spans": "x"}]}]},
    {"resourceSpans": [{"instrumentationLibrarySpans": {"spans": []}}]},
])
def test_containers_of_the_wrong_type_hold_nothing(tmp_path: Path, doc: dict[str, Any]) -> None:
    # Found by auditing: a non-list where the export has a list raised TypeError inside the importer.
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    assert [r.trace["steps"] for r in import_runs(path, "otel")] in ([], [[]])
