"""`loopguard bench --corpus N`'s pytest rows: collecting and running an N-file corpus, beside pytest's start-up.

Each row is a fresh `python -m pytest` in a subprocess, started in a folder whose pytest.ini points
`loopguard_paths` at the corpus; pytest's own start-up (plugins, this one included, and no trace) is timed
on an empty folder with the same ini, so each row also shows its cost over that. pytest's own cost per item is
timed too, on as many items that do nothing (a conftest's, one per empty file: collection and the run
protocol with every installed plugin, no trace read), so the `-n 0` row also shows what the traces cost over
pytest's own share (`over_floor_s`). The five commands run in turn, `repeat` rounds, so a busy moment on a
shared machine falls on every row alike; min and median kept.
Every row also says in which state it found bytecode (`bytecode_state`): where Python writes none
(PYTHONDONTWRITEBYTECODE) and pytest has no assertion-rewrite cache of this package, every process parses,
rewrites and compiles every plugin module again, which is most of each start-up.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Final

from ._rows import SuiteRow

__all__ = ["bytecode_state", "pytest_rows", "write_floor"]

MAX_ROUNDS: Final = 3  # each round is five pytest start-ups: seconds each, even on a quiet machine


def _pytest(folder: Path, args: list[str]) -> tuple[float, int]:
    """Wall seconds and exit status of `python -m pytest -q ARGS` started in `folder`."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=folder,
                          capture_output=True, check=False)
    return time.perf_counter() - start, done.returncode


_PLUGIN_DIR = Path(__file__).parent.parent / "pytest"


def bytecode_state(package: Path = _PLUGIN_DIR, environ: Mapping[str, str] = os.environ) -> str:
    """Whether pytest's assertion-rewrite cache of `package` exists and whether Python writes bytecode."""
    # pytest loads a plugin distribution's modules through its assertion rewriter, which keeps its own pycs
    # (NAME.TAG-pytest-VERSION.pyc beside the normal ones); one for the plugin module means a run left them.
    tag = f"{sys.implementation.cache_tag}-pytest-{version('pytest')}"
    cached = (package / "__pycache__" / f"plugin.{tag}.pyc").is_file()
    writes = not environ.get("PYTHONDONTWRITEBYTECODE")
    if cached:
        return "rewrite caches present"
    if writes:
        return "rewrite caches absent, written by the first run"
    return "rewrite caches absent, PYTHONDONTWRITEBYTECODE set: every process rewrites every plugin module"


# pytest's own share: an item per `.floor` file whose test does nothing (a conftest of the floor's folder)
_FLOOR_CONFTEST: Final = '''import pytest


class Nothing(pytest.Item):
    def runtest(self):
        pass


class FloorFile(pytest.File):
    def collect(self):
        yield Nothing.from_parent(self, name=self.path.stem)


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".floor":
        return FloorFile.from_parent(parent, path=file_path)
'''


def write_floor(folder: Path, files: int) -> Path:
    """`folder/floor`: `files` empty `.floor` files and the conftest that makes each an item doing nothing."""
    floor = folder / "floor"
    floor.mkdir()
    (floor / "conftest.py").write_text(_FLOOR_CONFTEST, encoding="utf-8")
    for i in range(files):
        (floor / f"f{i:04d}.floor").write_bytes(b"")
    return floor


def pytest_rows(folder: Path, corpus: Path, repeat: int) -> list[SuiteRow]:
    """Rows for pytest's start-up, `--collect-only`, pytest's own per-item cost, `-n 0` and `-n 2` on the trace
    files in `corpus`."""
    files = sum(1 for _ in corpus.iterdir())
    (folder / "pytest.ini").write_text(f"[pytest]\nloopguard_paths = {corpus.name}\n", encoding="utf-8")
    empty = folder / "empty"
    empty.mkdir()
    floor = write_floor(folder, files)
    commands = {
        "pytest start-up (empty folder)": [str(empty)],
        f"pytest --collect-only, {files} files": ["--collect-only", str(corpus)],
        f"pytest -n 0, {files} items that do nothing (pytest's own share)": ["-n", "0", str(floor)],
        f"pytest -n 0, {files} files": ["-n", "0", str(corpus)],
        f"pytest -n 2, {files} files": ["-n", "2", str(corpus)],
    }
    state = bytecode_state()  # before the first run, which may write the caches
    seconds: dict[str, list[float]] = {item: [] for item in commands}
    exits: dict[str, int] = {}
    for _ in range(max(1, min(repeat, MAX_ROUNDS))):
        for item, args in commands.items():
            wall, exits[item] = _pytest(folder, args)
            seconds[item].append(wall)
    start_item, collect_item, floor_item, n0_item, n2_item = commands
    startup = min(seconds[start_item])
    judged = files == 1000  # the goals are for 1,000 files
    n0 = min(seconds[n0_item])
    goals: dict[str, tuple[str, bool | None]] = {
        start_item: ("—", None),
        collect_item: ("< 1 ms per file over start-up",
                       (min(seconds[collect_item]) - startup) / files < 1e-3 if judged else None),
        floor_item: ("—", None),
        n0_item: ("≤ 1 s over start-up for 1,000 files", n0 - startup <= 1.0 if judged else None),
        n2_item: ("never slower than -n 0", min(seconds[n2_item]) <= n0 if judged else None),
    }
    rows = []
    for item, walls in seconds.items():
        best, median = min(walls), statistics.median(walls)
        extra: dict[str, float | int | str] = {"seconds": round(best, 3), "median_seconds": round(median, 3),
                                         "exit": exits[item], "bytecode_state": state}
        if item != start_item:
            extra["over_startup_s"] = round(best - startup, 3)
            extra["ms_per_file"] = round((best - startup) * 1000 / files, 3)
        if item == n0_item:  # what the traces cost over pytest's own share of the same number of items
            extra["over_floor_s"] = round(best - min(seconds[floor_item]), 3)
        goal, met = goals[item]
        # a run that did not work (no xdist for -n, a failing trace) meets nothing; start-up exits 5, no tests
        ok = exits[item] == (5 if item == start_item else 0)
        rows.append(SuiteRow(item, "pytest", files, best * 1e6, median * 1e6, goal=goal,
                             met=met if ok else (None if met is None else False), extra=extra))
    return rows
