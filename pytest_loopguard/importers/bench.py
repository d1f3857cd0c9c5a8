"""`loopguard bench --import`: how fast the importers convert (and load) real logs, per corpus.

Measured, never asserted: timing targets live here, not in tests. A tarball is read member by member in
memory (`tar_traces`), as the eval code reads the calibration corpus.
"""

from __future__ import annotations

import tarfile
import time
from pathlib import Path

from ..core._limits import MAX_LOG_BYTES
from . import Source, available, detect, tar_traces, to_trace
from .base import LOG_SUFFIXES

__all__ = ["DEFAULT_PATHS", "import_bench"]

DEFAULT_PATHS = ("../shared/corpus/real", "../shared/corpus/calibration/mini-swe-agent-gemini-3-pro-swebench.tar.gz")


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(LOG_SUFFIXES))


def import_bench(paths: list[str]) -> list[list[object]]:
    """Rows of (corpus, files, runs, steps, seconds, runs per second) for each folder or tarball."""
    pool = available()
    rows: list[list[object]] = []
    for raw in paths:
        path = Path(raw)
        start = time.perf_counter()
        files = runs = steps = 0
        if path.is_file() and tarfile.is_tarfile(path):
            for _name, trace in tar_traces(path):
                runs += 1
                steps += len(trace.steps)
            with tarfile.open(path) as tar:
                files = sum(1 for m in tar if m.isfile())
        else:
            for file in _files(path) if path.is_dir() else [path]:
                source = Source.from_path(file, MAX_LOG_BYTES)
                files += 1
                for run in detect(source, pool).convert(source):
                    runs += 1
                    steps += len(to_trace(run, source.name).steps)
        seconds = time.perf_counter() - start
        rows.append([raw, files, runs, steps, f"{seconds:.2f}", f"{runs / seconds:.0f}" if seconds else "—"])
    return rows
