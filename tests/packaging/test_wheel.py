"""The built wheel: typed (py.typed), presets included, the simulators under the project's namespace only."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hatchling.build import build_wheel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    # the build backend's own API, offline: the same wheel `pip wheel .` would build, without the network
    out = tmp_path_factory.mktemp("wheel")
    mp = pytest.MonkeyPatch()
    mp.chdir(ROOT)  # hatchling builds the project in the current directory
    try:
        name = build_wheel(str(out))
    finally:
        mp.undo()
    return zipfile.ZipFile(out / name)


def _tops(wheel: zipfile.ZipFile) -> set[str]:
    return {n.split("/")[0] for n in wheel.namelist() if not n.split("/")[0].endswith(".dist-info")}


def test_only_the_projects_own_top_level_packages(wheel: zipfile.ZipFile) -> None:
    assert _tops(wheel) == {"pytest_loopguard", "loopguard_simulators"}


def test_both_packages_are_typed(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert {"pytest_loopguard/py.typed", "loopguard_simulators/py.typed"} <= names


def test_presets_and_every_module_are_shipped(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    presets = {f"pytest_loopguard/presets/{p.name}" for p in (ROOT / "pytest_loopguard" / "presets").glob("*.yaml")}
    simulators = {f"loopguard_simulators/{p.name}" for p in (ROOT / "simulators" / "loopguard_simulators").glob("*.py")}
    assert len(presets) >= 10 and presets <= names
    assert "loopguard_simulators/scenario.py" in simulators and simulators <= names


def test_the_plugin_and_the_command_are_registered(wheel: zipfile.ZipFile) -> None:
    [entry_points] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "[pytest11]\nloopguard = pytest_loopguard.pytest.plugin" in text
    assert "loopguard = pytest_loopguard.cli._main:main" in text


def test_mypy_strict_on_user_code_sees_the_packages_types(tmp_path: Path) -> None:
    # without py.typed mypy skips the installed package ("missing library stubs or py.typed marker")
    user = tmp_path / "check_me.py"
    user.write_text(
        "from pytest_loopguard import ReplayResult, replay\n"
        "from loopguard_simulators import FakeFiles\n"
        "def run(trace: object) -> ReplayResult:\n"
        "    return replay(trace)\n"  # a type error only a typed package can report
        "files: FakeFiles = FakeFiles({})\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
         str(user)],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert "py.typed" not in out.stdout, out.stdout
    assert 'Argument 1 to "replay" has incompatible type "object"' in out.stdout, out.stdout
