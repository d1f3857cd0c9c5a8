"""buildinfo: which modules import compiled, which compiled ones are older than their source, and the one-line name."""

from __future__ import annotations

import importlib
import os
import sys
import tomllib
from collections.abc import Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from pytest_loopguard import buildinfo, compiled

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = EXTENSION_SUFFIXES[0]  # this interpreter's own tag, e.g. `.cpython-311-x86_64-linux-gnu.so`


@pytest.fixture
def fakepkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package with sources, one file that looks compiled beside its source and one in a subpackage.

    Nothing is imported: `compiled_modules` asks where `import` would load each module from.
    """
    pkg = tmp_path / "fakepkg_lg"
    (pkg / "sub").mkdir(parents=True)
    for name in ("__init__.py", "core.py", "plain.py", "sub/__init__.py", "sub/inner.py"):
        (pkg / name).write_text("", encoding="utf-8")
    (pkg / f"core{SUFFIX}").write_bytes(b"")
    (pkg / "sub" / f"inner{SUFFIX}").write_bytes(b"")
    (pkg / "notes.txt").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for name in [n for n in sys.modules if n.partition(".")[0] == "fakepkg_lg"]:
        del sys.modules[name]  # find_spec imported the package: the next test's is another folder


def test_a_compiled_file_beside_its_source_is_the_module_that_imports(fakepkg: Path) -> None:
    assert buildinfo.compiled_modules(fakepkg) == ("fakepkg_lg.core", "fakepkg_lg.sub.inner")


def test_a_source_changed_after_the_build_is_stale(fakepkg: Path) -> None:
    built = (fakepkg / f"core{SUFFIX}").stat().st_mtime
    os.utime(fakepkg / "core.py", (built - 10, built - 10))
    os.utime(fakepkg / "sub" / "inner.py", (built + 10, built + 10))  # edited after the build
    assert buildinfo.stale_modules(fakepkg) == ("fakepkg_lg.sub.inner",)


def test_this_installation_reports_what_its_modules_were_loaded_from() -> None:
    # import every module the compiled build may compile, then ask each where it came from
    with open(ROOT / "pyproject.toml", "rb") as f:
        listed = tomllib.load(f)["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]["compile"]
    modules = [importlib.import_module(p.removesuffix(".py").replace("/", ".")) for p in listed]
    loaded = sorted(m.__name__ for m in modules if (m.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES)))
    assert list(buildinfo.compiled_modules()) == loaded
    assert compiled() is bool(loaded)
    name = buildinfo.build_name()
    if loaded:
        assert name.startswith("compiled (mypyc: ") and all(n.split(".", 1)[1] in name for n in loaded)
    else:
        assert name == "pure Python"
