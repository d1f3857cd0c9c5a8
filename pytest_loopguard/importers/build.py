"""`ImportedRunBuilder`: how importers write a trace mapping, so every format gets the same step shapes.

Each step carries `source: {file, row, index}` (the source-native index: a message, event or trajectory
position) so a step can be traced back to the log line it came from. Counts for the import table are
kept as steps are added, never recomputed by re-reading the mapping.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from typing import Any, Final

from ..core._limits import MAX_INT, MAX_SETTING
from ..core._safeload import parse_foreign_json
from ..errors import TraceError
from .base import ImportedRun, trace_name

__all__ = ["ImportedRunBuilder", "exit_code", "number_in_text", "obj", "parse_arguments", "result", "seq", "text_of"]


def __getattr__(name: str) -> Any:
    # the class's name until issue 18 (the pytest fixture's trace builder has that name): importer plugins
    # written against docs/import.md before then keep working, told the new name
    if name == "TraceBuilder":
        warnings.warn("pytest_loopguard.importers.build.TraceBuilder is now ImportedRunBuilder", DeprecationWarning,
                      stacklevel=2)
        return ImportedRunBuilder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: logs omit or null out any field."""
    return value if isinstance(value, dict) else {}


def seq(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def text_of(value: Any) -> str:
    """`value` when it is a string; None as ""; anything else as JSON (kept, never lost)."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False, default=str)


_NUMBER_TEXT = re.compile(r"-?\d{1,20}")  # 20 digits: past any count or id an importer keeps as a number


def number_in_text(value: Any, low: int = 0, high: int = MAX_INT) -> int | None:
    """A whole number a log writes as text (a regex's `-?\\d+`, a digit string) within [low, high], else None.

    Its length is checked before converting: `int()` refuses text of over 4,300 digits with a ValueError and
    `str.isdigit` admits digits `int()` does not take (`"¹"`), so a log's number read any other way is a crash
    waiting for a hostile log. Out of range is None too: a count or index past ±2^53 fits no trace field.
    """
    if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value):
        try:
            value = int(value)
        except ValueError:  # a digit `\d` matches and int() refuses (none known): not a number
            return None
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    return None


def exit_code(value: Any) -> int | None:
    """`value` (an integer, or its text) as an exit code: an integer a process can return (32 bits), else
    None, so that an absurd `Exit code 99999…` in a log is no exit code rather than a trace `validate` refuses."""
    return number_in_text(value, -(2**31), 2**31 - 1)


def result(text: str | None = None, *, exit_code: int | None = None, error: str | None = None,
           ok: bool | None = None) -> dict[str, Any]:
    """A result mapping with only the fields the source gave (a non-zero `exit_code` alone is a failure)."""
    r: dict[str, Any] = {}
    if ok is not None and error is None:
        r["ok"] = ok
    if error is not None:
        r["error"] = error
    if exit_code is not None:
        r["exit_code"] = exit_code
    if text is not None:
        r["text"] = text
    return r


def _failed(r: dict[str, Any] | None) -> bool:
    if r is None:
        return False
    if "error" in r or r.get("ok") is False:
        return True
    return "ok" not in r and bool(r.get("exit_code"))


def parse_arguments(raw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(args, x-keys) from a call's arguments: a mapping as is, a JSON object string parsed.

    Text that is not a JSON object keeps its raw form under `x-arguments` with the reason under
    `x-arguments-error`, and the call gets empty args (the engines still see the tool name).
    """
    if raw is None or raw == "":
        return {}, {}
    if isinstance(raw, dict):
        return raw, {}
    if isinstance(raw, str):
        try:
            value = parse_foreign_json(raw, expected="a JSON object of arguments")  # the one safe reader
        except TraceError as exc:
            return {}, {"x-arguments": raw, "x-arguments-error": exc.problem}
        if isinstance(value, dict):
            return value, {}
        return {}, {"x-arguments": raw, "x-arguments-error": f"expected a JSON object, got {type(value).__name__}"}
    return {}, {"x-arguments": raw, "x-arguments-error": f"expected a JSON object, got {type(raw).__name__}"}


class ImportedRunBuilder:
    """Accumulates one run's steps and header; `build()` returns the `ImportedRun`."""

    def __init__(self, run_id: str, *, file: str, row: int | None = None, agent: str | None = None,
                 model: str | None = None, description: str = "") -> None:
        self.run_id = run_id
        self.file = file
        self.row = row
        self.source: dict[str, Any] = {"kind": "imported", "origin": file}
        if agent:
            self.source["agent"] = agent
        if model:
            self.source["model"] = model
        self.description = description
        self.header_x: dict[str, Any] = {}
        self.steps: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.unmapped: list[str] = []
        self.counts: Counter[str] = Counter()

    # ---- steps ------------------------------------------------------------------------------------
    def _add(self, step: dict[str, Any], index: int | str | None, agent: str | None,
             x: dict[str, Any] | None) -> dict[str, Any]:
        if agent:
            step["agent"] = agent
        step["source"] = {"file": self.file, "row": self.row, "index": index}
        if x:
            step.update({k if k.startswith("x-") else f"x-{k}": v for k, v in x.items()})
        self.steps.append(step)
        return step

    def tool(self, tool: str, args: dict[str, Any], *, index: int | str | None,
             result: dict[str, Any] | None = None, agent: str | None = None,
             x: dict[str, Any] | None = None) -> dict[str, Any]:
        """A tool call (its result may be set later with `set_result`, or it may be marked `not_run`)."""
        self.counts["calls"] += 1
        step: dict[str, Any] = {"tool": tool, "args": args}
        if result is not None:
            step["result"] = result
        return self._add(step, index, agent, x)

    def set_result(self, step: dict[str, Any], r: dict[str, Any]) -> None:
        for earlier in ("denied", "cancelled"):
            if step.pop(earlier, None) is not None:
                self.counts[earlier] -= 1
        step["result"] = r

    def not_run(self, step: dict[str, Any], how: str, reason: str, *, by: str | None = None) -> None:
        """Mark a call that never ran: `how` is `denied` (a person or a permission rule refused it; `by` is
        `user` or `rule`) or `cancelled` (another call of its batch failed first). It keeps no result."""
        if how not in ("denied", "cancelled"):
            raise ValueError(f"not_run: expected 'denied' or 'cancelled', got {how!r}")
        if how == "cancelled" and by is not None:
            raise ValueError("not_run: only a denied call names who denied it")
        step.pop("result", None)
        for earlier in ("denied", "cancelled"):
            if step.pop(earlier, None) is not None:
                self.counts[earlier] -= 1
        body: dict[str, Any] = {"reason": reason or how}
        if by is not None:
            body["by"] = by
        step[how] = body
        self.counts[how] += 1

    def compacted(self, *, index: int | str | None, trigger: str | None = None, tokens_before: int | None = None,
                  text: str | None = None, agent: str | None = None,
                  x: dict[str, Any] | None = None) -> dict[str, Any]:
        """The log's own compaction event: the real agent compacted its context here (`trigger`: `auto` or
        `manual`; `tokens_before`: the context's size before; `text`: the summary that replaced it)."""
        self.counts["compacted"] += 1
        body: dict[str, Any] = {}
        if trigger is not None:
            body["trigger"] = trigger
        if isinstance(tokens_before, int) and not isinstance(tokens_before, bool) and tokens_before >= 0:
            body["tokens_before"] = tokens_before
        if text is not None:
            body["text"] = text
        return self._add({"compacted": body}, index, agent, x)

    def llm(self, *, index: int | str | None, input_tokens: int | None = None,
            output_tokens: int | None = None, error: str | None = None, text: str | None = None,
            agent: str | None = None, x: dict[str, Any] | None = None) -> dict[str, Any]:
        """A model call; `text` is what the model wrote besides its calls (it enters the context view)."""
        body = _usage(input_tokens, output_tokens, error)
        if text:
            body["text"] = text
        return self._add({"llm": body}, index, agent, x)

    def rejected(self, reason: str, *, index: int | str | None, text: str | None = None,
                 input_tokens: int | None = None, output_tokens: int | None = None,
                 agent: str | None = None, x: dict[str, Any] | None = None) -> dict[str, Any]:
        """A model turn the harness refused: counted as a call position (labels.yaml's convention)."""
        self.counts["rejected"] += 1
        body: dict[str, Any] = {"reason": reason}
        if text is not None:
            body["text"] = text
        usage = _usage(input_tokens, output_tokens, None)
        if usage:
            body["llm"] = usage
        return self._add({"rejected": body}, index, agent, x)

    def message(self, role: str, text: str, *, index: int | str | None, origin: str | None = None,
                name: str | None = None, agent: str | None = None,
                x: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"role": role, "text": text}
        if origin is not None:
            body["origin"] = origin
        if name is not None:
            body["name"] = name
        self.counts[f"messages.{origin or role}"] += 1
        return self._add({"message": body}, index, agent, x)

    def done(self, *, index: int | str | None, text: str = "", success: bool | None = None,
             agent: str | None = None, x: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"text": text}
        if success is not None:
            body["success"] = success
        return self._add({"done": body}, index, agent, x)

    # ---- bookkeeping ------------------------------------------------------------------------------
    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def skip(self, what: str) -> None:
        """Something in the source with no place in the trace (kept out; listed in the import table)."""
        self.unmapped.append(what)

    def _bound_numbers(self) -> None:
        """Leave out (with a warning) each number a step holds past what a trace holds there."""
        for n, step in enumerate(self.steps):
            for path, keys, low, high in _BOUNDED:
                body: Any = step
                for part in path:
                    body = body.get(part) if isinstance(body, dict) else None
                if not isinstance(body, dict):
                    continue
                for key in keys:
                    value = body.get(key)
                    if isinstance(value, int) and not isinstance(value, bool) and not low <= value <= high:
                        del body[key]
                        field = ".".join((*path, key))
                        # not the value itself: str() of an integer of over 4,300 digits raises
                        self.warn(f"step {n + 1}: {field} is past what a trace holds ({low}..{high}): left out")

    def build(self) -> ImportedRun:
        trace: dict[str, Any] = {"loopguard": 1, "name": trace_name(self.run_id)}
        if self.description:
            trace["description"] = self.description
        trace["source"] = self.source
        # facts the source did not have (None) are left out rather than written as nulls
        trace.update({k if k.startswith("x-") else f"x-{k}": v for k, v in self.header_x.items() if v is not None})
        trace["steps"] = self.steps
        self._bound_numbers()
        failed = sum(1 for s in self.steps if "tool" in s and _failed(s.get("result")))
        counts = Counter(self.counts)
        counts["failed"] = failed
        return ImportedRun(self.run_id, trace, self.warnings, self.unmapped, counts)


# Numbers a trace bounds (io/_spec.py), by where they sit in a step: a log may hold any integer there (a
# mutated or corrupt one, `tokensIn: 10^20`), and one out of bounds would make the loader refuse the whole run
_BOUNDED: Final = (
    (("llm",), ("input_tokens", "output_tokens"), 0, MAX_SETTING),
    (("rejected", "llm"), ("input_tokens", "output_tokens"), 0, MAX_SETTING),
    (("result",), ("tokens", "bytes"), 0, MAX_SETTING),
    (("result",), ("exit_code",), -MAX_INT, MAX_INT),
    (("compacted",), ("tokens_before",), 0, MAX_SETTING),
    ((), ("t",), 0, MAX_INT),
)


def _usage(input_tokens: int | None, output_tokens: int | None, error: str | None) -> dict[str, Any]:
    u: dict[str, Any] = {}
    if isinstance(input_tokens, int) and input_tokens >= 0:
        u["input_tokens"] = input_tokens
    if isinstance(output_tokens, int) and output_tokens >= 0:
        u["output_tokens"] = output_tokens
    if error is not None:
        u["error"] = error
    return u
