"""The frozen classes of the trace model (`core._frozen`): each hand-written `__init__` is the one `@dataclass`
would write for the class's fields, and the classes behave as frozen slotted dataclasses (assignment, repr,
equality, pickling, `dataclasses.replace`), without a dataclass view being built by importing or replaying."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_loopguard.core import _payloads, _steps
from pytest_loopguard.core._frozen import Frozen, frozen

CLASSES = sorted(
    {obj for module in (_payloads, _steps) for obj in vars(module).values()
     if isinstance(obj, type) and issubclass(obj, Frozen) and obj is not Frozen},
    key=lambda cls: cls.__name__,
)
ROOT = Path(__file__).resolve().parents[2]
STEP_KINDS = {cls for cls in CLASSES if issubclass(cls, _steps._StepFields)}


class _Mark:
    """A value no field would hold by default, telling the fields apart."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


def _marked(cls: type) -> tuple[Any, dict[str, _Mark]]:
    """An instance of `cls` whose every `__init__` argument is its own mark."""
    marks = {f.name: _Mark(f.name) for f in dataclasses.fields(cls) if f.init}
    positional = [marks[name] for name in cls.__match_args__]
    keywords = {name: mark for name, mark in marks.items() if name not in cls.__match_args__}
    return cls(*positional, **keywords), marks


def test_every_frozen_class_of_the_model_is_found() -> None:
    assert len(CLASSES) == 17 and len(STEP_KINDS) == 8  # 9 payloads, the steps' base and 7 kinds


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_init_takes_what_the_dataclass_would(cls: type) -> None:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]  # type: ignore[misc]
    fields = [f for f in dataclasses.fields(cls) if f.init]
    # a dataclass puts keyword-only fields after the others, whatever the class they come from
    fields = [f for f in fields if not f.kw_only] + [f for f in fields if f.kw_only]
    assert [p.name for p in params] == [f.name for f in fields]
    for param, f in zip(params, fields, strict=True):
        assert param.kind == (inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD)
        if f.default_factory is not dataclasses.MISSING:  # the hand-written one takes None for "make a new one"
            assert param.default is None
        else:
            assert param.default is (inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
        assert param.annotation == f.type or (f.default_factory is not dataclasses.MISSING
                                              and param.annotation == f"{f.type} | None")
    assert cls.__match_args__ == tuple(f.name for f in fields if not f.kw_only)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_init_sets_each_field_to_its_own_argument(cls: type) -> None:
    obj, marks = _marked(cls)
    for f in dataclasses.fields(cls):
        if f.init:
            assert getattr(obj, f.name) is marks[f.name], f.name
        else:  # a step's kind
            assert getattr(obj, f.name) == f.default
    assert cls._fields == tuple(f.name for f in dataclasses.fields(cls))
    defaults = [f for f in dataclasses.fields(cls) if f.default_factory is not dataclasses.MISSING]
    if defaults:  # a factory default is a new value for each instance
        a, _ = _marked(cls)
        b = dataclasses.replace(a, **{f.name: None for f in defaults})
        c = dataclasses.replace(a, **{f.name: None for f in defaults})
        for f in defaults:
            assert getattr(b, f.name) == f.default_factory() and getattr(b, f.name) is not getattr(c, f.name)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_an_instance_is_frozen_and_reads_pickles_and_copies_as_a_dataclass(cls: type) -> None:
    obj, _ = _marked(cls)
    for f in dataclasses.fields(cls):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, f.name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(obj, f.name)
    with pytest.raises(AttributeError):
        obj.__dict__  # noqa: B018  # slots only
    shown = ", ".join(f"{f.name}={getattr(obj, f.name)!r}" for f in dataclasses.fields(cls) if f.repr)
    assert repr(obj) == f"{cls.__qualname__}({shown})"
    assert dataclasses.is_dataclass(obj) and dataclasses.fields(obj) == dataclasses.fields(cls)
    plain = _marked(cls)[0]  # marks pickle by value, so compare field by field
    for back in (pickle.loads(pickle.dumps(plain)), copy.deepcopy(plain), copy.copy(plain)):
        assert type(back) is cls
        assert [repr(getattr(back, n)) for n in cls._fields] == [repr(getattr(plain, n)) for n in cls._fields]
    moved = dataclasses.replace(obj)
    assert type(moved) is cls and all(getattr(moved, n) is getattr(obj, n) for n in cls._fields)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_values_compare_by_fields_and_steps_by_identity(cls: type) -> None:
    a, marks = _marked(cls)
    b = dataclasses.replace(a)
    if cls in STEP_KINDS:
        assert a != b and a == a and hash(a) != hash(b)
        return
    assert a == b and hash(a) == hash(b)
    other = dataclasses.replace(a, **{next(iter(marks)): _Mark("other")})
    assert a != other
    assert cls.__dataclass_params__.eq and cls.__dataclass_params__.frozen


def test_the_decorator_keeps_classvars_kw_only_and_init_false_apart() -> None:
    @frozen
    class Point(Frozen):
        x: int
        _: dataclasses.KW_ONLY
        y: int = 2
        z: int = dataclasses.field(default=0, init=False, repr=False)
        unit: Any = None
        scale: ClassVar[int] = 10

        def __init__(self, x: int, *, y: int = 2, unit: Any = None) -> None:
            object.__setattr__(self, "x", x)
            object.__setattr__(self, "y", y)
            object.__setattr__(self, "z", 0)
            object.__setattr__(self, "unit", unit)

    p = Point(1, unit="m")
    assert Point._fields == ("x", "y", "z", "unit") and Point.__match_args__ == ("x",)
    assert repr(p).endswith(".<locals>.Point(x=1, y=2, unit='m')") and p.scale == Point.scale == 10
    assert Point.__slots__ == ("x", "y", "z", "unit")  # type: ignore[attr-defined]
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y", "z", "unit"]
    assert dataclasses.replace(p, y=5) == Point(1, y=5, unit="m")


def test_importing_loading_and_replaying_build_no_dataclass_view() -> None:
    # the view costs what dataclasses cost at import; only code that asks for fields() or replace() pays it
    script = """
import pytest_loopguard
from pytest_loopguard import Guard, Session, load_file, replay
from pytest_loopguard.core import _payloads, _steps
from pytest_loopguard.core._frozen import Frozen
from pathlib import Path
for path in sorted(Path("traces").rglob("*.jsonl"))[:10] + sorted(Path("traces/loop_guard").glob("*.yaml"))[:20]:
    for trace in load_file(path):
        replay(trace, "default")
built = [cls.__name__ for m in (_payloads, _steps) for cls in vars(m).values()
         if isinstance(cls, type) and issubclass(cls, Frozen) and cls is not Frozen
         and "__dataclass_fields__" in vars(cls)["__dataclass_fields__"]._written.__dict__]
print(built)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
