"""The package's public names are exactly what `__init__` exports (an accidental export fails here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pytest_loopguard

INTENDED = [
    "Clock",
    "Decision",
    "Guard",
    "LoopguardError",
    "LoopguardWarning",
    "Policy",
    "PolicyError",
    "Recorder",
    "RedactionError",
    "Redactor",
    "ReplayResult",
    "ScenarioError",
    "Session",
    "SessionError",
    "StepResult",
    "ToolCall",
    "ToolReply",
    "ToolResult",
    "Trace",
    "TraceError",
    "Verdict",
    "compiled",
    "dump",
    "dumps",
    "load",
    "load_file",
    "replay",
    "resolve_policy",
]


def test_all_is_the_intended_sorted_list() -> None:
    assert pytest_loopguard.__all__ == INTENDED
    assert sorted(INTENDED) == INTENDED


def test_every_exported_name_exists() -> None:
    for name in pytest_loopguard.__all__:
        assert getattr(pytest_loopguard, name) is not None, name


def test_the_main_names_import() -> None:
    from pytest_loopguard import Policy, Trace, Verdict, load, replay
    from pytest_loopguard.core._model import Trace as ModelTrace
    from pytest_loopguard.io._format import load as load_function
    from pytest_loopguard.runtime._policy import Policy as PolicyClass
    from pytest_loopguard.runtime._replay import replay as replay_function

    assert (Trace, Policy, replay, load) == (ModelTrace, PolicyClass, replay_function, load_function)
    assert Verdict("e", "allow", "e.ok").action == "allow"


def test_strategies_are_importable_without_pytest_in_their_imports() -> None:
    import ast
    import inspect

    from pytest_loopguard.pytest import _strategies as strategies

    tree = ast.parse(inspect.getsource(strategies))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "pytest" not in imported and "hypothesis" in imported
    assert sorted(strategies.__all__) == strategies.__all__


def test_errors_are_also_the_builtins_they_resemble() -> None:
    assert issubclass(pytest_loopguard.TraceError, ValueError)
    assert issubclass(pytest_loopguard.PolicyError, ValueError)
    for name in ("TraceError", "PolicyError", "ScenarioError"):
        assert issubclass(getattr(pytest_loopguard, name), pytest_loopguard.LoopguardError)


def test_every_public_name_resolves_to_the_object_its_module_defines() -> None:
    import importlib

    for name in INTENDED:
        home = pytest_loopguard._HOME[name]
        assert getattr(pytest_loopguard, name) is getattr(importlib.import_module(f"pytest_loopguard.{home}"), name)
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        pytest_loopguard.nothing_here  # noqa: B018


LAZY = """
import sys
import pytest_loopguard
core = sorted(m for m in sys.modules if m.startswith("pytest_loopguard."))
print("AFTER-IMPORT", core)
import pytest_loopguard.runtime._replay
from pytest_loopguard import replay
print("REPLAY", type(replay).__name__, type(pytest_loopguard.replay).__name__)
"""


def test_importing_the_package_imports_no_core_and_replay_stays_the_function() -> None:
    """pytest imports the package in every process (xdist's controller too): the core loads on first use. The
    package's `replay` is the function, whatever has been imported."""
    done = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["AFTER-IMPORT []", "REPLAY function function"]
