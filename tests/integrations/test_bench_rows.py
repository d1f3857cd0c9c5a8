"""`loopguard bench --integrations`: every framework's row is measured (its extra is installed in dev), on its own
scripted run, guarded over unguarded, and a framework that is not installed is a row that says how to install it."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

from pytest_loopguard.bench import _integrations
from pytest_loopguard.bench._integrations import FRAMEWORKS, integration_rows
from pytest_loopguard.cli import _main as cli

REAL_CLI = [f for f in FRAMEWORKS if f[2].endswith("_claude_code_bench")]  # starts Claude Code: slow


def check(rows: list[Any], frameworks: list[tuple[str, str, str]], calls: int) -> None:
    assert [r.item for r in rows] == [f"{name}, {calls}-call scripted run, guarded" for name, _, _ in frameworks]
    for row in rows:
        assert "skipped" not in row.extra, row.extra
        assert row.min_us > 0 and row.extra["unguarded_us"] > 0
        assert row.ratio == pytest.approx(row.min_us / row.extra["unguarded_us"], rel=1e-3)
        assert row.median_us >= row.min_us and row.extra["ratio_paired_median"] > 0
        if row.item.startswith(tuple(_integrations.INFORMATIONAL)):
            assert row.met is None and row.goal.startswith("—")
        else:
            assert row.met == (row.ratio <= 1.10)


def test_every_framework_gets_a_measured_row(monkeypatch: pytest.MonkeyPatch) -> None:
    quick = [f for f in FRAMEWORKS if f not in REAL_CLI]
    assert len(quick) == len(FRAMEWORKS) - 1
    monkeypatch.setattr(_integrations, "FRAMEWORKS", quick)
    check(integration_rows(calls=4, repeat=3), quick, 4)


@pytest.mark.slow
def test_the_claude_code_row_runs_the_real_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_integrations, "FRAMEWORKS", REAL_CLI)
    (row,) = integration_rows(calls=3, repeat=1)
    check([row], REAL_CLI, 3)
    # beside it, the same run with hooks that do nothing: what Claude Code's hooks cost by themselves
    assert row.extra["noop_hooks_us"] > 0
    assert row.extra["ratio_over_noop_hooks"] == pytest.approx(row.min_us / row.extra["noop_hooks_us"], rel=1e-2)


def test_a_framework_that_is_not_installed_is_a_row_naming_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def missing(name: str, package: str | None = None) -> Any:
        if name.endswith("_google_adk_bench"):
            raise ModuleNotFoundError("No module named 'google'", name="google")
        return real(name, package)

    monkeypatch.setattr(_integrations.importlib, "import_module", missing)
    monkeypatch.setattr(_integrations, "FRAMEWORKS", [f for f in FRAMEWORKS if f[1] == "google-adk"])
    (row,) = integration_rows(calls=2, repeat=1)
    assert row.met is None
    assert row.extra["skipped"] == "google is not installed: pip install 'pytest-loopguard[google-adk]'"


def test_the_command_prints_the_rows_as_json(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_integrations, "FRAMEWORKS", FRAMEWORKS[:1])
    monkeypatch.setattr(_integrations, "integration_rows",
                        lambda calls=200, repeat=5, _real=integration_rows: _real(calls=3, repeat=repeat))
    assert cli.main(["bench", "--integrations", "--repeat", "1", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert row["item"] == "LangChain, 3-call scripted run, guarded" and row["ratio"] > 0


def test_the_table_names_the_runs_timed_beside_a_row(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_integrations, "FRAMEWORKS", FRAMEWORKS[:1])
    monkeypatch.setattr(_integrations, "integration_rows",
                        lambda calls=200, repeat=5, _real=integration_rows: _real(calls=3, repeat=repeat))
    assert cli.main(["bench", "--integrations", "--repeat", "1"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "the same run under" in x]
    assert line.startswith("LangChain, the same run under noop middleware ")
    assert "tool call limit middleware " in line and "model call limit middleware " in line
    assert line.endswith("(each over unguarded)")
