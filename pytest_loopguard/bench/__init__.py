"""`loopguard bench`: the performance goals, measured."""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._replay import bench_table, run_bench, synthetic_trace
    from ._rows import SuiteRow
    from ._suite import run_suite, suite_json, suite_table

__all__ = [
    "SuiteRow",
    "bench_table",
    "run_bench",
    "run_suite",
    "suite_json",
    "suite_table",
    "synthetic_trace",
]

__getattr__, __dir__ = exports(__name__, {
    "_replay": ("bench_table", "run_bench", "synthetic_trace"),
    "_rows": ("SuiteRow",),
    "_suite": ("run_suite", "suite_json", "suite_table"),
})
