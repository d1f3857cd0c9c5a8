"""The bundled traces (traces/), loaded once per test process: several test modules run over all of them, and
loading the ~290 files took half a second each time a module was imported."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pytest_loopguard.core._model import Trace
from pytest_loopguard.io._format import validate_paths

ROOT = Path(__file__).resolve().parents[1]


@cache
def bundled_traces() -> tuple[Trace, ...]:
    """Every bundled trace a replay runs (the simulated scenarios left out), in the order `validate_paths` reads
    them. Traces are frozen: the modules share these objects."""
    traces, errors = validate_paths([ROOT / "traces"])
    assert not errors, errors
    return tuple(t for t in traces if t.mode != "simulate")
