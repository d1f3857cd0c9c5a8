"""What every engine shares: the base class, settings base and the registry of engine classes."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..runtime import RunContext

__all__ = ["Engine", "EngineSettings", "register_engine", "registry"]


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Base of every engine's settings dataclass (frozen; presets and overrides build new instances)."""


class Engine:
    """Base of the engines: one instance per run, holding that run's state only.

    Subclasses set `name`, `Settings` and `REASONS` and implement hooks from `hookspecs` with `@hookimpl`.
    """

    name: ClassVar[str] = ""
    Settings: ClassVar[type[Any]] = EngineSettings
    # The reason codes the engine's verdicts can carry, each `name.code`; rule coverage reports on them.
    REASONS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: Any, run: RunContext) -> None:
        self.settings = settings
        self.run = run


_BUILTIN_MODULES = {
    "loop_guard": "loop_guard",
    "read_tracker": "read_tracker",
    "failure_tracker": "failure_tracker",
    "budget": "budget",
    "dedup": "dedup",
    "context": "context",
}
_REGISTRY: dict[str, type[Engine]] = {}


def register_engine(cls: type[Engine]) -> type[Engine]:
    """Make an engine class available to policies under `cls.name` (usable as a decorator)."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no `name`")
    _REGISTRY[cls.name] = cls
    return cls


def registry() -> dict[str, type[Engine]]:
    """Every known engine class by name: the built-ins (imported on first use) and registered ones."""
    for name, module in _BUILTIN_MODULES.items():
        if name not in _REGISTRY:
            mod = importlib.import_module(f"{__package__}.{module}")
            register_engine(mod.ENGINE)
    return dict(_REGISTRY)
