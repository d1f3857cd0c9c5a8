"""What every engine shares: the base class, settings base and the registry of engine classes."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..runtime import RunContext

__all__ = ["Engine", "EngineSettings", "SettingError", "at_least", "register_engine", "registry"]


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Base of every engine's settings dataclass (frozen; presets and overrides build new instances)."""


class SettingError(ValueError):
    """A settings value out of its range; the policy layer turns it into a PolicyError naming the setting."""

    def __init__(self, setting: str, problem: str) -> None:
        self.setting = setting
        self.problem = problem
        super().__init__(f"{setting}: {problem}")


def at_least(settings: object, minimum: int, *names: str) -> None:
    """Raise SettingError for the first of `names` whose value is below `minimum` (None means off)."""
    for name in names:
        value = getattr(settings, name)
        if value is not None and value < minimum:
            raise SettingError(name, f"expected an integer >= {minimum}, got {value!r}")


class Engine:
    """Base of the engines: one instance per run, holding that run's state only.

    Subclasses set `name` and `Settings` and implement hooks from `hookspecs` with `@hookimpl`.
    """

    name: ClassVar[str] = ""
    Settings: ClassVar[type[Any]] = EngineSettings

    def __init__(self, settings: Any, run: RunContext) -> None:
        self.settings = settings
        self.run = run


_BUILTIN_MODULES = {
    "loop_guard": "loop_guard",
    "read_tracker": "read_tracker",
    "failure_tracker": "failure_tracker",
    "budget": "budget",
    "stuck_detector": "stuck_detector",
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
