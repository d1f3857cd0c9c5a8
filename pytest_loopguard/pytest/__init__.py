"""The pytest plugin: hooks, trace-file items, fixtures and hypothesis strategies (public as
`pytest_loopguard.strategies`)."""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._fixtures import Loopguard, TraceBuilder
    from ._sim_fixtures import SimulationKit
    from .plugin import TraceFile, TraceItem, TraceMismatch

__all__ = [
    "Loopguard",
    "SimulationKit",
    "TraceBuilder",
    "TraceFile",
    "TraceItem",
    "TraceMismatch",
]

__getattr__, __dir__ = exports(__name__, {
    "_fixtures": ("Loopguard", "TraceBuilder"),
    "_sim_fixtures": ("SimulationKit",),
    "plugin": ("TraceFile", "TraceItem", "TraceMismatch"),
})
