"""The built-in engines and the registry a policy resolves engine names against.

Each engine lives in one module: its settings dataclass at the top, its rule below. Other engines join
through the `loopguard.engines` entry points of installed packages, or `ENGINES.register` in code
(docs/plugins.md).
"""

from __future__ import annotations

from .base import ENGINE_ORDER, ENGINES, Engine, EngineSettings, register_engine, registry

__all__ = ["ENGINES", "ENGINE_ORDER", "Engine", "EngineSettings", "register_engine", "registry"]
