"""The simulators package: its public names, and that it (with the core it uses) never imports pytest."""

from __future__ import annotations

import subprocess
import sys

import loopguard_simulators as simulators


def test_public_names() -> None:
    assert simulators.__all__ == sorted(simulators.__all__)
    assert simulators.__all__ == [
        "AgentLoop", "Element", "FakeBrowser", "FakeFiles", "FakeLLM", "ForgetfulReader", "Model", "ModelReply",
        "Page", "PingPong", "Poller", "ProviderError", "Retrier", "Simulation", "TodoStore", "ToolExecutor",
        "Toolbox", "simulate",
    ]
    assert all(hasattr(simulators, name) for name in simulators.__all__)


def test_simulating_a_scenario_does_not_import_pytest() -> None:
    code = (
        "import sys, pathlib, loopguard_simulators as simulators, pytest_loopguard as lg\n"
        "sim = simulators.simulate(lg.load(pathlib.Path('traces/scenarios/poll-spacebot-dedup.yaml')))\n"
        "assert sim.result.outcome == 'completed'\n"
        "print('pytest' in sys.modules, '_pytest' in sys.modules)\n"
    )
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
