"""One JSONL step line to a Step: a direct, checked construction for the common well-formed line, and the
loader's own checks (`safeload.parse_json`, then `traceio._step`) for anything else.

The fast path never reports an error itself: whenever a line is not plainly valid (a JSON error, a value out
of bounds, an unusual key or type) it gives up and the full checker reads the line again, so a bad line gets
exactly the one-line error the loader gives. What it accepts it accepts only after making every check the
loader makes on that shape: nesting depth, integers within ±MAX_INT, string length, finite argument numbers,
known keys, and each field's type and range.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

from .errors import TraceError
from .fingerprint import canonical_json
from .limits import MAX_INT, MAX_SETTING, MAX_STRING
from .model import LLMCall, Step, StepExpect, StepSource, ToolCall, ToolResult
from .safeload import parse_json, plain_value
from .traceio import _step, _step_source, parse_step_expect

__all__ = ["plain_step", "step_from_line"]


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN/Infinity: the full checker words the refusal


# one decoder for every line (json.loads builds a new one per call when given parse_constant)
_DECODE: Final = json.JSONDecoder(parse_constant=_no_constant).decode
_TOOL_KEYS: Final = frozenset({"tool", "args", "result", "t"})
_LLM_STEP_KEYS: Final = frozenset({"llm", "t"})
_RESULT_KEYS: Final = frozenset({"ok", "text", "error", "tokens", "bytes", "changed", "exit_code"})
_LLM_KEYS: Final = frozenset({"input_tokens", "output_tokens", "error", "text"})
_EMPTY: Final[dict[str, Any]] = {}
_NULLABLE: Final = frozenset({"expect", "agent", "source"})  # written as null: as if absent


def step_from_line(text: str, index: int, path: str | None, line: int) -> Step:
    """Step `index` from its JSONL line; a bad line raises the loader's `TraceError` (file, line, step, field)."""
    got = _fast(text, index)
    if type(got) is Step:
        return got
    # a plain mapping of another shape goes straight to the step reader; anything else is checked in full
    raw = got if got is not None else parse_json(text, path, line)
    try:
        return _step(raw, index)
    except TraceError as exc:
        raise exc.located(file=path, line=line) from None


def plain_step(text: str, index: int) -> Step | None:
    """Step `index` when its line is plainly valid, else None (never an error: the caller then reads the
    line, or the whole file, with the full checks, which word the error)."""
    got = _fast(text, index)
    if got is None or type(got) is Step:
        return got
    try:
        return _step(got, index)
    except TraceError:
        return None


def _fast(text: str, index: int) -> Step | dict[str, Any] | None:
    """The step, or the decoded mapping when only its shape is unusual (its values are within bounds, so
    the loader's value checks would pass), or None: the line needs the full checks."""
    # a decoded string is never longer than its line, so a line within MAX_STRING holds no string beyond it
    if len(text) > MAX_STRING:
        return None
    try:
        # the C decoder guards its own recursion (RecursionError, never a crash); too deep input falls back
        raw = _DECODE(text)
    except (ValueError, RecursionError):
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
                    out.source = _step_source(value, index)
            except TraceError:
                return None
        else:
            return None
    return out


def _tool(raw: dict[str, Any], index: int) -> Step | None:
    if (common := _common(raw, _TOOL_KEYS, index)) is None:
        return None
    tool = raw["tool"]
    t = raw.get("t")
    if type(tool) is not str or not tool or "\x1f" in tool or (
            t is not None and (type(t) is not int or not 0 <= t <= MAX_INT)):
        return None
    args = raw.get("args")
    if args is None:
        args = {}
    elif type(args) is not dict or not _plain_args(args):
        return None
    result = None
    r = raw.get("result")
    if r is not None and (result := _result(r)) is None:
        return None
    # positional: the step's fields in declaration order (index, kind, call, result, llm, phase, message,
    # done, expect, t, line, extensions, rejected, agent, source); keywords cost a dict per step
    call = ToolCall(tool, args, canonical_json(args))
    return Step(index, "tool", call, result, None, None, None, None, common.expect, t, None, common.extensions or {},
                None, common.agent, common.source)


def _plain_args(args: dict[str, Any]) -> bool:
    for value in args.values():
        kind = type(value)
        if kind is str or kind is bool or value is None:
            continue
        if kind is int:
            if not -MAX_INT <= value <= MAX_INT:
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif not plain_value(value, 3):  # a list or mapping inside the arguments (args is depth 2)
            return False
    return True


def _count(value: Any) -> bool:
    """A token or byte count as the loader takes it without conversion: absent, or an integer in range."""
    return value is None or (type(value) is int and 0 <= value <= MAX_SETTING)


def _result(r: Any) -> ToolResult | None:
    if type(r) is not dict or not _RESULT_KEYS.issuperset(r):
        return None
    error = r.get("error")
    if error is not None and type(error) is not str:
        return None
    code = r.get("exit_code")
    if code is not None and (type(code) is not int or not -MAX_INT <= code <= MAX_INT):
        return None
    if "ok" in r:
        ok = r["ok"]
        if type(ok) is not bool or (ok and error is not None):
            return None
    else:
        ok = error is None and not code
    text = r.get("text")
    if text is not None and type(text) is not str:
        return None
    tokens, size = r.get("tokens"), r.get("bytes")
    changed = r.get("changed", False)
    if not (_count(tokens) and _count(size)) or type(changed) is not bool:
        return None
    return ToolResult(ok, text, error, tokens, size, changed, code)


def _llm_step(raw: dict[str, Any], index: int) -> Step | None:
    if (common := _common(raw, _LLM_STEP_KEYS, index)) is None:
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
    if not (_count(input_tokens) and _count(output_tokens)) or (error is not None and type(error) is not str) or (
            text is not None and type(text) is not str):
        return None
    return Step(index, "llm", None, None, LLMCall(input_tokens, output_tokens, error, text), None, None, None,
                common.expect, t, None, common.extensions or {}, None, common.agent, common.source)
