"""Hook dispatch: per event, the implementations a Guard calls, in the order and with the arguments pluggy would.

The contract is `core.hookspecs` and pluggy is how plugins join. A Guard without plugins (every replay) never
builds a plugin manager: it calls a table of bound engine methods per event, positionally, read once per engine
class and laid out once per policy (`plan`). A Guard with a plugin, or with an engine that uses pluggy's marks
(wrappers, tryfirst/trylast), reads its table from pluggy's registry in pluggy's order, and uses pluggy's own
caller for an event a wrapper wraps. `tests/core/test_dispatch.py` checks this table against plain pluggy.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import pluggy

from ..core import hookspecs
from ..core._model import Verdict
from ..engines import ENGINES, Engine
from ..engines.base import registry_version

if TYPE_CHECKING:
    from ._policy import Policy

__all__ = [
    "EVENT_ARGS", "Events", "Hooks", "Plan", "PluginManager", "direct_events", "fire1", "fire2", "fire3",
    "flatten", "new_pm", "plan", "pluggy_events", "pluggy_plugin",
]

# built-in engines that never read the prompt view: with only these (and no plugin), the Guard builds
# no view entries at all (an engine not listed here gets the view, so a new one is safe by default)
_VIEWLESS: Final = frozenset({"loop_guard", "read_tracker", "failure_tracker", "budget"})


def _argnames(function: Any) -> tuple[str, ...]:
    """The arguments a hook implementation asks for, as pluggy reads them (no self, none with defaults)."""
    params = list(inspect.signature(function).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return tuple(p.name for p in params if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD)


# the per-event hooks and their arguments in the contract's order, read from `hookspecs` once
EVENT_ARGS: Final[dict[str, tuple[str, ...]]] = {
    name: _argnames(getattr(hookspecs, name))
    for name in (
        "loopguard_turn_start", "loopguard_before_call", "loopguard_after_call", "loopguard_turn_end",
        "loopguard_before_llm", "loopguard_llm_result", "loopguard_compacted", "loopguard_phase",
        "loopguard_message", "loopguard_rejected", "loopguard_done", "loopguard_not_run", "loopguard_run_end",
    )
}
_PLUGGY_ONLY: Final = ("wrapper", "hookwrapper", "tryfirst", "trylast", "specname")

Fn = Callable[..., Any]
# How an implementation is called: with all the event's arguments (`ALL`), the first only (`FIRST`), the
# second only (`SECOND`) or none (`NONE`) — the shapes the engines use, called directly; any other shape
# gets a wrapper that takes all the arguments (`ALL`). A code per implementation instead of a wrapper for
# every shape saves a Python frame per engine per event.
ALL: Final = 0
FIRST: Final = 1
SECOND: Final = 2
NONE: Final = 3
Impl = tuple[Fn, int]
Events = dict[str, tuple[Impl, ...]]


Picks = tuple[int, ...] | None  # where an implementation's arguments sit in the event's; None: all, in order
_CLASS_IMPLS: dict[type, dict[str, Picks] | None] = {}


def _class_impls(cls: type) -> dict[str, Picks] | None:
    """An engine class's event hooks and which of the event's arguments each takes, read once per class.

    None when an implementation needs pluggy (a wrapper, an ordering mark, an unknown argument pluggy
    should report): Guards of that class then go through pluggy.
    """
    if cls not in _CLASS_IMPLS:
        _CLASS_IMPLS[cls] = read_impls(cls)
    return _CLASS_IMPLS[cls]


def read_impls(cls: type) -> dict[str, Picks] | None:
    out: dict[str, Picks] = {}
    for name, spec in EVENT_ARGS.items():
        function = getattr(cls, name, None)
        opts = hookspecs.impl_options(function)
        if opts is None:
            continue
        if any(opts.get(k) for k in _PLUGGY_ONLY):
            return None
        args = _argnames(function)
        if any(a not in spec for a in args):
            return None
        out[name] = _picks(args, spec)
    return out


def _picks(args: Sequence[str], spec: tuple[str, ...]) -> Picks:
    return None if tuple(args) == spec else tuple(spec.index(a) for a in args)


def _how(picks: Picks) -> int:
    """How an implementation taking `picks` of the event's arguments is called (`ALL` for a wrapper)."""
    if picks is None:
        return ALL
    if picks == (0,):
        return FIRST
    if picks == (1,):
        return SECOND
    if not picks:
        return NONE
    return ALL


def _impl(method: Fn, picks: Picks) -> Impl:
    """`method` with how to call it given the event's arguments in the contract's order (positionally)."""
    how = _how(picks)
    if how == ALL and picks is not None:  # another shape: a wrapper that picks its arguments
        return (lambda *a: method(*[a[k] for k in picks])), ALL
    return method, how


Layout = dict[str, tuple[tuple[int, int, Picks], ...]]  # per event: (engine index, how, picks) in policy order


def _layout(engines: Sequence[Engine[Any]]) -> Layout | None:
    """Per event, which engines implement it and how they are called; None when pluggy is needed."""
    table: dict[str, list[tuple[int, int, Picks]]] = {name: [] for name in EVENT_ARGS}
    for i, engine in enumerate(engines):
        impls = _class_impls(type(engine))
        if impls is None:
            return None
        idle = engine.idle_hooks()
        for name, picks in impls.items():
            if name not in idle:
                how = _how(picks)
                table[name].append((i, how, picks if how == ALL and picks is not None else None))
    return {name: tuple(fns) for name, fns in table.items()}


_NO_EVENTS: Final[Events] = {name: () for name in EVENT_ARGS}


@final
class Plan:
    """What every Guard of one policy builds alike, worked out once per policy: the engine classes with their
    settings, whether the view is kept, and the event table's layout per set of idle hooks."""

    __slots__ = ("engines", "layouts", "policy", "version", "viewless")

    def __init__(self, policy: Policy) -> None:
        self.policy = policy  # held so the `id` it is cached under stays this policy's
        self.engines = tuple((_engine_class(name), settings) for name, settings in policy.engines.items())
        self.version = registry_version()  # the registry as read (a look-up may have read the entry points)
        self.viewless = all(cls.name in _VIEWLESS for cls, _ in self.engines)
        # idle hooks come from each engine's settings; an engine may also decide per run, so the layout is
        # kept per combination the runs answered (one, for every built-in engine)
        self.layouts: dict[tuple[frozenset[str], ...], Layout | None] = {}

    def direct_events(self, engines: Sequence[Engine[Any]]) -> Events | None:
        """The event table of one run's `engines` (built from this plan), or None when pluggy is needed."""
        idle = tuple([e.idle_hooks() for e in engines])
        layouts = self.layouts
        if idle in layouts:
            layout = layouts[idle]
        else:
            layout = layouts[idle] = _layout(engines)
        return None if layout is None else direct_events(engines, layout)


def _engine_class(name: str) -> type[Engine[Any]]:
    cls = ENGINES.get(name)
    if cls is None:  # a policy names only engines it found; one unregistered since cannot be built
        raise KeyError(name)
    return cls


_PLANS: dict[int, Plan] = {}
_MAX_PLANS: Final = 64  # policies in use at once (a matrix, an eval sweep); more just rebuild their plans


def plan(policy: Policy) -> Plan:
    """The plan of `policy`, cached by its `id`: a cached plan counts only for the very object it holds (an
    id is reused once its object is freed) and only while no engine class was registered since."""
    found = _PLANS.get(id(policy))
    if found is None or found.policy is not policy or found.version != registry_version():
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        found = _PLANS[id(policy)] = Plan(policy)
    return found


def direct_events(engines: Sequence[Engine[Any]], layout: Layout) -> Events:
    """Per event, the engines' bound implementations in policy order, as `layout` places them."""
    events = _NO_EVENTS.copy()  # most events have no implementation: they keep the shared empty tuple
    for name, fns in layout.items():
        if fns:
            events[name] = tuple([(getattr(engines[i], name), how) if picks is None
                                  else _impl(getattr(engines[i], name), picks) for i, how, picks in fns])
    return events


_FORWARDERS: dict[type, type | None] = {}


def pluggy_plugin(engine: Engine[Any]) -> object:
    """What a plugin manager registers for `engine`: the engine itself, or, for an engine compiled by mypyc
    (the compiled build's built-ins), a Python object whose hooks call the engine's. pluggy registers
    only Python functions (it reads their code for the arguments), which a compiled method is not."""
    cls = type(engine)
    if cls not in _FORWARDERS:
        _FORWARDERS[cls] = _forwarder_class(cls)
    forwarder = _FORWARDERS[cls]
    if forwarder is None:
        return engine
    plugin = forwarder()
    plugin.engine = engine
    return plugin


def _forwarder_class(cls: type) -> type | None:
    """A class whose methods are Python functions calling `cls`'s compiled hook implementations (same names,
    arguments and options); None when pluggy can read `cls` itself."""
    methods: dict[str, Any] = {}
    for name in dir(cls):
        if not name.startswith(hookspecs.PROJECT + "_"):
            continue
        function = getattr(cls, name)
        options = hookspecs.impl_options(function)
        if options is None:
            continue
        if inspect.isfunction(function):
            return None  # a Python class: pluggy reads it as it is
        args = _argnames(function)
        if not all(a.isidentifier() and a in EVENT_ARGS.get(name, ()) for a in args):
            raise TypeError(f"{cls.__name__}.{name}: arguments {args} are not the hook's")
        # a function with the implementation's own argument names, which pluggy reads from its code; the
        # names are the hook specification's (checked above), so the source is fixed by our own contract
        params = "".join(", " + a for a in args)
        namespace: dict[str, Any] = {}
        exec(f"def {name}(self{params}):\n    return self.engine.{name}({params[2:]})\n", namespace)
        forward = namespace[name]
        setattr(forward, hookspecs.PROJECT + "_impl", dict(options))
        methods[name] = forward
    return type(f"{cls.__name__}Hooks", (), {"__slots__": ("engine",), **methods})


def pluggy_events(pm: pluggy.PluginManager) -> Events:
    """Per event, the implementations in pluggy's order; pluggy's own caller where a plugin wraps."""
    table: Events = {}
    for name, spec in EVENT_ARGS.items():
        caller = getattr(pm.hook, name)
        impls = caller.get_hookimpls()
        if any(i.hookwrapper or i.wrapper for i in impls):
            table[name] = ((lambda *a, _c=caller, _s=spec: flatten(_c(**dict(zip(_s, a, strict=True))))), ALL),
        else:  # pluggy calls the last registered implementation first
            table[name] = tuple(_impl(i.function, _picks(i.argnames, spec)) for i in reversed(impls))
    return table


def _add(out: list[Verdict] | None, r: Any) -> list[Verdict]:
    """`out` with an implementation's answer (a verdict or a list of them) added."""
    if out is None:
        out = []
    if r.__class__ is Verdict:  # Verdict is final: no subclass to miss
        out.append(r)
    else:
        out.extend([v for v in r if v is not None])
    return out


# One caller per event arity: the implementations' verdicts, flattened, or None when there are none.
# `not how` tests for `ALL` (0), nearly every implementation's shape, without loading a global per call.
def fire1(fns: tuple[Impl, ...], a: Any) -> list[Verdict] | None:
    out: list[Verdict] | None = None
    for f, how in fns:
        r = f(a) if how != NONE else f()
        if r is not None:
            out = _add(out, r)
    return out


def fire2(fns: tuple[Impl, ...], a: Any, b: Any) -> list[Verdict] | None:
    out: list[Verdict] | None = None
    for f, how in fns:
        r = f(a, b) if not how else f(a) if how == FIRST else f(b) if how == SECOND else f()
        if r is not None:
            out = _add(out, r)
    return out


def fire3(fns: tuple[Impl, ...], a: Any, b: Any, c: Any) -> list[Verdict] | None:
    out: list[Verdict] | None = None
    for f, how in fns:
        r = f(a, b, c) if not how else f(a) if how == FIRST else f(b) if how == SECOND else f()
        if r is not None:
            out = _add(out, r)
    return out


_FIRE: Final[dict[int, Callable[..., list[Verdict] | None]]] = {1: fire1, 2: fire2, 3: fire3}


def flatten(results: Iterable[Any]) -> list[Verdict]:
    """The verdicts in pluggy's list of answers (each a verdict, a list of them, or None)."""
    out: list[Verdict] = []
    for r in results:
        if r is None:
            continue
        if isinstance(r, Verdict):
            out.append(r)
        else:
            out.extend(v for v in r if v is not None)
    return out


class PluginManager(pluggy.PluginManager):
    """A plugin manager that only inspects `loopguard_*` attributes (pluggy otherwise inspects every
    attribute of every engine), and calls `on_change` when plugins change so its Guard rebuilds its table."""

    on_change: Callable[[pluggy.PluginManager], None] | None = None

    def register(self, plugin: object, name: str | None = None) -> str | None:
        registered = super().register(plugin, name)
        if self.on_change is not None:
            self.on_change(self)
        return registered

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        removed = super().unregister(plugin, name)
        if self.on_change is not None:
            self.on_change(self)
        return removed

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        if not name.startswith("loopguard_"):
            return None
        return super().parse_hookimpl_opts(plugin, name)

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> Any:
        if not name.startswith("loopguard_"):
            return None
        return super().parse_hookspec_opts(module_or_class, name)


def new_pm() -> PluginManager:
    pm = PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


@final
class Hooks:
    """The event hooks called by keyword, as pluggy's `pm.hook` is: each returns the verdicts (a list)."""

    __slots__ = ("_events",)

    def __init__(self, events: Events) -> None:
        self._events = events

    def __getattr__(self, name: str) -> Callable[..., list[Verdict]]:
        fns, spec = self._events[name], EVENT_ARGS[name]
        fire = _FIRE[len(spec)]
        return lambda **kw: fire(fns, *[kw.get(a) for a in spec]) or []
