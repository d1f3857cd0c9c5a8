"""The pytest rows' helpers: whether rewrite caches existed and Python writes bytecode (`bytecode_state`), and
the items that do nothing which time pytest's own share (`write_floor`)."""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from pytest_loopguard.bench._pytest import bytecode_state, write_floor

pytest_plugins = ["pytester"]

TAG = f"{sys.implementation.cache_tag}-pytest-{version('pytest')}"


def _package(tmp_path: Path, *caches: str) -> Path:
    (tmp_path / "__pycache__").mkdir()
    for name in caches:
        (tmp_path / "__pycache__" / name).write_bytes(b"")
    return tmp_path


def test_no_cache_and_no_bytecode_written_means_every_process_rewrites(tmp_path: Path) -> None:
    state = bytecode_state(_package(tmp_path), {"PYTHONDONTWRITEBYTECODE": "1"})
    assert state == "rewrite caches absent, PYTHONDONTWRITEBYTECODE set: every process rewrites every plugin module"


def test_no_cache_where_bytecode_is_written_means_the_first_run_writes_it(tmp_path: Path) -> None:
    assert bytecode_state(_package(tmp_path), {}) == "rewrite caches absent, written by the first run"
    # an empty value is unset, as Python reads it
    written = "rewrite caches absent, written by the first run"
    assert bytecode_state(tmp_path, {"PYTHONDONTWRITEBYTECODE": ""}) == written


def test_the_plugin_modules_rewrite_cache_for_this_pytest_counts_as_present(tmp_path: Path) -> None:
    package = _package(tmp_path, f"plugin.{TAG}.pyc")
    assert bytecode_state(package, {"PYTHONDONTWRITEBYTECODE": "1"}) == "rewrite caches present"


def test_a_normal_pyc_or_another_pytests_cache_is_not_a_rewrite_cache(tmp_path: Path) -> None:
    package = _package(tmp_path, f"plugin.{sys.implementation.cache_tag}.pyc", f"plugin.{sys.implementation.cache_tag}"
                       "-pytest-0.0.1.pyc", f"runner.{TAG}.pyc")
    assert bytecode_state(package, {"PYTHONDONTWRITEBYTECODE": "1"}).startswith("rewrite caches absent")


def test_the_floor_is_one_item_per_file_each_doing_nothing(pytester: pytest.Pytester) -> None:
    floor = write_floor(pytester.path, 3)
    assert sorted(p.name for p in floor.iterdir()) == ["conftest.py", "f0000.floor", "f0001.floor", "f0002.floor"]
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", str(floor))
    result.assert_outcomes(passed=3)
    assert [r.nodeid for r in result.reprec.getreports("pytest_runtest_logreport") if r.when == "call"] == [
        f"floor/f000{i}.floor::f000{i}" for i in range(3)]
