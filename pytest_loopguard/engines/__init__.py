"""The built-in engines and the registry a policy resolves engine names against.

Each engine lives in one module: its settings dataclass at the top, its rule below. Third-party
engines join with `register_engine`.
"""

from __future__ import annotations

from .base import Engine, EngineSettings, register_engine, registry

__all__ = ["ENGINE_ORDER", "Engine", "EngineSettings", "register_engine", "registry"]

# The order engines are consulted and listed in: guards first, then context engines.
ENGINE_ORDER = ("loop_guard", "read_tracker", "failure_tracker", "budget", "stuck_detector", "dedup", "context")
