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
import copy, json, pickle, sys
from pathlib import Path
import pytest_loopguard
from pytest_loopguard import LoopguardError, ToolCall, compiled, load_file, replay, resolve_policy
from pytest_loopguard.buildinfo import compiled_modules
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.runtime._policy import preset_names


class Listener:  # a plugin: the Guard then calls every engine through pluggy (a compiled one by its forwarder)
    @hookimpl
    def loopguard_turn_end(self, turn):
        return None


assert Path(pytest_loopguard.__file__).is_relative_to(sys.argv[2]), pytest_loopguard.__file__
out = {"compiled": compiled(), "modules": list(compiled_modules()), "runs": {}}
# a call pickles and copies alike in both builds (`run -j` and the Dask backend send traces to other processes)
call = ToolCall.of("read_file", {"path": "a.py", "offset": 1})
again = pickle.loads(pickle.dumps(call))
out["pickled"] = [again == call, again.fingerprint, copy.deepcopy(call).ordered, repr(copy.copy(call))]
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
            for plugins in ((), (Listener(),)):
                try:
                    run = replay(trace, resolve_policy(name) if name else None, plugins=plugins).to_dict()
                except LoopguardError as exc:
                    run = str(exc)
                out["runs"][key + (" plugged" if plugins else "")] = run
print(json.dumps(out, sort_keys=True, default=str))
"""


@pytest.fixture
def pure(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(hatch_build.ENV, "0")
    yield


@pytest.mark.parametrize(("value", "mode"), [
    ("", "auto"), ("auto", "auto"), ("0", "pure"), ("false", "pure"), ("No", "pure"), ("pure", "pure"),
    ("1", "compiled"), ("yes", "compiled"), (" true ", "compiled"),
])
def test_the_variable_asks_for_pure_compiled_or_what_the_machine_can(
    monkeypatch: pytest.MonkeyPatch, value: str, mode: str
) -> None:
    monkeypatch.setenv(hatch_build.ENV, value)
    assert hatch_build.mode() == mode


def test_without_a_compiler_auto_builds_pure_python_and_compiled_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert hatch_build.missing_toolchain() == f"no C compiler ({tmp_path / 'no-such-cc'} not found)"
    monkeypatch.delenv(hatch_build.ENV, raising=False)
    assert hatch_build.wanted() is False
    wheel = _wheel(tmp_path / "auto")  # the sdist's install on a machine without a compiler
    assert wheel.filename is not None and wheel.filename.endswith("-py3-none-any.whl")
    monkeypatch.setenv(hatch_build.ENV, "1")
    assert hatch_build.wanted() is True
    with pytest.raises(RuntimeError, match=r"LOOPGUARD_COMPILE=1 asks for the compiled build, but: no C compiler"):
        _wheel(tmp_path / "compiled")


@pytest.mark.slow
def test_a_compiler_that_fails_gives_a_pure_wheel_under_auto_and_an_error_under_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = tmp_path / "cc"  # found, and fails every compile
    failing.write_text("#!/bin/sh\necho 'cc: no' >&2\nexit 1\n", encoding="utf-8")
    failing.chmod(0o755)
    monkeypatch.setenv("CC", str(failing))
    assert hatch_build.missing_toolchain() is None
    monkeypatch.delenv(hatch_build.ENV, raising=False)
    wheel = _wheel(tmp_path / "auto")  # mypyc type-checks and writes C, then the compiler fails
    assert wheel.filename is not None and wheel.filename.endswith("-py3-none-any.whl")
    assert "compiling failed" in capsys.readouterr().err
    monkeypatch.setenv(hatch_build.ENV, "1")
    with pytest.raises(Exception, match=r"exit (status|code) 1|failed with exit"):
        _wheel(tmp_path / "compiled")


def test_with_a_compiler_auto_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hatch_build.ENV, raising=False)
    monkeypatch.delenv("CC", raising=False)
    # this machine has gcc and Python's headers (.ci/run installs them where missing)
    assert hatch_build.missing_toolchain() is None
    assert hatch_build.wanted() is True


def test_every_listed_module_is_a_package_source_that_mypyc_can_take() -> None:
    paths = hatch_build.modules()
    assert paths and all((ROOT / p).is_file() and p.startswith("pytest_loopguard/") for p in paths)
    # pluggy marks a hook specification by setting an attribute on its function, which a compiled function
    # refuses (AttributeError at import): hookspecs stays pure Python. `@hookimpl` marks a compiled method too.
    for p in paths:
        text = (ROOT / p).read_text(encoding="utf-8")
        assert "@hookspec" not in text, p
    # the policy layer checks settings against their annotations, which a compiled dataclass loses
    assert not [p for p in paths if p.startswith("pytest_loopguard/engines/settings/")]


def _wheel(out: Path) -> zipfile.ZipFile:
    cwd = os.getcwd()
    os.chdir(ROOT)  # hatchling builds the project in the current directory
    try:
        name = build_wheel(str(out))
    finally:
        os.chdir(cwd)
    return zipfile.ZipFile(out / name)


def test_pure_asks_for_a_pure_python_wheel(pure: None, tmp_path: Path) -> None:
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
    monkeypatch.setenv(hatch_build.ENV, "0")
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
    assert compiled_doc["pickled"] == pure_doc["pickled"] == [True, 'read_file\x1f{"offset":1,"path":"a.py"}',
                                                               '{"path":"a.py","offset":1}',
                                                               'ToolCall(read_file{"path":"a.py","offset":1})']
    # through pluggy (a plugin joined) the compiled engines decide as they do called directly
    plugged = [key for key in runs if key.endswith(" plugged")]
    assert plugged and all(runs[key] == runs[key.removesuffix(" plugged")] for key in plugged)
