"""JavaScript's semantics where they differ from Python's, for the presets that copy a JavaScript system.

Three differences decide verdicts (issue 24, item 6), each checked against Node (tests/core/test_js.py holds
Node's answers, tests/core/test_js_node.py asks a live `node`):

- Regular expressions: JavaScript's `\\s`, `\\d` and `.` (no `u` or `s` flag) match other characters than
  Python's (`\\s`: a BOM is space, U+001C..U+001F and U+0085 are not; `\\d`: ASCII digits only; `.`: not
  `\\r`, U+2028 or U+2029). `SPACE`, `DIGIT` and `ANY` are JavaScript's classes, to write patterns with.
- Lengths: a JavaScript string is UTF-16 code units, so an emoji is two characters. `utf16` gives a string
  with one Python character per code unit (a pair of surrogates for each character beyond U+FFFF), on which
  lengths, slices and positions are JavaScript's; `utf8_form` is what Node hashes or writes for it.
- `JSON.stringify` of parsed JSON: keys that are array indices ("0", "10"; not "01" or "-1") first, in
  ascending numeric order, then the others as written; numbers as JavaScript writes them (`1.0` is `1`,
  `1e21` is `1e+21`, `1e-7`, integers beyond 2**53 rounded to doubles, NaN and Infinity `null`); lone
  surrogates escaped. `stringify` writes that text, `stringify_sorted` the same with the top-level keys in
  `Array.prototype.sort` order (Cline's `JSON.stringify(params, Object.keys(params).sort())`).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Mapping
from json.encoder import encode_basestring as _encode_str
from typing import Any, Final

__all__ = [
    "ANY", "DIGIT", "SPACE", "is_array_index", "js_number", "js_sorted", "js_string", "stringify",
    "stringify_sorted", "utf8_form", "utf8_slices", "utf16",
]

# ---- regular expressions ---------------------------------------------------------------------------
# ECMAScript's WhiteSpace and LineTerminator (the Zs characters as Node 20 has them): `\s` without the `u` flag
SPACE: Final = "[\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
DIGIT: Final = "[0-9]"
ANY: Final = "[^\n\r\u2028\u2029]"  # `.` without the `s` flag: any code unit but a line terminator

# ---- UTF-16 ---------------------------------------------------------------------------------------
_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_LONE: Final = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def _pair(match: re.Match[str]) -> str:
    offset = ord(match.group()) - 0x10000
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


def utf16(text: str) -> str:
    """`text` as JavaScript holds it: one character per UTF-16 code unit (the text itself when it has no
    character beyond U+FFFF, as almost every text)."""
    if text.isascii() or _ASTRAL.search(text) is None:
        return text
    return _ASTRAL.sub(_pair, text)


def utf8_form(units: str) -> str:
    """What Node encodes as UTF-8 (to hash or to write) for a string of code units: each surrogate pair is its
    character, each lone surrogate U+FFFD. So two strings that differ only in lone surrogates hash alike."""
    if units.isascii() or _SURROGATE.search(units) is None:
        return units
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def utf8_slices(units: str, size: int) -> list[str]:
    """For each `size`-unit slice of `units` (from every position), a text equal for two slices exactly when
    Node's UTF-8 of them is (`utf8_form`, with a pair kept as its two surrogates): what a slice's hash tells."""
    fixed = _LONE.sub("\ufffd", units)  # a pair split at the front of `units` is cut at slice 0's edge anyway
    slices = [fixed[j:j + size] for j in range(len(units) - size + 1)]
    for j, piece in enumerate(slices):
        # the rest are pairs, whole in `fixed`: a slice's edge can cut one, leaving a lone surrogate
        if "\udc00" <= piece[0] <= "\udfff":
            piece = slices[j] = "\ufffd" + piece[1:]
        if "\ud800" <= piece[-1] <= "\udbff":
            slices[j] = piece[:-1] + "\ufffd"
    return slices


# ---- JSON.stringify -------------------------------------------------------------------------------
_SAFE_INTEGER: Final = 2**53  # every integer up to here is a double, and JavaScript writes its digits
_MAX_INDEX: Final = 2**32 - 2  # the largest array index
_ENCODE: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def is_array_index(key: str) -> bool:
    """Whether JavaScript orders `key` as an array index: the canonical decimal form of 0 .. 2**32 - 2."""
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) <= _MAX_INDEX


def _js_order(keys: list[str]) -> list[str]:
    """The order of an object's own keys: array indices ascending, then the others in creation order."""
    indices = [k for k in keys if is_array_index(k)]
    if not indices:
        return keys
    return sorted(indices, key=int) + [k for k in keys if not is_array_index(k)]


def js_sorted(keys: list[str]) -> list[str]:
    """`Array.prototype.sort` of strings: by UTF-16 code units (an emoji's surrogates sort before U+E000)."""
    if all(k.isascii() for k in keys):
        return sorted(keys)
    return sorted(keys, key=utf16)


def js_number(value: float) -> str:
    """Number::toString: the shortest digits that read back as `value` (Python's `repr` chooses the same),
    written plainly from 1e-6 up to below 1e21 and with an exponent outside; `-0` is `0`."""
    if math.isnan(value) or math.isinf(value):
        return "null"  # JSON.stringify writes a non-finite number as null
    if value == 0:
        return "0"
    if value < 0:
        return "-" + js_number(-value)
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    written = whole + fraction
    digits = written.lstrip("0")
    # value = 0.DIGITS x 10**point
    point = len(whole) + int(exponent or 0) - (len(written) - len(digits))
    digits = digits.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    power = point - 1
    head = digits if count == 1 else digits[0] + "." + digits[1:]
    return f"{head}e{'+' if power >= 0 else '-'}{abs(power)}"


def js_string(text: str) -> str:
    """QuoteJSONString: Python's escapes (the same ones) and each lone surrogate as `\\udxxx`."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return _encode_str(text)
    # a surrogate pair written as two characters is one character to JavaScript
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", _encode_str(text))


class _Awkward(Exception):
    """A value Python's encoder would write otherwise than JavaScript: the slow writer takes over."""


def _ready(value: Any) -> Any:
    """`value` with its keys in JavaScript's order and its numbers as JavaScript writes them, for Python's
    encoder; raises `_Awkward` for what that encoder would write otherwise (see `_write`)."""
    if isinstance(value, str):
        if not value.isascii() and _SURROGATE.search(value) is not None:
            raise _Awkward
        return value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
            return value
        raise _Awkward
    if isinstance(value, float):
        if value.is_integer() and -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
            return int(value)
        # a fraction from 1e-4 on: Python's repr and JavaScript write the same digits, no exponent either way
        if math.isfinite(value) and not value.is_integer() and abs(value) >= 1e-4:
            return value
        raise _Awkward
    if isinstance(value, Mapping):
        named = {str(k): v for k, v in value.items()}
        return {_ready_key(k): _ready(named[k]) for k in _js_order(list(named))}
    if isinstance(value, (list, tuple)):
        return [_ready(v) for v in value]
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return _ready(value.isoformat())
    raise ValueError(f"unsupported argument value of type {type(value).__name__}: {value!r}")


def _ready_key(key: str) -> str:
    if not key.isascii() and _SURROGATE.search(key) is not None:
        raise _Awkward
    return key


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(js_string(value))
    elif value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        if -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
            out.append(str(value))
        else:
            try:  # JSON.parse reads a long integer as the nearest double (both round to nearest, ties to even)
                out.append(js_number(float(value)))
            except OverflowError:  # beyond the largest double: Infinity, written null
                out.append("null")
    elif isinstance(value, float):
        out.append(js_number(value))
    elif isinstance(value, Mapping):
        named = {str(k): v for k, v in value.items()}
        _write_object(named, _js_order(list(named)), out)
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    elif isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        out.append(js_string(value.isoformat()))
    else:
        raise ValueError(f"unsupported argument value of type {type(value).__name__}: {value!r}")


def _write_object(value: Mapping[str, Any], keys: list[str], out: list[str]) -> None:
    out.append("{")
    for i, key in enumerate(keys):
        if i:
            out.append(",")
        out.append(js_string(key))
        out.append(":")
        _write(value[key], out)
    out.append("}")


def stringify(value: Any) -> str:
    """`JSON.stringify` of `value` read as JSON.parse would have built it (a mapping is an object)."""
    try:
        return _ENCODE(_ready(value))
    except _Awkward:
        out: list[str] = []
        _write(value, out)
        return "".join(out)


def stringify_sorted(args: Mapping[str, Any]) -> str:
    """`JSON.stringify(args, keys)` with `keys` the top-level keys in `Array.prototype.sort` order: the top
    level in that order (a replacer list orders, it does not hoist array indices), the values as `stringify`
    writes them (the replacer list would drop nested keys not in it: not modelled, PRESETS.md)."""
    named = {str(k): v for k, v in args.items()}
    keys = js_sorted(list(named))
    try:
        return _ENCODE({_ready_key(k): _ready(named[k]) for k in keys})  # a dict keeps the order it was built in
    except _Awkward:
        out: list[str] = []
        _write_object(named, keys, out)
        return "".join(out)
