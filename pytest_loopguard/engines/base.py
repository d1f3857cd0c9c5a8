"""What every engine shares: the base class, settings base and the registry of engine classes."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    from ..core._runcontext import RunContext

__all__ = [
    "ENTRY_POINT_GROUP",
    "Engine",
    "EngineSettings",
    "SettingError",
    "at_least",
    "load_engine_plugins",
    "register_engine",
    "registry",
]


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

    Subclasses set `name`, `Settings` and `REASONS` and implement hooks from `hookspecs` with `@hookimpl`.
    """

    name: ClassVar[str] = ""
    Settings: ClassVar[type[Any]] = EngineSettings
    # The reason codes the engine's verdicts can carry, each `name.code`; rule coverage reports on them.
    REASONS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: Any, run: RunContext) -> None:
        self.settings = settings
        self.run = run

    def idle_hooks(self) -> frozenset[str]:
        """The hooks this instance's settings make do nothing (each returns None and changes no state that
        anything reads): a Guard without plugins leaves them out of its event table, sparing a call per event."""
        return frozenset()


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
ENTRY_POINT_GROUP = "loopguard.engines"
_plugins_loaded = False
_registered = 0


def register_engine(cls: type[Engine]) -> type[Engine]:
    """Make an engine class available to policies under `cls.name` (usable as a decorator)."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no `name`")
    global _registered
    _REGISTRY[cls.name] = cls
    _registered += 1
    return cls


def registry_version() -> int:
    """How many registrations so far: what is cached from the registry is stale once this changes."""
    return _registered


def registry() -> dict[str, type[Engine]]:
    """Every known engine class by name: the built-ins, installed plugins' and registered ones (loaded once)."""
    global _plugins_loaded
    for name, module in _BUILTIN_MODULES.items():
        if name not in _REGISTRY:
            mod = importlib.import_module(f"{__package__}.{module}")
            register_engine(mod.ENGINE)
    if not _plugins_loaded:
        _plugins_loaded = True  # set first: a plugin that fails is reported once, not on every lookup
        for cls in load_engine_plugins():
            register_engine(cls)
    return dict(_REGISTRY)


def load_engine_plugins() -> list[type[Engine]]:
    """The engine classes installed packages declare in the `loopguard.engines` entry-point group.

    An entry point names an Engine subclass (`pkg.module:MyEngine`) or a module with an `ENGINE`, like the
    built-ins; its name must be the engine's `name` (the one policies use) and may not be a built-in's.
    """
    from importlib.metadata import entry_points

    from ..errors import LoopguardError

    found: list[type[Engine]] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        where = f"engine plugin {ep.name!r} ({ep.value}, entry point group {ENTRY_POINT_GROUP})"
        try:
            target = ep.load()
        except Exception as exc:  # any import error of third-party code: say which plugin, not a traceback
            raise LoopguardError(f"{where}: cannot load: {type(exc).__name__}: {exc}") from None
        cls = getattr(target, "ENGINE", target)
        if not (isinstance(cls, type) and issubclass(cls, Engine)):
            raise LoopguardError(f"{where}: expected an Engine subclass or a module with ENGINE, got {cls!r}")
        if ep.name in _BUILTIN_MODULES:
            raise LoopguardError(f"{where}: {ep.name!r} is a built-in engine; pick another name")
        if cls.name != ep.name:
            raise LoopguardError(f"{where}: the class is named {cls.name!r}; name the entry point after it")
        found.append(cls)
    return found


S = TypeVar("S")
T = TypeVar("T")


def per_settings(build: Callable[[S], T]) -> Callable[[S], T]:
    """`build(settings)` made once per settings object and shared by the runs that use it: what an engine
    derives from its (immutable) settings alone. The value is shared, so it must never be mutated."""
    cache: dict[int, tuple[S, T]] = {}  # id -> (the settings, kept so that id stays theirs; the value)

    def get(settings: S) -> T:
        hit = cache.get(id(settings))
        if hit is not None:
            return hit[1]
        if len(cache) >= 64:  # settings in use at once (a policy matrix); beyond that, derived again
            cache.clear()
        value = build(settings)
        cache[id(settings)] = (settings, value)
        return value

    return get
