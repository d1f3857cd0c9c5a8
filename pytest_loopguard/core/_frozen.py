"""Frozen slotted classes declared like dataclasses, built without dataclasses' code generation at import.

`@dataclass(frozen=True, slots=True)` writes and compiles five or six functions per class when the module is
imported: 8 ms for the trace model's seventeen classes, a tenth of `import pytest_loopguard`. Here each class
writes its own `__init__` (compiled once, into the `.pyc`), the shared methods live on `Frozen`, and the
decorator only turns the annotated fields into slots. To `dataclasses` they are dataclasses all the same:
`dataclasses.fields`, `replace`, `asdict` and `is_dataclass` read `__dataclass_fields__`, which is made the
first time it is asked for, by applying `dataclass` to the class as it was written (a shadow that no object is
made of). Assigning a field raises `dataclasses.FrozenInstanceError`; instances pickle and copy.
"""

from __future__ import annotations

import dataclasses
import inspect
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, dataclass_transform

__all__ = ["Frozen", "frozen", "frozen_identity"]

_C = TypeVar("_C", bound=type)
_KW_ONLY_NAMES = ("KW_ONLY", "dataclasses.KW_ONLY")


class Frozen:
    """The base of a frozen class: no assignment after `__init__`, a dataclass-like repr, pickling by fields."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()  # every field, the bases' first, in `__init__`'s order
    _repr_fields: ClassVar[tuple[str, ...]] = ()
    if TYPE_CHECKING:
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._repr_fields)
        return f"{type(self).__qualname__}({inner})"

    def __getstate__(self) -> list[Any]:
        return [getattr(self, name) for name in self._fields]

    def __setstate__(self, state: list[Any]) -> None:
        for name, value in zip(self._fields, state, strict=True):
            object.__setattr__(self, name, value)


class _DataclassView:
    """`__dataclass_fields__` / `__dataclass_params__` of a frozen class, made on first use from a shadow
    dataclass of the class as written (its bases being frozen classes, whose own views the shadow reads)."""

    __slots__ = ("_attr", "_by_value", "_written")

    def __init__(self, written: type, attr: str, by_value: bool) -> None:
        self._written = written
        self._attr = attr
        self._by_value = by_value

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        written = self._written
        if "__dataclass_fields__" not in written.__dict__:
            dataclasses.dataclass(frozen=True, eq=self._by_value, repr=False)(written)
        return getattr(written, self._attr)


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return isinstance(text, str) and (text.startswith(("ClassVar", "typing.ClassVar")))


def _make(cls: _C, by_value: bool) -> _C:
    base_fields: tuple[str, ...] = getattr(cls, "_fields", ())
    positional: list[str] = list(getattr(cls, "__match_args__", ()))  # the fields `__init__` takes by position
    keyword_only = False
    own: list[str] = []
    shown: list[str] = list(getattr(cls, "_repr_fields", ()))
    namespace = dict(cls.__dict__)
    for name, annotation in inspect.get_annotations(cls).items():
        if _is_classvar(annotation):
            continue
        if annotation in _KW_ONLY_NAMES or annotation is dataclasses.KW_ONLY:
            keyword_only = True
            continue
        default = namespace.pop(name, dataclasses.MISSING)  # a default is the shadow's; here it is __init__'s
        spec = default if isinstance(default, dataclasses.Field) else None
        own.append(name)
        if spec is None or spec.repr:
            shown.append(name)
        if not keyword_only and (spec is None or spec.init):
            positional.append(name)
    for name in ("__dict__", "__weakref__"):
        namespace.pop(name, None)
    namespace.update({
        "__qualname__": cls.__qualname__, "__slots__": tuple(own), "__match_args__": tuple(positional),
        "_fields": base_fields + tuple(own), "_repr_fields": tuple(shown),
        "__dataclass_fields__": _DataclassView(cls, "__dataclass_fields__", by_value),
        "__dataclass_params__": _DataclassView(cls, "__dataclass_params__", by_value),
    })
    if by_value:
        namespace["__eq__"], namespace["__hash__"] = _by_value(base_fields + tuple(own))
    made: Any = type(cls)(cls.__name__, cls.__bases__, namespace)
    return made  # type: ignore[no-any-return]


def _by_value(fields: tuple[str, ...]) -> tuple[Any, Any]:
    """`__eq__` and `__hash__` over `fields`, as a frozen dataclass's: equal when of one class and equal fields."""
    values = attrgetter(*fields, fields[0])  # two names at least, so it always gives a tuple

    def __eq__(self: object, other: object) -> bool:
        return values(self) == values(other) if other.__class__ is self.__class__ else NotImplemented

    def __hash__(self: object) -> int:
        return hash(values(self))

    return __eq__, __hash__


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen(cls: _C) -> _C:
    """A frozen class of slots whose instances compare and hash by their fields' values (as a frozen dataclass's).

    The class derives from `Frozen`, declares its fields as a dataclass does (annotations, defaults,
    `dataclasses.field(init=False, repr=False)`, `KW_ONLY`) and writes its own `__init__` that sets every
    field with `object.__setattr__`; `tests/core/test_frozen.py` holds each one to the dataclass it stands for.
    """
    return _make(cls, by_value=True)


@dataclass_transform(frozen_default=True, eq_default=False, field_specifiers=(dataclasses.field,))
def frozen_identity(cls: _C) -> _C:
    """As `frozen`, but instances compare and hash by identity (a step is one event, however alike two are)."""
    return _make(cls, by_value=False)
