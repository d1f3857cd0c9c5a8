"""The JSON Schema (draft 2020-12) of the trace format, generated from its one description (`_spec`).

The loader (`_read`) stays the authority — it also checks what a schema cannot say (a policy that resolves,
a clock that never runs backwards); the schema gives editors completion and early errors. It is built when
asked for (`loopguard schema`, about a millisecond), so there is no second copy of the format to keep in step.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from ._spec import SHAPES, STEP_KINDS, Field, Shape

__all__ = ["schema_text", "trace_schema"]

_EXTENSIONS: Final = {"^x-": True}
_ROOT: Final = "trace"


def trace_schema() -> dict[str, Any]:
    """The schema as a mapping: the trace's own mapping at the top, every other shape under `$defs`."""
    root = SHAPES[_ROOT]
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:pytest-loopguard:trace:1",
        "title": "pytest-loopguard trace, format version 1",
        "description": "One agent run, step by step (docs/trace-format.md). A JSONL file holds the same mapping: "
                       "its first line the header (every field but steps), each further line one step.",
        **_shape(root),
        "$defs": {name: _shape(shape) for name, shape in SHAPES.items() if name != _ROOT},
    }
    return schema


def schema_text() -> str:
    """The schema as JSON text, as `loopguard schema` writes it."""
    return json.dumps(trace_schema(), indent=2, ensure_ascii=False) + "\n"


def _shape(shape: Shape) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object"}
    if shape.name == "step":
        out["description"] = f"Exactly one of {', '.join(STEP_KINDS)}."
    required = [f.name for f in shape.fields if f.required]
    if required:
        out["required"] = required
    out["properties"] = {f.name: _field(f) for f in shape.fields}
    out["patternProperties"] = dict(_EXTENSIONS)
    out["additionalProperties"] = False
    if shape.name == "step":
        out["oneOf"] = [{"required": [kind]} for kind in STEP_KINDS]
        # a kind's other keys need the kind's own key (`args` only on a tool step)
        out["dependentRequired"] = {f.name: [kind] for kind, own in STEP_KINDS.items() for f in own[1:]}
    for rule in shape.rules:
        out.update(rule)
    return out


def _field(f: Field) -> dict[str, Any]:
    """One field's schema: its alternatives (a constant, choices, another shape, JSON types), null when a
    written null reads as absent, and its bounds."""
    out: dict[str, Any] = {}
    if f.description:
        out["description"] = f.description
    if f.const is not None:
        out["const"] = f.const
        return out
    options: list[dict[str, Any]] = []
    if f.choices:
        options.append({"enum": list(f.choices)})
    if f.true_ok:
        options.append({"const": True})
    if f.ref:
        options.append({"$ref": f"#/$defs/{f.ref}"})
    if f.types:
        options.append(_typed(f))
    if f.nullable:
        if len(options) == 1 and "type" in options[0]:
            options[0]["type"] = [*options[0]["type"], "null"]
        elif options:
            options.append({"type": "null"})
    for option in options:
        if isinstance(option.get("type"), list) and len(option["type"]) == 1:
            option["type"] = option["type"][0]
    if len(options) == 1:
        out.update(options[0])
    elif options:
        out["anyOf"] = options
    return out


def _typed(f: Field) -> dict[str, Any]:
    out: dict[str, Any] = {"type": list(f.types)}
    if f.non_empty:
        out["minLength"] = 1
    if f.pattern is not None:
        out["pattern"] = f.pattern
    if f.forbid:
        out["not"] = {"pattern": "|".join(map(re.escape, f.forbid))}
    if f.minimum is not None:
        out["minimum"] = f.minimum
    if f.maximum is not None:
        out["maximum"] = f.maximum
    if f.key_choices:
        out["propertyNames"] = {"enum": list(f.key_choices)}
        if f.items is not None:
            out["additionalProperties"] = _field(f.items)
    elif f.items is not None:
        out["items"] = _field(f.items)
    if f.max_items is not None:
        out["maxItems"] = f.max_items
    return out

