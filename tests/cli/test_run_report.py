"""`loopguard run --coverage/--report` and `loopguard replay --html` on the bundled traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from viewpage import marks

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.engines import registry
from pytest_loopguard.io._format import load_file
from pytest_loopguard.io._runner import execute

ROOT = Path(__file__).resolve().parents[2]
READS = ROOT / "traces" / "read_tracker"


def read_traces() -> int:
    return sum(len(load_file(p)) for p in READS.glob("*.yaml"))


def test_run_coverage_lists_every_code_of_the_active_engines(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", str(READS), "--coverage"]) == 0
    out = capsys.readouterr().out
    for code in registry()["read_tracker"].REASONS:
        line = next(line for line in out.splitlines() if line.startswith("read_tracker") and f" {code} " in line)
        assert int(line.split()[2]) >= 1  # the read_tracker corpus exercises each of its codes
    assert "rule coverage: " in out and f"reason codes exercised by {read_traces()} traces" in out


def test_run_coverage_with_json_keeps_stdout_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", str(READS / "hermes_shared_streak.yaml"), "--coverage", "--json"]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)) == 1
    assert "rule coverage:" in captured.err


def test_run_report_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r" / "report.json"
    assert cli.main(["run", str(READS), "--report", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["loopguard_report"] == 2 and doc["meta"]["command"] == "loopguard run"
    n = read_traces()
    assert doc["summary"] == {"traces": n, "passed": n, "mismatched": 0}


def test_run_report_bad_extension_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", str(READS), "--report", str(tmp_path / "r.pdf")]) == 2
    assert "unknown extension '.pdf'" in capsys.readouterr().err


def test_replay_html_draws_the_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "traces" / "failure_tracker" / "qa_agent_repetition_stop.yaml"
    page = tmp_path / "one.html"
    assert cli.main(["replay", str(path), "--html", str(page)]) == 0
    (trace,) = load_file(path)
    result = execute(trace)
    drawn = marks(page.read_text(encoding="utf-8"))
    assert drawn[(trace.name, result.policy)] == [(s.index, s.action) for s in result.steps]
    assert "stop" in {a for _, a in drawn[(trace.name, result.policy)]}
    assert "step" in capsys.readouterr().out  # the terminal timeline is still printed


def test_replay_html_needs_an_html_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "traces" / "failure_tracker" / "qa_agent_repetition_stop.yaml"
    assert cli.main(["replay", str(path), "--html", str(tmp_path / "x.md")]) == 2
    assert "expected a .html file" in capsys.readouterr().err
