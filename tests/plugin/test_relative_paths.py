"""Every relative path a test writes (a marker's policy, `loopguard.replay`'s trace and `policy=`) resolves
from pytest's rootdir or the test file that names it, never the working folder: a run from a subfolder gives
the same verdicts (issue 26 finding 2)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TRACE = "loopguard: 1\nname: clicks\nsteps:\n" + "  - {tool: browser_click, args: {index: 1}}\n" * 3

TESTS = '''
import pytest


@pytest.mark.loopguard(policy="policies/eager.yaml")
def test_the_markers_policy_file(loopguard):
    result = loopguard.replay("traces/clicks.yaml")
    assert [s.action.value for s in result.steps] == ["allow", "warn", "warn"]


def test_replays_policy_argument(loopguard):
    result = loopguard.replay("traces/clicks.yaml", policy="policies/eager.yaml")
    assert [s.action.value for s in result.steps] == ["allow", "warn", "warn"]


def test_a_path_beside_this_file(loopguard):
    result = loopguard.replay("beside.yaml", policy="mine.yaml")
    assert [s.action.value for s in result.steps] == ["warn", "warn", "warn"]
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nloopguard_paths =\n")
    root = pytester.path
    (root / "policies").mkdir()
    (root / "policies" / "eager.yaml").write_text("preset: default\nloop_guard: {warn_at: 2}\n", encoding="utf-8")
    (root / "traces").mkdir()
    (root / "traces" / "clicks.yaml").write_text(TRACE, encoding="utf-8")
    tests = root / "tests"
    tests.mkdir()
    (tests / "test_paths.py").write_text(TESTS, encoding="utf-8")
    (tests / "beside.yaml").write_text(TRACE.replace("clicks", "beside"), encoding="utf-8")
    (tests / "mine.yaml").write_text("preset: default\nloop_guard: {warn_at: 1}\n", encoding="utf-8")
    # the working folder holds same-named files that must never be read
    decoy = root / "elsewhere"
    (decoy / "policies").mkdir(parents=True)
    (decoy / "policies" / "eager.yaml").write_text("preset: default\nloop_guard: {warn_at: 9}\n", encoding="utf-8")
    (decoy / "traces").mkdir()
    (decoy / "traces" / "clicks.yaml").write_text(TRACE.replace("index: 1", "index: 2"), encoding="utf-8")
    return pytester


@pytest.mark.parametrize("folder", [".", "tests", "elsewhere"])
def test_relative_paths_resolve_from_the_rootdir_or_the_test_file_from_any_working_folder(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    monkeypatch.chdir(project.path / folder)
    result = project.runpytest(str(project.path / "tests"))
    result.assert_outcomes(passed=3)
