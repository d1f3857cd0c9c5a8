"""One imported run as a trace mapping: steps in order, each call paired with its result by id and position.

The chat-style importers (OpenAI, Anthropic, OpenTelemetry) share this: a call is written where the model asked
for it and its result is filled in when it arrives, however late or out of order. A result whose call never
came and a call whose result never came are warnings, never failures; a reused call id pairs with the oldest
call of that id still waiting (position plus id), with a warning.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .base import ImportedRun, trace_name

__all__ = ["At", "RunBuilder", "content_text", "list_at", "mapping_at", "parse_arguments", "usage_tokens"]

At = tuple[int | None, int | str | None]  # (row, index): a step's place in its source file
NOWHERE: Final[At] = (None, None)
ANONYMOUS: Final = ""  # the pairing key of calls that carry no id (OpenAI's legacy function_call)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def mapping_at(value: Any, key: str) -> Mapping[str, Any]:
    """`value[key]` when `value` is a mapping and that entry is one; else an empty mapping (logs vary)."""
    found = value.get(key) if isinstance(value, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def list_at(value: Any, key: str) -> list[Any]:
    """`value[key]` when `value` is a mapping and that entry is a list; else an empty list."""
    found = value.get(key) if isinstance(value, Mapping) else None
    return found if isinstance(found, list) else []


def parse_arguments(raw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A call's arguments as a mapping, plus `x-` fields keeping the raw text and the parse error when invalid.

    Models do not always write valid JSON (the OpenAI SDK says so); the call stays a call with no arguments.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, {}
    if isinstance(raw, Mapping):
        return dict(raw), {}
    if not isinstance(raw, str):
        return {}, {"x-arguments-raw": raw, "x-arguments-error": f"expected a JSON object, got {type(raw).__name__}"}
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return {}, {"x-arguments-raw": raw, "x-arguments-error": f"invalid JSON: {exc.msg} at char {exc.pos}"}
    except ValueError as exc:  # NaN / Infinity, which a trace cannot hold
        return {}, {"x-arguments-raw": raw, "x-arguments-error": f"invalid JSON: {exc}"}
    if not isinstance(value, dict):
        kind = "array" if isinstance(value, list) else type(value).__name__
        return {}, {"x-arguments-raw": raw, "x-arguments-error": f"expected a JSON object, got {kind}"}
    return value, {}


def content_text(content: Any, unmapped: list[str] | None = None, where: str = "") -> str:
    """The text of a message or result content: a string, or a list of parts whose text parts are joined.

    Non-text parts (images, files) have no place in a trace; each kind is noted once in `unmapped`.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, Sequence):
        return json.dumps(content, default=str)
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            text = part.get("text", part.get("content"))
            if isinstance(text, str):
                texts.append(text)
            elif unmapped is not None:
                note = f"{part.get('type', 'untyped')} content part{where}"
                if note not in unmapped:
                    unmapped.append(note)
    return "\n".join(texts)


def usage_tokens(usage: Any, input_key: str, output_key: str) -> dict[str, int]:
    """`input_tokens`/`output_tokens` of an `llm` step from a usage mapping (absent or invalid counts left out)."""
    tokens: dict[str, int] = {}
    if not isinstance(usage, Mapping):
        return tokens
    for source_key, key in ((input_key, "input_tokens"), (output_key, "output_tokens")):
        value = usage.get(source_key)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            tokens[key] = value
    return tokens


class RunBuilder:
    """Collects one run's steps; `call` and `result` do the pairing, `build` reports what stayed unpaired."""

    def __init__(self, file: str, run_id: str, *, origin: str) -> None:
        self.file = file
        self.run_id = run_id
        self.origin = origin
        self.steps: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.unmapped: list[str] = []
        self.model: str | None = None
        self._waiting: dict[str, deque[dict[str, Any]]] = {}
        self._ids: set[str] = set()

    def _add(self, step: dict[str, Any], at: At, agent: str | None) -> dict[str, Any]:
        if agent:
            step["agent"] = agent
        row, index = at
        source: dict[str, Any] = {"file": self.file}
        if row is not None:
            source["row"] = row
        if index is not None:
            source["index"] = index
        step["source"] = source
        self.steps.append(step)
        return step

    def message(
        self,
        text: str,
        *,
        role: str = "user",
        origin: str | None = None,
        name: str | None = None,
        at: At = NOWHERE,
        agent: str | None = None,
    ) -> None:
        body: dict[str, Any] = {"role": role, "text": text}
        if origin is not None:
            body["origin"] = origin
        step: dict[str, Any] = {"message": body}
        if name and origin == "agent":
            body["name"] = name
        elif name:  # the format's `name` says which agent spoke; a person's or system's name is kept aside
            step["x-name"] = name
        self._add(step, at, agent)

    def llm(
        self,
        *,
        tokens: Mapping[str, int] | None = None,
        text: str = "",
        error: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        at: At = NOWHERE,
        agent: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = dict(tokens or {})
        if error:
            body["error"] = error
        if text:
            body["text"] = text
        step: dict[str, Any] = {"llm": body, **(extensions or {})}
        return self._add(step, at, agent)

    def call(
        self,
        call_id: str | None,
        tool: str,
        args: Mapping[str, Any],
        *,
        extensions: Mapping[str, Any] | None = None,
        result: Mapping[str, Any] | None = None,
        at: At = NOWHERE,
        agent: str | None = None,
    ) -> dict[str, Any]:
        """A tool call; without `result` it waits for `result(call_id, …)`."""
        step: dict[str, Any] = {"tool": tool or "unnamed", "args": dict(args)}
        if not tool:
            self.warnings.append(f"{self._at(at)}: a call without a tool name, imported as 'unnamed'")
        if call_id:
            step["x-call-id"] = call_id
        step.update(extensions or {})
        if result is not None:
            step["result"] = dict(result)
        self._add(step, at, agent)
        if result is None:
            key = call_id or ANONYMOUS
            if call_id and call_id in self._ids:
                self.warnings.append(
                    f"{self._at(at)}: call id {call_id!r} is reused; results pair with the oldest "
                    "waiting call of that id"
                )
            self._waiting.setdefault(key, deque()).append(step)
        if call_id:
            self._ids.add(call_id)
        return step

    def result(self, call_id: str | None, result: Mapping[str, Any], *, at: At = NOWHERE) -> bool:
        """Give the oldest waiting call of `call_id` its result; an orphan result is a warning (False)."""
        queue = self._waiting.get(call_id or ANONYMOUS)
        if not queue:
            what = f"call id {call_id!r}" if call_id else "no call id"
            self.warnings.append(f"{self._at(at)}: orphan result ({what}): no call waits for it; not imported")
            return False
        step = queue.popleft()
        step["result"] = dict(result)
        if at != NOWHERE:
            row, index = at
            # Where the result came from, beside the call's own pointer: results arrive later, in any order.
            step["x-result-source"] = {k: v for k, v in (("row", row), ("index", index)) if v is not None}
        return True

    def done(self, text: str, *, at: At = NOWHERE, agent: str | None = None) -> None:
        body: dict[str, Any] = {"text": text} if text else {}
        self._add({"done": body}, at, agent)

    def _at(self, at: At) -> str:
        row, index = at
        where = self.file
        if row is not None:
            where += f":{row}"
        if index is not None:
            where += f" item {index}"
        return where

    def build(self, **top: Any) -> ImportedRun:
        """The trace mapping; calls still waiting for a result are listed as warnings (they keep no result)."""
        for queue in self._waiting.values():
            for step in queue:
                call_id = step.get("x-call-id")
                named = f" (call id {call_id!r})" if call_id else ""
                self.warnings.append(f"run {self.run_id}: call {step['tool']}{named} has no result")
                step["x-result-missing"] = True
        self._waiting.clear()
        source: dict[str, Any] = {"kind": "imported", "origin": self.origin}
        if self.model:
            source["model"] = self.model
        trace: dict[str, Any] = {"loopguard": 1, "name": trace_name(self.run_id), "source": source}
        trace.update({k: v for k, v in top.items() if v is not None})
        trace["steps"] = self.steps
        return ImportedRun(self.run_id, trace, self.warnings, self.unmapped)
