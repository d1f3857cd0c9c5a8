"""The shipped JSON Schema of the trace format: every bundled trace is valid, known-bad traces are not, and
its fields are the loader's fields (so the two cannot drift apart)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.io import _format as traceio
from pytest_loopguard.io._schema import trace_schema

ROOT = Path(__file__).resolve().parents[2]
TRACE_FILES = sorted(p for p in (ROOT / "traces").rglob("*") if p.suffix in (".yaml", ".yml", ".json", ".jsonl"))


def documents(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return [json.loads(text)]
    if path.suffix == ".jsonl":
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [{**lines[0], "steps": lines[1:]}]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the loader traceio prefers
    return [d for d in yaml.load_all(text, Loader=loader) if d is not None]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = trace_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_there_are_bundled_traces() -> None:
    assert len(TRACE_FILES) > 100


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_bundled_trace_is_valid(path: Path, validator: jsonschema.Draft202012Validator) -> None:
    for document in documents(path):
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]
        assert errors == []


def test_doc_examples_are_valid(validator: jsonschema.Draft202012Validator) -> None:
    # The complete traces in docs/trace-format.md (the ```yaml blocks with `loopguard: 1`).
    text = (ROOT / "docs" / "trace-format.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    traces = [yaml.safe_load(b) for b in blocks if b.startswith("loopguard: 1")]
    assert len(traces) >= 2
    for trace in traces:
        assert list(validator.iter_errors(trace)) == []


BAD = [
    ({"name": "x", "steps": []}, "'loopguard' is a required property"),
    ({"loopguard": 2, "name": "x", "steps": []}, "1 was expected"),
    ({"loopguard": 1, "name": "", "steps": []}, "should be non-empty"),
    ({"loopguard": 1, "name": "x"}, "'steps' is a required property"),
    ({"loopguard": 1, "name": "x", "stpes": []}, "'stpes' does not match any of the regexes"),
    ({"loopguard": 1, "name": "x", "steps": [{"tool": "a", "arg": 1}]}, "'arg' does not match any of the regexes"),
    ({"loopguard": 1, "name": "x", "steps": [{"tool": "a", "phase": "act"}]}, "is valid under each of"),
    ({"loopguard": 1, "name": "x", "steps": [{"llm": {}, "args": {}}]}, "'tool' is a dependency of 'args'"),
    ({"loopguard": 1, "name": "x", "steps": [{"tool": "a", "expect": "blocked"}]}, "is not valid under any"),
    ({"loopguard": 1, "name": "x", "steps": [{"tool": "a", "result": {"ok": True, "error": "e"}}]}, "should not be"),
    ({"loopguard": 1, "name": "x", "steps": [{"message": {"role": "system", "origin": "user"}}]},
     "'user' was expected"),
    ({"loopguard": 1, "name": "x", "steps": [{"message": {"origin": "agent"}}]}, "'name' is a required property"),
    ({"loopguard": 1, "name": "x", "steps": [{"rejected": {"text": "hi"}}]}, "'reason' is a required property"),
    ({"loopguard": 1, "name": "x", "steps": [], "expect": {"counts": {"blocked": 1}}}, "is not one of"),
    ({"loopguard": 1, "name": "x", "steps": [{"tool": "a", "t": -1}]}, "less than the minimum"),
]


def _messages(error: jsonschema.ValidationError) -> list[str]:
    """The error and, under anyOf/oneOf, the errors of each branch (what an editor shows on hover)."""
    return [error.message, *(m for sub in error.context or () for m in _messages(sub))]


@pytest.mark.parametrize(("document", "message"), BAD)
def test_bad_trace_is_invalid(document: dict[str, Any], message: str, validator: jsonschema.Draft202012Validator
                              ) -> None:
    messages = [m for e in validator.iter_errors(document) for m in _messages(e)]
    assert any(message in m for m in messages), messages
    # The loader rejects every one of them too.
    with pytest.raises(traceio.TraceError):
        traceio.trace_from_mapping(document)


def test_schema_fields_are_the_loaders_fields() -> None:
    schema = trace_schema()
    d = schema["$defs"]
    assert tuple(schema["properties"]) == traceio.TOP_KEYS
    step_keys = set(d["step"]["properties"])
    assert step_keys == {*traceio.STEP_KINDS_KEYS, "args", "result", "expect", "t", "agent", "source"}
    assert tuple(d["result"]["properties"]) == traceio.RESULT_KEYS
    assert tuple(d["llm"]["properties"]) == traceio.LLM_KEYS
    assert tuple(d["message"]["properties"]) == traceio.MESSAGE_KEYS
    assert tuple(d["rejected"]["properties"]) == traceio.REJECTED_KEYS
    assert tuple(d["stepSource"]["properties"]) == traceio.STEP_SOURCE_KEYS
    assert tuple(d["runExpect"]["properties"]) == traceio.RUN_EXPECT_KEYS
    assert tuple(d["stepExpect"]["anyOf"][1]["properties"]) == traceio.EXPECT_KEYS
    assert tuple(d["task"]["properties"]["budget"]["properties"]) == traceio.BUDGET_KEYS
    assert d["stepExpect"]["anyOf"][0]["enum"] == list(traceio.STEP_ACTIONS)


def test_schema_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == trace_schema()
    assert cli.main(["schema", "-o", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8")) == trace_schema()
