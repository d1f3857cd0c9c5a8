"""The built-in engines and the registry a policy resolves engine names against.

Each engine lives in one module: its settings dataclass at the top, its rule below. Third-party
engines join with `register_engine` (docs/custom-engines.md).
"""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from .base import (
        ENTRY_POINT_GROUP,
        Engine,
        EngineSettings,
        SettingError,
        load_engine_plugins,
        register_engine,
        registry,
        registry_version,
    )

__all__ = [
    "ENGINE_ORDER",
    "ENTRY_POINT_GROUP",
    "Engine",
    "EngineSettings",
    "SettingError",
    "load_engine_plugins",
    "register_engine",
    "registry",
    "registry_version",
]

# The order engines are consulted and listed in: guards first, then context engines.
ENGINE_ORDER = ("loop_guard", "read_tracker", "failure_tracker", "budget", "stuck_detector", "dedup", "context")

__getattr__, __dir__ = exports(__name__, {
    "base": ("ENTRY_POINT_GROUP", "Engine", "EngineSettings", "SettingError", "load_engine_plugins", "register_engine",
             "registry", "registry_version"),
})
