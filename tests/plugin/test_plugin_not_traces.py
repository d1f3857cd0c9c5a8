"""Only trace files are collected: other JSON/YAML under loopguard_paths is skipped with one line, never an error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

FIXTURES = Path(__file__).resolve().parents[1] / "importers" / "fixtures"
TRACE = "loopguard: 1\nname: clicks\nsteps: [{tool: click}]\n"


def write(pytester: pytest.Pytester, name: str, text: str) -> None:
    (pytester.path / "traces" / name).write_text(text, encoding="utf-8")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    write(pytester, "clicks.yaml", TRACE)
    return pytester


@pytest.mark.parametrize("workers", ["0", "2"])
def test_an_otel_export_beside_the_traces_is_skipped_with_a_hint(project: pytest.Pytester, workers: str) -> None:
    shutil.copy(FIXTURES / "otel_export.json", project.path / "traces" / "export.json")
    result = project.runpytest("-n", workers)
    assert result.ret == 0  # it made pytest exit 2 (a collection error) before
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["loopguard: traces/export.json looks like an OpenTelemetry export: loopguard import it"])
    assert result.stdout.str().count("looks like an OpenTelemetry export") == 1


@pytest.mark.parametrize("workers", ["0", "2"])
def test_every_kind_of_non_trace_is_skipped_and_named(project: pytest.Pytester, workers: str) -> None:
    shutil.copy(FIXTURES / "openai_chat_records.jsonl", project.path / "traces" / "chat.jsonl")
    shutil.copy(FIXTURES / "anthropic_messages.json", project.path / "traces" / "claude.json")
    write(project, "settings.yml", "loopguard_paths: [traces]\nverbose: true\n")  # says loopguard, no key
    write(project, "broken.json", '{"resourceSpans": [')  # truncated, but never claimed to be a trace
    result = project.runpytest("-n", workers, "-p", "no:randomly")
    assert result.ret == 0
    result.assert_outcomes(passed=1, skipped=4)
    lines = [line for line in result.stdout.lines if line.startswith("loopguard: traces/")]
    assert sorted(lines) == [
        "loopguard: traces/broken.json is not a trace (no top-level 'loopguard' key): skipped",
        "loopguard: traces/chat.jsonl looks like an OpenAI Chat Completions log: loopguard import it",
        "loopguard: traces/claude.json looks like an Anthropic Messages log: loopguard import it",
        "loopguard: traces/settings.yml is not a trace (no top-level 'loopguard' key): skipped",
    ]


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_file_that_claims_to_be_a_trace_and_is_broken_is_still_a_collection_error(
    project: pytest.Pytester, workers: str
) -> None:
    write(project, "torn.json", '{"loopguard": 1, "name": "torn", "steps": [')
    result = project.runpytest("-n", workers)
    assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED)  # xdist reports it as a failure
    result.stdout.fnmatch_lines(
        ["*ERROR collecting traces/torn.json*", "traces/torn.json:1: JSON syntax error: Expecting value"])
    assert "skipped" not in result.stdout.str()


# ---- a trace with a misspelt version key (issue 26 finding 3) --------------------------------------------------
TYPO = "loopgaurd: 1\nname: typo\nsteps: [{tool: click}]\nexpect: {outcome: incomplete}\n"
TYPO_LINE = "field 'loopgaurd': no 'loopguard' version key, but this looks like a trace (name, steps, expect): " \
    "did you mean `loopguard`?"


@pytest.mark.parametrize("fmt", ["yaml", "json", "jsonl"])
def test_a_misspelt_version_key_fails_collection_in_one_line(project: pytest.Pytester, fmt: str) -> None:
    import json

    import yaml

    raw = yaml.safe_load(TYPO)
    text = {"yaml": TYPO, "json": json.dumps(raw),
            "jsonl": json.dumps({k: v for k, v in raw.items() if k != "steps"}) + "\n" + json.dumps(raw["steps"][0])
            + "\n"}[fmt]
    write(project, f"typo.{fmt}", text)
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error, not "1 skipped": the gate checked nothing
    result.stdout.fnmatch_lines([f"*traces/typo.{fmt}:1: {TYPO_LINE}*"])
    assert "Traceback" not in result.stdout.str()


def test_validate_and_run_refuse_a_misspelt_version_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_loopguard.cli import _main as cli

    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "typo.yaml").write_text(TYPO, encoding="utf-8")
    (folder / "version.yaml").write_text(TYPO.replace("loopgaurd", "version"), encoding="utf-8")
    for command in ("validate", "run"):
        assert cli.main([command, str(folder)]) == 2
        err = capsys.readouterr().err
        assert f"{folder / 'typo.yaml'}:1: {TYPO_LINE}" in err
        assert (f"{folder / 'version.yaml'}:1: field 'version': no 'loopguard' version key, but this looks like a "
                "trace (name, steps, expect): did you mean `loopguard`?") in err
    # a file that only mentions steps is still some other file, skipped
    (folder / "typo.yaml").unlink()
    (folder / "version.yaml").unlink()
    (folder / "workflow.yaml").write_text("name: ci\nsteps: [{run: make}]\n", encoding="utf-8")
    assert cli.main(["validate", str(folder)]) == 0
