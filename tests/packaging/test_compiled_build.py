"""The optional compiled build: off by default (a pure wheel, no compiler); once built, verdict for verdict equal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest
from hatchling.build import build_wheel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the build hook is a file at the repo root, not part of the package
import hatch_build  # noqa: E402

# Replays every trace in traces/ under every preset (and its own policy) and prints the timelines as JSON:
# run once against each build, the two outputs must be identical.
REPLAY_ALL = r"""
import json, sys
from pathlib import Path
import pytest_loopguard
from pytest_loopguard import LoopguardError, compiled, load_file, replay, resolve_policy
from pytest_loopguard.buildinfo import compiled_modules
from pytest_loopguard.runtime._policy import preset_names

assert Path(pytest_loopguard.__file__).is_relative_to(sys.argv[2]), pytest_loopguard.__file__
out = {"compiled": compiled(), "modules": list(compiled_modules()), "runs": {}}
for path in sorted(Path(sys.argv[1]).rglob("*")):
    if path.suffix not in (".yaml", ".json", ".jsonl") or "scenarios" in path.parts:
        continue
    try:
        traces = load_file(path)
    except LoopguardError as exc:
        out["runs"][str(path)] = str(exc)
        continue
    for i, trace in enumerate(traces):
        for name in [None, *preset_names()]:
            key = f"{path.relative_to(sys.argv[1])}#{i} {name or 'own'}"
            try:
                out["runs"][key] = replay(trace, resolve_policy(name) if name else None).to_dict()
            except LoopguardError as exc:
                out["runs"][key] = str(exc)
print(json.dumps(out, sort_keys=True, default=str))
"""


@pytest.fixture
def no_compile(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(hatch_build.ENV, raising=False)
    yield


@pytest.mark.parametrize(("value", "wanted"), [
    ("", False), ("0", False), ("false", False), ("No", False), ("1", True), ("yes", True), (" true ", True),
])
def test_only_an_explicit_variable_asks_for_a_compiled_build(
    monkeypatch: pytest.MonkeyPatch, value: str, wanted: bool
) -> None:
    monkeypatch.setenv(hatch_build.ENV, value)
    assert hatch_build.wanted() is wanted


def test_every_listed_module_is_a_package_source_that_mypyc_can_take() -> None:
    paths = hatch_build.modules()
    assert paths and all((ROOT / p).is_file() and p.startswith("pytest_loopguard/") for p in paths)
    # pluggy marks hook functions by setting an attribute on them, which a compiled function refuses
    # (AttributeError at import): modules that define @hookimpl/@hookspec functions stay pure Python
    for p in paths:
        text = (ROOT / p).read_text(encoding="utf-8")
        assert "@hookimpl" not in text and "@hookspec" not in text, p


def _wheel(out: Path) -> zipfile.ZipFile:
    cwd = os.getcwd()
    os.chdir(ROOT)  # hatchling builds the project in the current directory
    try:
        name = build_wheel(str(out))
    finally:
        os.chdir(cwd)
    return zipfile.ZipFile(out / name)


def test_the_default_wheel_is_pure_python(no_compile: None, tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    assert wheel.filename is not None and wheel.filename.endswith("-py3-none-any.whl")
    assert not [n for n in wheel.namelist() if n.endswith((".so", ".pyd", ".c"))]
    assert "Root-Is-Purelib: true" in wheel.read(next(n for n in wheel.namelist() if n.endswith("/WHEEL"))).decode()


def _replay_all(site: Path, tmp_path: Path) -> dict[str, object]:
    script = tmp_path / "replay_all.py"
    script.write_text(REPLAY_ALL, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, str(script), str(ROOT / "traces"), str(site)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    doc: dict[str, object] = json.loads(out.stdout)
    return doc


@pytest.mark.slow
def test_the_compiled_wheel_replays_every_trace_exactly_as_the_pure_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(hatch_build.ENV, raising=False)
    pure = _wheel(tmp_path / "pure")
    monkeypatch.setenv(hatch_build.ENV, "1")
    built = _wheel(tmp_path / "compiled")
    assert built.filename is not None and "-cp3" in built.filename and built.filename.endswith(".whl")
    names = set(built.namelist())
    for path in hatch_build.modules():
        module = path.removesuffix(".py")
        assert path in names  # the source stays beside its extension module
        assert any(module + s in names for s in EXTENSION_SUFFIXES), module
    assert [n for n in names if "__mypyc" in n and "/" not in n]  # mypyc's shared runtime library, top level

    sites = {}
    for label, wheel in (("pure", pure), ("compiled", built)):
        sites[label] = tmp_path / f"site-{label}"
        wheel.extractall(sites[label])
    pure_doc, compiled_doc = _replay_all(sites["pure"], tmp_path), _replay_all(sites["compiled"], tmp_path)
    expected = sorted(f"pytest_loopguard.{p.removeprefix('pytest_loopguard/').removesuffix('.py').replace('/', '.')}"
                      for p in hatch_build.modules())
    assert (pure_doc["compiled"], pure_doc["modules"]) == (False, [])
    assert (compiled_doc["compiled"], compiled_doc["modules"]) == (True, expected)
    runs = pure_doc["runs"]
    assert isinstance(runs, dict) and len(runs) > 1000
    assert compiled_doc["runs"] == runs
