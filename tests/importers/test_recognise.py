"""What a non-trace file in a trace folder looks like: the importer that recognises it, named in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.errors import NotATraceError
from pytest_loopguard.importers.recognise import looks_like, skip_note
from pytest_loopguard.io._format import load_file

FIXTURES = Path(__file__).parent / "fixtures"
TRACE = "loopguard: 1\nname: ok\nsteps: [{tool: a}]\n"


@pytest.mark.parametrize(("name", "title"), [
    ("otel_export.json", "an OpenTelemetry export"),
    ("openai_responses_records.jsonl", "an OpenAI Responses log"),
    ("anthropic_messages.json", "an Anthropic Messages log"),
    ("tau_bench_results.json", "an OpenAI Chat Completions log"),
])
def test_a_recognised_log_is_named_with_the_hint(name: str, title: str) -> None:
    path = FIXTURES / name
    with pytest.raises(NotATraceError) as err:
        load_file(path)
    assert skip_note(f"traces/{name}", path, err.value) == f"traces/{name} looks like {title}: loopguard import it"


def test_the_loaders_parse_is_reused(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text('{"resourceSpans": [], "note": "not a loopguard trace"}', encoding="utf-8")
    with pytest.raises(NotATraceError) as err:
        load_file(path)
    assert err.value.parsed and err.value.document == {"resourceSpans": [], "note": "not a loopguard trace"}
    path.write_text("{}", encoding="utf-8")  # the importers see what the loader parsed, not the file again
    found = looks_like(path, err.value)
    assert found is not None and found.name == "otel"


def test_an_unrecognised_or_unreadable_file_is_just_not_a_trace(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("retries: 3\n", encoding="utf-8")
    binary = tmp_path / "blob.json"
    binary.write_bytes(b"\xff\xfe{")
    assert skip_note("config.yaml", config) == "config.yaml is not a trace (no top-level 'loopguard' key): skipped"
    assert skip_note("blob.json", binary).endswith("is not a trace (no top-level 'loopguard' key): skipped")


@pytest.mark.parametrize("command", ["run", "validate"])
def test_run_and_validate_skip_logs_in_folders_with_the_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    (tmp_path / "ok.yaml").write_text(TRACE, encoding="utf-8")
    shutil.copy(FIXTURES / "otel_export.json", tmp_path / "export.json")
    assert cli.main([command, str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    export = tmp_path / "export.json"
    assert err == [f"loopguard: {export} looks like an OpenTelemetry export: loopguard import it"]
    assert cli.main([command, str(tmp_path / "export.json")]) == 2  # named on its own, it must be a trace
    assert "missing 'loopguard'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "validate"])
def test_the_skip_lines_are_the_ones_docs_import_md_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    # issue 26 item 6: pytest printed the docs' lines, `run` and `validate` another form of them
    docs = (Path(__file__).resolve().parents[2] / "docs" / "import.md").read_text(encoding="utf-8")
    section = docs.split("## Files in trace folders that are not traces", 1)[1]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "ok.yaml").write_text(TRACE, encoding="utf-8")
    shutil.copy(FIXTURES / "otel_export.json", tmp_path / "traces" / "export.json")
    (tmp_path / "traces" / "notes.yaml").write_text("verbose: true\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main([command, "traces"]) == 0
    assert capsys.readouterr().err.splitlines() == shown
