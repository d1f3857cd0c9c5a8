"""The JSON Schema of the trace format, generated from its description (`io._spec`): every bundled trace and
every imported agent run is valid, known-bad traces are not (tests/core/test_spec.py proves it agrees with
the loader field by field)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.importers import import_traces
from pytest_loopguard.io import _format as traceio
from pytest_loopguard.io._format import trace_to_mapping
from pytest_loopguard.io._schema import trace_schema

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / ".." / "shared" / "corpus" / "real"
TRACE_FILES = sorted(p for p in (ROOT / "traces").rglob("*") if p.suffix in (".yaml", ".yml", ".json", ".jsonl")
                     and p.name != "loopguard-corpus.yaml")  # the corpus manifest of traces/ is no trace


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


def test_every_imported_agent_run_is_valid(validator: jsonschema.Draft202012Validator) -> None:
    logs = sorted(p for p in REAL.rglob("*") if p.suffix in (".traj", ".json", ".jsonl"))
    traces = [t for log in logs for t in import_traces(log)]
    assert len(traces) >= 10
    for trace in traces:
        document = json.loads(json.dumps(trace_to_mapping(trace), default=str))
        assert list(validator.iter_errors(document)) == [], trace.name


def test_schema_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == trace_schema()
    assert cli.main(["schema", "-o", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8")) == trace_schema()
