"""runner.execute: a recorded trace is replayed, a scenario simulated; only the runner layer imports the simulators."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from pytest_loopguard.io._format import load, loads
from pytest_loopguard.io._runner import execute
from pytest_loopguard.runtime._replay import replay

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_loopguard"
# The layers above both the core and the simulators: only these may import the simulators.
ABOVE_BOTH = {"_runner.py", "_sim_fixtures.py"}


def test_a_recorded_trace_is_replayed() -> None:
    [t] = loads("loopguard: 1\nname: t\npolicy: default\nsteps:\n"
                + "".join("  - tool: read_file\n    args: {path: a.py}\n" for _ in range(4)))
    assert execute(t).to_dict() == replay(t).to_dict()


def test_a_scenario_is_simulated_and_its_result_is_the_recorded_run() -> None:
    result = execute(load(ROOT / "traces" / "scenarios" / "overflow-claw-code.yaml"))
    assert result.trace.mode == "replay" and result.trace.name == "scenario-overflow-claw-code"
    assert result.trace.source["kind"] == "simulated"
    assert result.outcome == "completed"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_module_below_the_runner_imports_the_simulators() -> None:
    offenders = [
        str(path.relative_to(ROOT)) for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in ABOVE_BOTH
        and any(n.split(".")[0] in ("loopguard_simulators", "simulators") for n in _imports(path))
    ]
    assert offenders == []


def test_importing_the_core_and_replaying_loads_no_simulator() -> None:
    code = (
        "import sys, pathlib, pytest_loopguard as lg\n"
        "import pytest_loopguard.io._format, pytest_loopguard.runtime._policy, pytest_loopguard.core._expect\n"
        "import pytest_loopguard.report._tables\n"
        "lg.replay(lg.load(pathlib.Path('traces/read_tracker/hermes_seed_001_reread_loop.yaml')))\n"
        "print(sorted(m for m in sys.modules if 'simulators' in m))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
