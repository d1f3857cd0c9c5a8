"""The built-in engines and the registry a policy resolves engine names against.

Each engine's rule lives in one module, its settings dataclass in `settings/` (so that it stays Python in the
compiled build: the policy layer reads its annotations), re-exported there as `Settings`. Other engines join
through the `loopguard.engines` entry points of installed packages, or `ENGINES.register` in code
(docs/plugins.md).
"""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from .base import (
        ENGINE_ORDER,
        ENGINES,
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
    "ENGINES",
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

__getattr__, __dir__ = exports(__name__, {
    "base": ("ENGINE_ORDER", "ENGINES", "ENTRY_POINT_GROUP", "Engine", "EngineSettings", "SettingError",
             "load_engine_plugins", "register_engine", "registry", "registry_version"),
})
