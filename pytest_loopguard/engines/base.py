"""What every engine shares: the base class, the settings base, and the registry of engine classes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeVar

from .._mypyc import mypyc_attr
from ..core._registry import Registry
from .settings import EngineSettings, SettingError, at_least

if TYPE_CHECKING:
    from ..core._model import ToolCall
    from ..core._runcontext import RunContext

__all__ = [
    "ENGINES",
    "ENGINE_ORDER",
    "ENTRY_POINT_GROUP",
    "Engine",
    "EngineSettings",
    "SettingError",
    "at_least",
    "load_engine_plugins",
    "register_engine",
    "registry",
    "registry_version",
]


SettingsT = TypeVar("SettingsT")


# compiled (mypyc) in the compiled build: engines of other packages, never compiled, subclass it all the same
@mypyc_attr(allow_interpreted_subclasses=True)
class Engine(Generic[SettingsT]):
    """Base of the engines: one instance per run, holding that run's state only.

    Subclasses set `name`, `Settings` and `REASONS` and implement hooks from `hookspecs` with `@hookimpl`;
    `Engine[MySettings]` types `self.settings` as the engine's own settings class.
    """

    name: ClassVar[str] = ""
    Settings: ClassVar[type[Any]] = EngineSettings
    # The reason codes the engine's verdicts can carry, each `name.code`; rule coverage reports on them.
    REASONS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: SettingsT, run: RunContext) -> None:
        self.settings = settings
        self.run = run

    def state(self, call: ToolCall | None) -> dict[str, Any]:
        """What this engine counts now, as plain data, for a person reading a step (`loopguard view`); `call`:
        the step's call, if any. Read-only, and never on the replay path: the default says nothing."""
        return {}

    def idle_hooks(self) -> frozenset[str]:
        """The hooks this instance's settings make do nothing (each returns None and changes no state that
        anything reads): a Guard without plugins leaves them out of its event table, sparing a call per event."""
        return frozenset()


# The built-in engines, in the order they are consulted and listed in: guards first, then context engines.
ENGINE_ORDER: Final = ("loop_guard", "read_tracker", "failure_tracker", "budget", "stuck_detector", "dedup", "context")
ENTRY_POINT_GROUP: Final = "loopguard.engines"

# Every engine class a policy can name. A built-in is named like an entry point (`module:ENGINE`) and imported
# at the first look-up, so importing this contract never imports an engine.
ENGINES: Final[Registry[Engine[Any]]] = Registry(
    "engine", Engine, ENTRY_POINT_GROUP, "ENGINE",
    # `external` (a guard process) is built in but not in ENGINE_ORDER: it runs after the others
    builtins={name: f"{__package__}.{name}:ENGINE" for name in (*ENGINE_ORDER, "external")},
)

register_engine: Final = ENGINES.register  # the name code has used since engines became pluggable


def registry() -> dict[str, type[Engine[Any]]]:
    """Every known engine class by name: the built-ins, installed plugins' and registered ones (loaded once)."""
    return ENGINES.classes()


def registry_version() -> int:
    """Changes with every registration: what is cached from the registry is stale once it does."""
    return ENGINES.version


def load_engine_plugins() -> list[type[Engine[Any]]]:
    """The engine classes installed packages declare in the `loopguard.engines` entry-point group, read now.

    An entry point names an Engine subclass (`pkg.module:MyEngine`) or a module with an `ENGINE`, like the
    built-ins; its name must be the engine's `name` (the one policies use) and may not be a built-in's.
    """
    return ENGINES.installed()


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
