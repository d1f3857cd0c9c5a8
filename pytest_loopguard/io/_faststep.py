"""One JSONL step line to a Step: a direct, checked construction for the common well-formed line, and the
loader's own checks (`safeload.parse_json`, then `_read.read_step`) for anything else.

The fast path never reports an error itself: whenever a line is not plainly valid (a JSON error, a value out
of bounds, an unusual key or type) it gives up and the full checker reads the line again, so a bad line gets
exactly the one-line error the loader gives. What it accepts it accepts only after making every check the
loader makes on that shape: nesting depth, integers within ±MAX_INT, string length, finite argument numbers,
known keys, and each field's type and range.
"""

from __future__ import annotations

import json
import json.scanner
import math
import re
from collections.abc import Callable
from typing import Any, Final

from ..core._identity import canonical_json, flat_canonical_json
from ..core._limits import MAX_INT, MAX_SETTING, MAX_STRING
from ..core._model import (
    Step,
    StepExpect,
    StepSource,
    ToolCall,
    ToolResult,
)
from ..core._safeload import parse_json, plain_value
from ..errors import TraceError
from ._read import parse_step_expect, read_step, step_source
from ._spec import LLM_KEYS, NOT_RUN_KEYS, RESULT_KEYS, STEP_COMMON_KEYS, STEP_KEYS
from ._twins import new_llm, new_llm_step, new_result, new_tool_step

__all__ = ["plain_step", "plain_steps", "step_from_line"]


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN/Infinity: the full checker words the refusal


# one scanner for every line: JSONDecoder.decode adds two regex matches and a call around it, and
# json.loads builds a new decoder per call when given parse_constant
_make_scanner: Any = json.scanner.make_scanner  # typeshed types it as a class taking itself
_SCAN: Final[Callable[[str, int], tuple[Any, int]]] = _make_scanner(json.JSONDecoder(parse_constant=_no_constant))
_JSON_SPACE: Final = " \t\n\r"  # JSON's whitespace (str.isspace takes more)
# a `\uD...` escape. Most lines hold no backslash, which one memchr finds (`in` with one character); a line
# that does is searched for `\u` backwards, which tests the rare backslash first at each place (forwards tests
# the common `u`: twice the time), and only a line with one goes through the regex
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD]").search
# the keys read inline (a kind's own keys and `t`); the step's other keys go through `_common`, which knows
# each of STEP_COMMON_KEYS (tests/io/test_spec.py proves it reads every one)
_INLINE: Final = frozenset({"t"})
# a call that never ran (`denied`, `cancelled`: rare) is left to the step reader, so the common line pays nothing
_TOOL_KEYS: Final = STEP_KEYS["tool"] - set(STEP_COMMON_KEYS) - set(NOT_RUN_KEYS) | _INLINE
_LLM_STEP_KEYS: Final = STEP_KEYS["llm"] - set(STEP_COMMON_KEYS) | _INLINE
_RESULT_KEYS: Final = frozenset(RESULT_KEYS)
_LLM_KEYS: Final = frozenset(LLM_KEYS)
_EMPTY: Final[dict[str, Any]] = {}
_NULLABLE: Final = frozenset(STEP_COMMON_KEYS) - _INLINE  # each written as null: as if absent


def step_from_line(text: str, index: int, path: str | None, line: int) -> Step:
    """Step `index` from its JSONL line; a bad line raises the loader's `TraceError` (file, line, step, field)."""
    got = _fast(text, index)
    if got is not None and not isinstance(got, dict):
        return got
    # a plain mapping of another shape goes straight to the step reader; anything else is checked in full
    raw = got if got is not None else parse_json(text, path, line)
    try:
        return read_step(raw, index)
    except TraceError as exc:
        raise exc.located(file=path, line=line) from None


def plain_step(text: str, index: int) -> Step | None:
    """Step `index` when its line is plainly valid, else None (never an error: the caller then reads the
    line, or the whole file, with the full checks, which word the error)."""
    return _plain(_fast(text, index), index)


def plain_steps(text: str, start: int, max_steps: int) -> list[Step] | None:
    """The steps of the lines of `text` from offset `start` to its end, read in place (no line is cut out of the
    text), when every one is plainly valid, the lines hold no blank one and there are at most `max_steps`; else
    None (never an error: the caller then reads the file line by line, whose checks word the error)."""
    # one search for a surrogate escape in the whole text instead of one per line (`_fast`)
    if "\\u" in text and _SURROGATE_ESCAPE(text, start) is not None:
        return None
    steps: list[Step] = []
    end = len(text)
    pos = start
    while pos < end:
        stop = text.find("\n", pos)
        if stop == -1:
            stop = end
        index = len(steps)
        if stop - pos > MAX_STRING or index >= max_steps:
            return None
        step = _plain(_fast_at(text, pos, stop, index), index)
        if step is None:
            return None
        steps.append(step)
        pos = stop + 1
    return steps


def _plain(got: Step | dict[str, Any] | None, index: int) -> Step | None:
    """The step of a fast read (`_fast`, `_fast_at`): a mapping of an unusual shape read by the step reader; None
    where the line needs the full checks."""
    if got is None or not isinstance(got, dict):
        return got
    try:
        return read_step(got, index)
    except TraceError:
        return None


def _fast(text: str, index: int) -> Step | dict[str, Any] | None:
    """The step, or the decoded mapping when only its shape is unusual (its values are within bounds, so
    the loader's value checks would pass), or None: the line needs the full checks."""
    # a decoded string is never longer than its line, so a line within MAX_STRING holds no string beyond it
    # ... and a line with a surrogate escape may hold a lone one, which the full reader makes U+FFFD
    if len(text) > MAX_STRING or ("\\" in text and text.rfind("\\u") != -1 and _SURROGATE_ESCAPE(text)):
        return None
    return _fast_at(text, 0, len(text), index)


def _fast_at(text: str, pos: int, stop: int, index: int) -> Step | dict[str, Any] | None:
    """`_fast` of the line `text[pos:stop]`, read in place (its length and escapes already checked)."""
    try:
        # the C decoder guards its own recursion (RecursionError, never a crash); too deep input falls back,
        # and so does a line not starting with its value (StopIteration: leading space, or no value at all)
        raw, end = _SCAN(text, pos)
    except (StopIteration, ValueError, RecursionError):
        return None
    # a value that ends past its line spans lines (JSON's whitespace includes a newline); extra data after it
    if end > stop or (end != stop and text[end:stop].strip(_JSON_SPACE)):
        return None
    if type(raw) is not dict:
        return None
    if "tool" in raw:
        step = _tool(raw, index)
    elif "llm" in raw:
        step = _llm_step(raw, index)
    else:
        step = None
    if step is not None:
        return step
    return raw if plain_value(raw, 1) else None


class _Common:
    """The fields any step may carry (expectation, agent, source, `x-` extensions), read when present."""

    __slots__ = ("agent", "expect", "extensions", "source")

    def __init__(self) -> None:
        self.expect: StepExpect | None = None
        self.agent: str | None = None
        self.source: StepSource | None = None
        self.extensions: dict[str, Any] = {}


_NONE: Final = _Common()  # a step with only its kind's own keys: nothing else to read


def _common(raw: dict[str, Any], own: frozenset[str], index: int) -> _Common | None:
    """The step's other fields, each checked as the loader checks it; None when one is not plainly valid
    (the full checker then reads the line, in its own order, so its error is the one reported)."""
    if own.issuperset(raw):
        return _NONE
    out = _Common()
    for key, value in raw.items():
        if key in own or (value is None and key in _NULLABLE):
            continue
        if key.startswith("x-"):
            if not plain_value([value], 1):
                return None
            out.extensions[key] = value
        elif key == "agent":
            if type(value) is not str or not value:
                return None
            out.agent = value
        elif key == "expect" or key == "source":
            if not plain_value([value], 1):
                return None
            try:
                if key == "expect":
                    out.expect = parse_step_expect(value, index)
                else:
                    out.source = step_source(value, index)
            except TraceError:
                return None
        else:
            return None
    return out


def _tool(raw: dict[str, Any], index: int) -> Step | None:
    common = _NONE if _TOOL_KEYS.issuperset(raw) else _common(raw, _TOOL_KEYS, index)
    if common is None:
        return None
    tool = raw["tool"]
    t = raw.get("t")
    if type(tool) is not str or not tool or "\x1f" in tool or (
            t is not None and (type(t) is not int or not 0 <= t <= MAX_INT)):
        return None
    args = raw.get("args")
    if args is None:
        args = {}
        canonical = "{}"
    elif type(args) is not dict:
        return None
    else:
        flat = _flat_args(args)
        if flat is None:
            return None
        # flat arguments are written as they are (their keys are strings: they were JSON keys)
        canonical = flat_canonical_json(args) if flat else canonical_json(args)
    result = None
    r = raw.get("result")
    if r is not None and (result := _result(r)) is None:
        return None
    return new_tool_step(index, ToolCall(tool, args, canonical), result, common.expect, t,
                          common.extensions or {}, common.agent, common.source)


def _flat_args(args: dict[str, Any]) -> bool | None:
    """True when every argument is a plain scalar (str, int, bool, null: canonical JSON writes them as they
    are), False when some are floats, lists or mappings within bounds, None when one is out of bounds."""
    flat = True
    for value in args.values():
        kind = type(value)
        if kind is str or kind is bool or value is None:
            continue
        if kind is int:
            if not -MAX_INT <= value <= MAX_INT:
                return None
            continue
        flat = False
        if kind is float:
            if not math.isfinite(value):
                return None
        elif not plain_value(value, 3):  # a list or mapping inside the arguments (args is depth 2)
            return None
    return flat


def _result(r: Any) -> ToolResult | None:
    if type(r) is not dict or not _RESULT_KEYS.issuperset(r):
        return None
    error = r.get("error")
    code = r.get("exit_code")
    text = r.get("text")
    tokens = r.get("tokens")
    size = r.get("bytes")
    changed = r.get("changed", False)
    if (error is not None and type(error) is not str) or (text is not None and type(text) is not str) or (
            code is not None and (type(code) is not int or not -MAX_INT <= code <= MAX_INT)) or (
            type(changed) is not bool):
        return None
    # token and byte counts as the loader takes them without conversion: absent, or an integer within
    # [0, MAX_SETTING] (inline: this runs for most lines)
    if (tokens is not None and (type(tokens) is not int or not 0 <= tokens <= MAX_SETTING)) or (
            size is not None and (type(size) is not int or not 0 <= size <= MAX_SETTING)):
        return None
    ok = r.get("ok")
    if ok is None:
        if "ok" in r:  # `ok: null` is not a boolean: the loader words that
            return None
        ok = error is None and not code
    elif type(ok) is not bool or (ok and error is not None):
        return None
    return new_result(ok, text, error, tokens, size, changed, code)


def _llm_step(raw: dict[str, Any], index: int) -> Step | None:
    common = _NONE if _LLM_STEP_KEYS.issuperset(raw) else _common(raw, _LLM_STEP_KEYS, index)
    if common is None:
        return None
    t = raw.get("t")
    m = raw["llm"]
    if m is None:
        m = _EMPTY
    if (t is not None and (type(t) is not int or not 0 <= t <= MAX_INT)) or type(m) is not dict or (
            not _LLM_KEYS.issuperset(m)):
        return None
    input_tokens, output_tokens = m.get("input_tokens"), m.get("output_tokens")
    error, text = m.get("error"), m.get("text")
    # counts inline, as in _result
    if (input_tokens is not None and (type(input_tokens) is not int or not 0 <= input_tokens <= MAX_SETTING)) or (
            output_tokens is not None and (type(output_tokens) is not int or not 0 <= output_tokens <= MAX_SETTING)
    ) or (error is not None and type(error) is not str) or (text is not None and type(text) is not str):
        return None
    return new_llm_step(index, new_llm(input_tokens, output_tokens, error, text), common.expect, t,
                         common.extensions or {}, common.agent, common.source)
