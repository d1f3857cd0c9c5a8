"""The one way a kind of plugin (engines, importers) is found: a registry of classes by name, filled from the
built-ins, from classes registered in code and from the entry points installed packages declare."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, final

from ..errors import LoopguardError

__all__ = ["Registry"]

P = TypeVar("P")
C = TypeVar("C", bound=type[Any])


@final
class Registry(Generic[P]):
    """The classes of one kind of plugin, each known by its class attribute `name`.

    Three sources, one shape: the built-ins (`module:Class` specs, the form an entry point's value takes,
    imported on first use), the classes that installed packages name in the entry-point group `group`
    (read once, at the first `classes()`), and the classes registered in code with `register`. A later
    registration of a name replaces the earlier one; an entry point may not take a built-in's name.
    """

    __slots__ = ("_added", "_builtins", "_installed", "_loaded", "_merged", "_older", "attribute", "base", "group",
                 "kind", "older", "version")

    def __init__(self, kind: str, base: type[P], group: str, attribute: str, builtins: Mapping[str, str],
                 older: Callable[[object], bool] | None = None) -> None:
        self.kind = kind  # "engine", "importer": how error messages name one
        self.base = base  # every class of the registry derives from it
        self.group = group  # the entry-point group installed packages declare their classes in
        self.attribute = attribute  # an entry point may name a module that sets this attribute to the class
        self.older = older  # an older form an entry point may still name (kept aside, see `older_plugins`)
        self._builtins = dict(builtins)
        self._loaded: dict[str, type[P]] = {}  # the built-ins imported so far
        self._added: dict[str, type[P]] = {}  # installed and registered classes; the last one of a name wins
        self._installed: list[type[P]] | None = None  # None: the entry points are not read yet
        self._older: list[object] = []
        self._merged: dict[str, type[P]] | None = None
        # changes with every registration: what a caller derived from `classes()` is stale once it does (read
        # by every Guard a policy builds, hence an attribute and not a property)
        self.version = 0

    @property
    def builtin_names(self) -> tuple[str, ...]:
        return tuple(self._builtins)

    def register(self, cls: C) -> C:
        """Make `cls` known under `cls.name`, replacing any class of that name (usable as a decorator)."""
        if not self._fits(cls):
            raise TypeError(f"expected a subclass of {self.base.__name__}, got {cls!r}")
        if not getattr(cls, "name", None):
            raise ValueError(f"{cls.__qualname__} has no `name`")
        self._add(cls)
        return cls

    def _fits(self, obj: object) -> bool:
        return isinstance(obj, type) and issubclass(obj, self.base)

    def _add(self, cls: type[P]) -> None:
        name: str = getattr(cls, "name")  # noqa: B009 - checked by the caller; a ClassVar of the base
        self._added.pop(name, None)  # re-added: the latest registration comes last among the added ones
        self._added[name] = cls
        self._merged = None
        self.version += 1

    def builtins(self) -> list[type[P]]:
        """The built-in classes, in their order (for importers: the detection order)."""
        return [self._builtin(name) for name in self._builtins]

    def _builtin(self, name: str) -> type[P]:
        cls = self._loaded.get(name)
        if cls is None:
            module, _, attribute = self._builtins[name].partition(":")
            cls = self._loaded[name] = getattr(importlib.import_module(module), attribute)
        return cls

    def get(self, name: str) -> type[P] | None:
        """The class known as `name`, or None. A built-in or registered name is answered without reading the
        entry points (an entry point may not take a built-in's name; reading them costs importlib.metadata and a
        scan of every installed distribution, tens of ms); any other name reads them, once, as `classes()` does."""
        cls = self._added.get(name)
        if cls is None and name in self._builtins:
            return self._builtin(name)
        if cls is None and self._installed is None:
            self.classes()
            cls = self._added.get(name)
        return cls

    def classes(self) -> dict[str, type[P]]:
        """Every known class by name: the built-ins in their order (or what replaced them), then the installed
        and registered ones in the order they came. The entry points are read at the first call."""
        if self._installed is None:
            self.builtins()  # imported first: a broken plugin leaves the built-ins known
            self._installed = []  # set first: a plugin that fails is reported once, not on every look-up
            self._installed, self._older = self._read()
            for cls in self._installed:
                self._add(cls)
        merged = self._merged
        if merged is None:
            added = self._added
            merged = {name: added.get(name) or self._builtin(name) for name in self._builtins}
            merged.update((name, cls) for name, cls in added.items() if name not in merged)
            self._merged = merged
        return dict(merged)

    def installed(self) -> list[type[P]]:
        """The classes the group's entry points name, read now and checked (what `classes()` adds at its first
        call); a `LoopguardError` of one line naming the entry point when one does not load or does not fit."""
        return self._read()[0]

    def older_plugins(self) -> list[object]:
        """What entry points of the group name in the older form `older` accepts, as read by `classes()`."""
        self.classes()
        return list(self._older)

    def refresh(self) -> None:
        """Forget what was read from the entry points: the next `classes()` reads them again (for a process
        that installed a package after its first look, and for tests that install one)."""
        for cls in self._installed or ():
            name: str = getattr(cls, "name")  # noqa: B009 - see _add
            if self._added.get(name) is cls:
                del self._added[name]
        self._installed = None
        self._older = []
        self._merged = None
        self.version += 1

    def _read(self) -> tuple[list[type[P]], list[object]]:
        """The group's entry points, in name order: the classes they name, and the objects of the older form."""
        from importlib.metadata import entry_points  # read once per process: kept off the start-up path

        found: list[type[P]] = []
        older: list[object] = []
        for ep in sorted(entry_points(group=self.group), key=lambda e: e.name):
            where = f"{self.kind} plugin {ep.name!r} ({ep.value}, entry point group {self.group})"
            try:
                target = ep.load()
            except Exception as exc:  # any import error of third-party code: say which plugin, not a traceback
                raise LoopguardError(f"{where}: cannot load: {type(exc).__name__}: {exc}") from None
            cls = getattr(target, self.attribute, target)
            if not self._fits(cls):
                if self.older is not None and self.older(target):
                    older.append(target)
                    continue
                raise LoopguardError(f"{where}: expected an {self.base.__name__} subclass or a module with "
                                     f"{self.attribute}, got {cls!r}")
            if ep.name in self._builtins:
                raise LoopguardError(f"{where}: {ep.name!r} is a built-in {self.kind}; pick another name")
            name = getattr(cls, "name", None)
            if name != ep.name:
                raise LoopguardError(f"{where}: the class is named {name!r}; name the entry point after it")
            found.append(cls)
        return found, older
