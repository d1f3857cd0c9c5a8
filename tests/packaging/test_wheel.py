"""The built wheel: typed (py.typed), presets included, the simulators under the project's namespace only;
its requirements are the slim runtime, with pytest, hypothesis, faker and tabulate in the `pytest` extra."""

from __future__ import annotations

import ast
import email
import email.message
import re
import subprocess
import sys
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from hatchling.build import build_wheel
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from pytest_loopguard.errors import EXTRA_MODULES

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = {"pluggy", "pyyaml", "bashlex"}  # what `pip install pytest-loopguard` brings (README, "Embedding")
PYTEST_EXTRA = {"pytest", "hypothesis", "faker", "tabulate"}  # what `[pytest]` adds: plugin, strategies, CLI
# The packages an agent embeds (tests/core/test_slim_runtime.py runs them without the extra)
RUNTIME_PACKAGES = ("core", "engines", "runtime", "live", "io", "importers", "__init__.py", "errors.py", "buildinfo.py")
FIRST_PARTY = {"pytest_loopguard", "loopguard_simulators"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    # the build backend's own API, offline: the same wheel `pip wheel .` would build, without the network
    out = tmp_path_factory.mktemp("wheel")
    mp = pytest.MonkeyPatch()
    mp.chdir(ROOT)  # hatchling builds the project in the current directory
    mp.setenv("LOOPGUARD_COMPILE", "0")  # the pure wheel (tests/packaging/test_compiled_build.py has the other)
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
    # the step viewer's script and style, read from the package when a page is written
    assert {"pytest_loopguard/report/view.js", "pytest_loopguard/report/view.css"} <= names


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


def _metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    [name] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.message_from_bytes(wheel.read(name))


def _required(wheel: zipfile.ZipFile, extra: str | None) -> set[str]:
    """The distributions an install with `extra` (None: none) adds by the wheel's Requires-Dist lines."""
    found = set()
    for line in _metadata(wheel).get_all("Requires-Dist") or []:
        req = Requirement(line)
        env = {"extra": extra or ""}
        if (req.marker is None) if extra is None else (req.marker is not None and req.marker.evaluate(env)):
            found.add(canonicalize_name(req.name) + "".join(f"[{e}]" for e in sorted(req.extras)))
    return found


def test_a_plain_install_is_the_slim_runtime(wheel: zipfile.ZipFile) -> None:
    assert _required(wheel, None) == RUNTIME


def test_the_pytest_extra_adds_the_plugins_and_commands_packages(wheel: zipfile.ZipFile) -> None:
    assert _required(wheel, "pytest") == PYTEST_EXTRA
    assert {"pytest", "dev", "rich"} <= set(_metadata(wheel).get_all("Provides-Extra") or [])
    assert _required(wheel, "dev") >= PYTEST_EXTRA  # the README's `pip install -e '.[dev]'` runs the plugin


def test_the_extras_modules_are_the_pytest_extras_distributions() -> None:
    """errors.EXTRA_MODULES (what MissingExtraError is raised for) names exactly the extra's packages."""
    dists = packages_distributions()
    assert {canonicalize_name(d) for m in EXTRA_MODULES for d in dists[m]} == PYTEST_EXTRA


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.partition(".")[0])
    return roots - set(sys.stdlib_module_names) - FIRST_PARTY


def test_every_import_is_a_declared_requirement(wheel: zipfile.ZipFile) -> None:
    """Every third-party import (function-level ones too): in a runtime package, of a plain install's
    requirements; in a framework integration, also of the framework extras' (`integrations/`: imported only
    by name, by a user who installed that extra); in cli/_dask.py, also of the dask extra's; anywhere else, of
    the runtime's, the pytest extra's or rich's (optional, checked on use)."""
    dists = packages_distributions()
    anywhere = RUNTIME | PYTEST_EXTRA | {"rich"}
    # an integration imports its framework, which its own extra installs (`[pydantic-ai]`, ...)
    extras = set(_metadata(wheel).get_all("Provides-Extra") or []) - {"dev"}
    frameworks = anywhere.union(*(_required(wheel, e) for e in extras))
    wrong = []
    for path in sorted([*(ROOT / "pytest_loopguard").rglob("*.py"), *(ROOT / "simulators").rglob("*.py")]):
        runtime = path.relative_to(ROOT).parts[:2] in {("pytest_loopguard", p) for p in RUNTIME_PACKAGES}
        integration = path.relative_to(ROOT).parts[:2] == ("pytest_loopguard", "integrations")
        allowed = RUNTIME if runtime else frameworks if integration else anywhere
        if path.relative_to(ROOT).parts == ("pytest_loopguard", "cli", "_dask.py"):  # `--backend dask` alone
            allowed = anywhere | _required(wheel, "dask")
        if path.relative_to(ROOT).parts == ("pytest_loopguard", "_mypyc.py"):  # mypyc's options, no-ops without
            allowed = RUNTIME | {"mypy-extensions"}  # it (ImportError caught): mypyc reads them when it compiles
        for root in sorted(_imported_roots(path)):
            names = {canonicalize_name(d) for d in dists.get(root, [root])}
            if not names & allowed:
                wrong.append(f"{path.relative_to(ROOT)}: {root} ({', '.join(sorted(names))})")
    assert wrong == []


def test_every_extra_an_install_command_names_exists(wheel: zipfile.ZipFile) -> None:
    """`pip install '.[pytest]'` and the like in README.md, docs/ and .ci/run: each extra named is provided."""
    provided = set(_metadata(wheel).get_all("Provides-Extra") or [])
    pages = [ROOT / "README.md", ROOT / ".ci" / "run", *sorted((ROOT / "docs").glob("*.md"))]
    named = {
        (page.name, extra)
        for page in pages
        for command in re.findall(r"pip install [^`\n]*", page.read_text(encoding="utf-8"))
        for group in re.findall(r"(?:\.|pytest-loopguard)\[([a-z0-9,_-]+)\]", command)
        for extra in group.split(",")
    }
    assert {extra for _, extra in named} >= {"pytest", "dev"}  # the README's two installs are found
    assert sorted(n for n in named if n[1] not in provided) == []
