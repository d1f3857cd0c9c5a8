"""Start-up: collecting and running a trace-only corpus imports neither faker, hypothesis, the simulators,
bashlex nor the importers (they load when a fixture, a scenario, a shell line or a file that is no trace
needs them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

HEAVY = ("faker", "hypothesis", "simulators", "loopguard_simulators", "pytest_loopguard.simulators", "bashlex",
         "pytest_loopguard.importers")  # the importers name the format of a file that is no trace
TRACE = Path(__file__).parents[2] / "traces" / "context" / "hermes_injection_after_compaction.yaml"

# faker and hypothesis ship pytest plugins of their own that pytest loads by entry point; they are
# switched off here so what is left is what loading our plugin costs
REPORT = """
import sys

HEAVY = {heavy!r}


def pytest_collection_finish(session):
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY))
    print("HEAVY-MODULES", loaded)
"""


def test_a_trace_only_corpus_loads_no_heavy_module(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nloopguard_paths = traces\n")
    pytester.makeconftest(REPORT.format(heavy=HEAVY))
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "t.yaml").write_text(TRACE.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:faker", "-p", "no:hypothesispytest", "-p", "no:xdist", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["HEAVY-MODULES []"])


def test_the_check_sees_a_heavy_module_when_one_is_loaded(pytester: pytest.Pytester) -> None:
    """The same check with faker's plugin left on: the report names faker (so the check can fail)."""
    pytester.makeini("[pytest]\nloopguard_paths = traces\n")
    pytester.makeconftest(REPORT.format(heavy=HEAVY))
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "t.yaml").write_text(TRACE.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:hypothesispytest", "-p", "no:xdist", "-s")
    result.stdout.fnmatch_lines(["HEAVY-MODULES *'faker'*"])


# The replay core: what only running a trace needs. The xdist controller runs none, so it loads none of it.
CORE = ("pytest_loopguard.runtime._replay", "pytest_loopguard.runtime._guard", "pytest_loopguard.io._format",
        "pytest_loopguard.core._model", "pytest_loopguard.runtime._policy", "pytest_loopguard.engines.loop_guard",
        "pytest_loopguard.io._golden", "pytest_loopguard.io._headers")
ROLES = """
import sys


def pytest_sessionfinish(session):
    role = "worker" if hasattr(session.config, "workerinput") else "controller"
    loaded = sorted(m for m in {core!r} if m in sys.modules)
    print(f"{{role.upper()}}-CORE", loaded)
"""


def test_the_xdist_controller_imports_no_replay_core(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nloopguard_paths = traces\n")
    pytester.makeconftest(ROLES.format(core=CORE))
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "t.yaml").write_text(TRACE.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:faker", "-p", "no:hypothesispytest", "-n", "1", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.re_match_lines([r".*CONTROLLER-CORE \[\]$"])  # after the worker's progress dot


def test_a_process_that_runs_a_trace_has_the_core_loaded(pytester: pytest.Pytester) -> None:
    """The same check in a process that ran the trace (no xdist): it names the core, so the check can fail."""
    pytester.makeini("[pytest]\nloopguard_paths = traces\n")
    pytester.makeconftest(ROLES.format(core=CORE))
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "t.yaml").write_text(TRACE.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:faker", "-p", "no:hypothesispytest", "-p", "no:xdist", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.re_match_lines([f".*CONTROLLER-CORE {re.escape(repr(sorted(CORE)))}$"])
