"""Engines from installed packages (`loopguard.engines` entry points), in a user repo built by pytester.

The engine is docs/custom-engines.md's own first example, installed as a package with a dist-info folder
on PYTHONPATH (what `pip install` leaves), without its `ENGINES.register` line: only the entry point can make
the policy's `search_budget` known. Runs in subprocesses, so this process's registry stays as it was.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "custom-engines.md"

TRACE = """\
loopguard: 1
name: searches-per-prompt
policy: {preset: default, search_budget: {warn_at: 2, max_calls: 3}}
steps:
  - {tool: web_search, args: {q: flights}}
  - {tool: web_search, args: {q: hotels}, expect: warn}
  - {tool: web_search, args: {q: trains}, expect: warn}
  - tool: web_search
    args: {q: buses}
    expect: {action: block, reason: search_budget.exhausted, data: {count: 4}}
"""


def engine_source() -> str:
    first = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert first is not None
    source = first.group(1)
    assert "ENGINES.register(SearchBudget)\n" in source
    return source.replace("ENGINES.register(SearchBudget)\n", "")


def install(site: Path, entry_points: str) -> None:
    """A package `team_engines` and the dist-info that declares its entry points."""
    package = site / "team_engines"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "search_budget.py").write_text(engine_source(), encoding="utf-8")
    info = site / "team_engines-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: team-engines\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[loopguard.engines]\n{entry_points}\n", encoding="utf-8")


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "searches.yaml").write_text(TRACE, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(pytester.path / "site"))
    return pytester


def test_installed_engine_is_named_like_a_builtin(repo: pytest.Pytester) -> None:
    install(repo.path / "site", "search_budget = team_engines.search_budget:SearchBudget")
    result = repo.runpytest_subprocess("-p", "no:cacheprovider", "--loopguard-coverage")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    # Rule coverage knows the plugin's declared codes: both triggered by the one trace.
    assert re.search(r"search_budget +search_budget\.warning +1 +2", out), out
    assert re.search(r"search_budget +search_budget\.exhausted +1 +1", out), out


def test_installed_engine_in_the_command(repo: pytest.Pytester) -> None:
    install(repo.path / "site", "search_budget = team_engines.search_budget:SearchBudget")
    done = subprocess.run([sys.executable, "-m", "pytest_loopguard.cli._main", "run", "traces"], cwd=repo.path,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 traces replayed, 0 mismatched" in done.stdout


def test_without_the_entry_point_the_engine_is_unknown(repo: pytest.Pytester) -> None:
    install(repo.path / "site", "")
    result = repo.runpytest_subprocess("-p", "no:cacheprovider")
    assert "unknown engine 'search_budget'" in result.stdout.str()
    assert result.ret != 0


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("search_budget = team_engines.missing:SearchBudget",
         "cannot load: ModuleNotFoundError: No module named 'team_engines.missing'"),
        ("search_budget = team_engines.search_budget:SearchBudgetSettings",
         "expected an Engine subclass or a module with ENGINE"),
        ("searches = team_engines.search_budget:SearchBudget",
         "the class is named 'search_budget'; name the entry point after it"),
        ("loop_guard = team_engines.search_budget:SearchBudget",
         "'loop_guard' is a built-in engine; pick another name"),
    ],
)
def test_a_broken_plugin_is_one_line(repo: pytest.Pytester, entry: str, message: str) -> None:
    install(repo.path / "site", entry)
    result = repo.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert message in err and "Traceback" not in err, err
    assert f"engine plugin '{entry.split(' = ')[0]}'" in err
