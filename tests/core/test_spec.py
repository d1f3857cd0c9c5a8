"""The trace format's one description (`io._spec`) against its readers: field by field, the loader and the JSON
Schema generated from the description accept and refuse the same values, the fast JSONL reader reads every
common step field itself, and a field added to one side only is caught."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_loopguard.core._model import Step
from pytest_loopguard.errors import TraceError
from pytest_loopguard.io import _faststep as faststep
from pytest_loopguard.io import _read, _schema, _spec
from pytest_loopguard.io._format import loads
from pytest_loopguard.io._spec import SHAPES, STEP_COMMON, STEP_KINDS, Field, Shape

BASE: dict[str, Any] = {"loopguard": 1, "name": "x", "steps": []}


def _with(**top: Any) -> dict[str, Any]:
    return {**BASE, **top}


# Where each shape sits in a trace: a function from the shape's mapping to a whole trace.
PLACES: dict[str, Callable[[Any], dict[str, Any]]] = {
    "trace": lambda m: {**BASE, **m},
    "task": lambda m: _with(task=m),
    "budget": lambda m: _with(task={"budget": m}),
    "source": lambda m: _with(source=m),
    "context": lambda m: _with(context=m),
    "step": lambda m: _with(steps=[m]),
    "result": lambda m: _with(steps=[{"tool": "a", "result": m}]),
    "llm": lambda m: _with(steps=[{"llm": m}]),
    "usage": lambda m: _with(steps=[{"rejected": {"reason": "r", "llm": m}}]),
    "message": lambda m: _with(steps=[{"message": m}]),
    "done": lambda m: _with(steps=[{"done": m}]),
    "rejected": lambda m: _with(steps=[{"rejected": m}]),
    "stepExpect": lambda m: _with(steps=[{"tool": "a", "expect": m}]),
    "runExpect": lambda m: _with(expect=m),
    "stepSource": lambda m: _with(steps=[{"tool": "a", "source": m}]),
    "denied": lambda m: _with(steps=[{"tool": "a", "denied": m}]),
    "cancelled": lambda m: _with(steps=[{"tool": "a", "cancelled": m}]),
    "blocked": lambda m: _with(steps=[{"tool": "a", "blocked": m}]),
    "compacted": lambda m: _with(steps=[{"compacted": m}]),
}
# The loader checks more than a schema can say: a policy must resolve (a preset that exists).
VALID_OVERRIDES: dict[tuple[str, str], list[Any]] = {("trace", "policy"): ["default", {}]}
# Where the loader is more lenient than the description, on purpose (kept as it always was): it reads any
# false value of `tags` (false, 0, "", {}) as no tags.
LENIENT: dict[tuple[str, str], tuple[Any, ...]] = {("trace", "tags"): (False, 0, "", {})}


def companions(shape: str, field: str, value: Any) -> dict[str, Any]:
    """The other fields a value needs (the shape's rules): a message from another agent names it, and only
    such a message has a name; a trace without steps is simulated."""
    if shape == "message" and ((field == "origin" and value == _spec.NAMED_ORIGIN)
                               or (field == "name" and isinstance(value, str) and value)):
        return {"origin": _spec.NAMED_ORIGIN, "name": "n", "role": "user"}
    if shape == "trace" and field == "steps" and value is None:
        return {"mode": "simulate"}  # only a simulated trace may leave its steps out
    return {}


def minimal(shape: Shape) -> dict[str, Any]:
    """The smallest valid mapping of a shape: each required field at its first valid value."""
    if shape.name == "step":
        return {"tool": "a"}  # a step needs its kind
    return {f.name: valid_values(f)[0] for f in shape.fields if f.required and f.name != "loopguard"}


def valid_values(f: Field) -> list[Any]:
    if f.const is not None:
        return [f.const]
    out: list[Any] = []
    if f.choices:
        out += [f.choices[0], f.choices[-1]]
    if f.true_ok:
        out.append(True)
    if f.ref:
        out.append(minimal(_spec.SHAPES[f.ref]))
    for kind in f.types:
        if kind == "string":
            out.append("a.b" if f.pattern else "s")
        elif kind == "integer":
            out += [f.minimum if f.minimum is not None else 0, *([f.maximum] if f.maximum is not None else [])]
        elif kind == "boolean":
            out += [True, False]
        elif kind == "object":
            out.append({f.key_choices[0]: valid_values(f.items)[0]} if f.key_choices and f.items else {})
        elif kind == "array":
            out += [[], *([[valid_values(f.items)[0]]] if f.items else [])]
    if f.nullable:
        out.append(None)
    return out


def invalid_values(f: Field) -> list[Any]:
    if f.const is not None:
        return [f.const + 1, None, "1"]
    out: list[Any] = [] if f.nullable else [None]
    if not (f.types or f.ref or f.choices):  # any value
        return out
    takes = set(f.types) | ({"object"} if f.ref else set()) | ({"string"} if f.choices else set())
    out += [v for kind, v in (("string", "s"), ("integer", 7), ("boolean", False), ("object", {"k": 1}),
                              ("array", [1])) if kind not in takes]
    if f.choices:
        out.append("no-such-choice")
    if f.ref:
        out.append({"no_such_key": 1})
    if "integer" in f.types:
        out += [v for v in ((f.minimum if f.minimum is not None else -(2**53)) - 1,
                            (f.maximum if f.maximum is not None else 2**53) + 1)]
    if "string" in f.types:
        out += [""] if f.non_empty else []
        out += [f"a{f.forbid[0]}b"] if f.forbid else []
        out += ["ab"] if f.pattern else []
    if f.key_choices:
        out.append({"no-such-key": 1})
    if f.items is not None and "array" in f.types:
        out.append([invalid_values(f.items)[0]])
    return out


def cases() -> Iterator[tuple[str, str]]:
    for name, shape in _spec.SHAPES.items():
        for f in shape.fields:
            yield name, f.name


def _place(shape: str, field: str, value: Any) -> dict[str, Any]:
    shape_spec = _spec.SHAPES[shape]
    if shape == "step":
        kind = next((k for k, own in STEP_KINDS.items() if field in (g.name for g in own)), None)
        base = {} if kind == field else {kind or "tool": "a"} if kind in (None, "tool") else {kind: None}
    else:
        base = minimal(shape_spec)
    return PLACES[shape]({**base, **companions(shape, field, value), field: value})


def loader_accepts(document: dict[str, Any]) -> bool:
    try:
        loads(json.dumps(document), fmt="json", path="t.json")
    except TraceError:
        return False
    return True


def disagreements(shape: str, field: str, validator: jsonschema.Draft202012Validator) -> list[str]:
    f = next(g for g in _spec.SHAPES[shape].fields if g.name == field)
    valid = VALID_OVERRIDES.get((shape, field), valid_values(f))
    out = []
    invalid = [v for v in invalid_values(f) if v not in LENIENT.get((shape, field), ())]
    for value, expected in [*((v, True) for v in valid), *((v, False) for v in invalid)]:
        document = _place(shape, field, value)
        by_schema, by_loader = validator.is_valid(document), loader_accepts(document)
        if not (by_schema == by_loader == expected):
            out.append(f"{shape}.{field} = {value!r}: spec says {expected}, schema {by_schema}, loader {by_loader}")
    return out


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_schema.trace_schema())


@pytest.mark.parametrize(("shape", "field"), list(cases()), ids=lambda x: x)
def test_loader_and_schema_agree_with_the_spec_on_every_field(shape: str, field: str,
                                                              validator: jsonschema.Draft202012Validator) -> None:
    assert disagreements(shape, field, validator) == []


def test_every_shape_has_a_place_in_a_trace() -> None:
    assert set(PLACES) == set(SHAPES)


def test_a_field_only_the_spec_has_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # the description (and so the schema) gains `result.retries`; the loader, built from the old keys, refuses it
    extra = Field("retries", ("integer",), minimum=0)
    result = _spec.SHAPES["result"]
    grown = Shape("result", (*result.fields, extra), result.rules)
    monkeypatch.setattr(_schema, "SHAPES", {**SHAPES, "result": grown})
    monkeypatch.setattr(_spec, "SHAPES", {**SHAPES, "result": grown})
    validator = jsonschema.Draft202012Validator(_schema.trace_schema())
    assert any("retries = 0" in d for d in disagreements("result", "retries", validator))


def test_a_field_only_the_loader_has_is_caught(monkeypatch: pytest.MonkeyPatch,
                                               validator: jsonschema.Draft202012Validator) -> None:
    # the loader's key list gains `ok2` by hand: it takes `result: {ok2: ...}` the schema refuses
    monkeypatch.setattr(_read, "RESULT_KEYS", (*_read.RESULT_KEYS, "ok2"))
    document = _place("result", "ok2", 7)
    assert loader_accepts(document) and not validator.is_valid(document)


@pytest.mark.parametrize("field", STEP_COMMON, ids=lambda f: f.name)
def test_the_fast_reader_reads_every_common_step_field(field: Field) -> None:
    # a tool or llm line carrying any common field at a valid value is built by the fast path, not sent back
    for value in valid_values(field):
        for kind in ('"tool": "a"', '"llm": {}'):
            line = f'{{{kind}, "{field.name}": {json.dumps(value)}}}'
            assert isinstance(faststep._fast(line, 0), Step), line


def test_the_fast_readers_key_sets_are_the_specs() -> None:
    common = {f.name for f in STEP_COMMON}
    # a call that never ran is rare: its keys are left to the step reader
    assert not faststep._TOOL_KEYS & set(_spec.NOT_RUN_KEYS)
    assert faststep._TOOL_KEYS | common | set(_spec.NOT_RUN_KEYS) == _spec.STEP_KEYS["tool"]
    assert faststep._LLM_STEP_KEYS | common == _spec.STEP_KEYS["llm"]
    assert faststep._NULLABLE | {"t"} == common
    assert set(_spec.RESULT_KEYS) == faststep._RESULT_KEYS and set(_spec.LLM_KEYS) == faststep._LLM_KEYS


def _read_source_keys() -> tuple[set[str], list[str]]:
    """The keys `_read` looks up by name (`m["k"]`, `m.get("k")`, `"k" in m`), and how each `_keys` check names
    its allowed keys."""
    tree = ast.parse(Path(_read.__file__).read_text(encoding="utf-8"))
    looked_up: set[str] = set()
    allowed: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            looked_up.add(node.slice.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and (
                node.args and isinstance(node.args[0], ast.Constant)):
            looked_up.add(node.args[0].value)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and isinstance(
                node.ops[0], ast.In | ast.NotIn) and isinstance(node.left.value, str):
            looked_up.add(node.left.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_keys":
            allowed.append(ast.unparse(node.args[1]))
    return {k for k in looked_up if isinstance(k, str) and k.isidentifier()}, allowed  # not "." in a value


def test_the_loader_reads_only_keys_the_spec_describes() -> None:
    looked_up, allowed = _read_source_keys()
    described = {f.name for shape in _spec.SHAPES.values() for f in shape.fields}
    assert looked_up - described == set()
    # every `_keys` check takes its list from the spec, never a list of its own
    from_spec = {name for name in dir(_spec) if name.endswith("_KEYS")}
    assert allowed and all(a in from_spec or a == "STEP_KEYS[kind]" or a == "keys" for a in allowed), allowed
