"""Identities of tool calls: canonical and ordered ones computed once per call, the others on demand.

`canonical` and `ordered` are on every `ToolCall`. The three modes that one system each uses
(`ordered_js`, `top_sorted_js`, `sorted_typed`, PRESETS.md) are computed only by the engines of the
policies that ask for them, through `IDENTITIES`, so a call pays nothing for modes nobody reads.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Callable, Hashable, Mapping
from json.encoder import encode_basestring as _encode_str
from typing import Any, Final, Literal

from ._js import stringify, stringify_sorted

__all__ = [
    "FLAT_SAME_AS", "IDENTITIES", "IDENTITY_MODES", "IdentityMode", "canonical_args", "canonical_json", "fingerprint",
    "flat_canonical_json", "is_flat", "key_part", "ordered_args_json", "ordered_fingerprint", "ordered_js_json",
    "sorted_typed_json", "top_sorted_js_json",
]

_SEP = "\x1f"  # cannot appear in a tool name we accept, so "a" + "bc" never equals "ab" + "c"
# encoders built once: json.dumps with any option builds a new encoder on every call
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_ORDERED = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
# JSONEncoder.encode builds its C encoder anew on every call; canonical text comes from one built here (the
# same text at half the cost) with no cycle guard: what it is given is flat or freshly normalised
_c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)  # None without the C accelerator
_C_CANONICAL: Final = None if _c_make_encoder is None else _c_make_encoder(
    None, json.JSONEncoder().default, _encode_str, None, ":", ",", True, False, True)
_C_ORDERED: Final = None if _c_make_encoder is None else _c_make_encoder(  # the same, key order kept
    None, json.JSONEncoder().default, _encode_str, None, ":", ",", False, False, True)
# values that need no normalising (floats do: 1.0 is 1, NaN is refused); exact types, so no subclass slips by
_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})
_STR = frozenset({str})


def _normalise(value: Any) -> Any:
    """JSON-ready form of a YAML/JSON value: integral floats become ints, dates ISO strings."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"NaN and Infinity are not valid argument values (got {value!r})")
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    raise ValueError(f"unsupported argument value of type {type(value).__name__}: {value!r}")


def canonical_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments normalised for comparison (key order kept; sorting happens when serialising)."""
    normalised = _normalise(args)
    assert isinstance(normalised, dict)
    return normalised


def _flat(args: Mapping[str, Any]) -> bool:
    """Whether the arguments are a dict of string keys and plain scalars (most calls): JSON as they are."""
    # map + issuperset loop in C: this runs for every call built and in engines that ask per call
    return type(args) is dict and _PLAIN_SCALARS.issuperset(map(type, args.values())) and _STR.issuperset(
        map(type, args))


def canonical_json(args: Mapping[str, Any]) -> str:
    """Sorted keys, no insignificant whitespace, `1.0` == `1`, dates as ISO strings."""
    value = args if _flat(args) else _normalise(args)  # normalised: fresh containers, so no cycle either
    return "".join(_C_CANONICAL(value, 0)) if _C_CANONICAL is not None else _CANONICAL(value)


def flat_canonical_json(args: dict[str, Any]) -> str:
    """`canonical_json` of arguments the caller knows are flat (`is_flat`), without looking again."""
    return "".join(_C_CANONICAL(args, 0)) if _C_CANONICAL is not None else _CANONICAL(args)


def ordered_args_json(args: Mapping[str, Any], *, canonical: str | None = None) -> str:
    """The compact JSON of the arguments as written (Spacebot's identity): `1.0` and `1` differ.

    `canonical`, the arguments' canonical JSON when already known, is the answer for flat arguments
    whose keys are in sorted order (the two forms then coincide), so they are not serialised twice.
    """
    if _flat(args):
        if canonical is not None:
            keys = list(args)
            if keys == sorted(keys):
                return canonical
        return "".join(_C_ORDERED(args, 0)) if _C_ORDERED is not None else _ORDERED(args)
    return _ORDERED(_plain(args))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    return value


def fingerprint(tool: str, args: Mapping[str, Any]) -> str:
    """The canonical identity of a call: tool name plus canonical arguments."""
    return tool + _SEP + canonical_json(args)


def ordered_fingerprint(tool: str, args: Mapping[str, Any]) -> str:
    """The as-written identity of a call (`identity: ordered`)."""
    return tool + _SEP + ordered_args_json(args)


def ordered_js_json(args: Mapping[str, Any]) -> str:
    """`JSON.stringify` of parsed JSON (Gemini CLI, OpenCode): keys as JavaScript orders them at every level (array
    indices such as "1" first, ascending, then the rest as written), numbers as JavaScript writes them (`1.0` is
    `1`); core/_js.py has the details."""
    return stringify(args)


def top_sorted_js_json(args: Mapping[str, Any]) -> str:
    """Cline's parameter text, `JSON.stringify(params, sortedKeys)`: top-level keys in JavaScript's sort order,
    nested values as `ordered_js_json` writes them."""
    return stringify_sorted(args)


def sorted_typed_json(args: Mapping[str, Any]) -> str:
    """serde_json value equality (Goose): keys sorted at every level, `1.0` and `1` differ."""
    return json.dumps(_plain(args), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


IdentityMode = Literal["canonical", "ordered", "ordered_js", "top_sorted_js", "sorted_typed"]
IDENTITY_MODES: Final = ("canonical", "ordered", "ordered_js", "top_sorted_js", "sorted_typed")
# the argument text of each mode; `canonical` and `ordered` are also precomputed on every ToolCall
IDENTITIES: Final[Mapping[str, Callable[[Mapping[str, Any]], str]]] = {
    "canonical": canonical_json,
    "ordered": ordered_args_json,
    "ordered_js": ordered_js_json,
    "top_sorted_js": top_sorted_js_json,
    "sorted_typed": sorted_typed_json,
}

_SAFE_INTEGER: Final = 2**53
# in a key: a character JavaScript sorts otherwise than Python (a UTF-16 surrogate sorts below U+E000..U+FFFF)
# or escapes (a lone surrogate)
# (the ranges built with chr(): the compiled build's mypyc takes no surrogate in a string literal)
_JS_SORTS_OTHERWISE: Final = re.compile(f"[{chr(0xD800)}-{chr(0x10FFFF)}]")
_SURROGATE: Final = re.compile(f"[{chr(0xD800)}-{chr(0xDFFF)}]")


def is_flat(args: Mapping[str, Any]) -> bool:
    """Whether the arguments are flat (string keys, plain scalar values: most calls) and JavaScript writes them
    as Python does: no key that is all digits (an array index comes first in JavaScript) or that sorts
    otherwise, no integer beyond 2**53 (a double in JavaScript), no lone surrogate. On such arguments every
    mode writes the text of an identity the call already holds (`FLAT_SAME_AS`): engines test this first."""
    # the keys in C (map), most calls having a few ASCII names
    if not _flat(args) or any(map(str.isdigit, args)):
        return False
    if not all(map(str.isascii, args)) and any(_JS_SORTS_OTHERWISE.search(key) is not None for key in args):
        return False
    for value in args.values():
        kind = type(value)
        if kind is str:
            if not value.isascii() and _SURROGATE.search(value) is not None:
                return False
        elif kind is int and not -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
            return False
    return True


# On flat arguments (`is_flat`) these modes write exactly the text of an identity every ToolCall already holds
# (no float to tell `1.0` from `1`, no nested key order, nothing JavaScript writes otherwise), so an engine
# reads that instead of serialising the arguments again.
FLAT_SAME_AS: Final[Mapping[str, Literal["canonical", "ordered"]]] = {
    "ordered_js": "ordered",
    "top_sorted_js": "canonical",
    "sorted_typed": "canonical",
}


def key_part(value: Any) -> Hashable:
    """An argument value usable in an engine's dict key: scalars as they are, containers (rare in the
    arguments engines key on) by their canonical JSON."""
    if isinstance(value, (Mapping, list, tuple)):
        return canonical_json({"v": value})
    return value  # type: ignore[no-any-return]
