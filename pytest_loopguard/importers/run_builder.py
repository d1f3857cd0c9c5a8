"""`RunBuilder`: an `ImportedRunBuilder` for chat-style logs, where a call's result arrives later, by call id.

The SDK-log importers (OpenAI, Anthropic, OpenTelemetry) share this: a call is written where the model asked
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

from .base import ImportedRun
from .build import ImportedRunBuilder, parse_arguments

__all__ = [
    "At", "RunBuilder", "content_text", "list_at", "mapping_at", "parse_arguments", "response_facts", "usage_tokens",
]

At = tuple[int | None, int | str | None]  # (JSONL row, index in the source): where a step came from
NOWHERE: Final[At] = (None, None)
ANONYMOUS: Final = ""  # the pairing key of calls that carry no id (OpenAI's legacy function_call)


def mapping_at(value: Any, key: str) -> Mapping[str, Any]:
    """`value[key]` when `value` is a mapping and that entry is one; else an empty mapping (logs vary)."""
    found = value.get(key) if isinstance(value, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def list_at(value: Any, key: str) -> list[Any]:
    """`value[key]` when `value` is a mapping and that entry is a list; else an empty list."""
    found = value.get(key) if isinstance(value, Mapping) else None
    return found if isinstance(found, list) else []


def content_text(content: Any, skipped: list[str] | None = None) -> str:
    """The text of a message or result content: a string, or a list of parts whose text parts are joined.

    Non-text parts (images, files) have no place in a trace; their types are appended to `skipped`.
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
            text = part.get("text", part.get("content"))  # OTel message parts say `content`
            if isinstance(text, str):
                texts.append(text)
            elif skipped is not None:
                skipped.append(str(part.get("type", "untyped")))
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


def response_facts(builder: RunBuilder, response: Mapping[str, Any], details: str) -> dict[str, Any]:
    """The `x-` facts an `llm` step keeps of one OpenAI response: its id and the reasoning tokens counted
    inside its output tokens (`usage.<details>.reasoning_tokens`); its model becomes the trace's model."""
    facts: dict[str, Any] = {}
    if isinstance(response.get("id"), str):
        facts["x-response-id"] = response["id"]
    reasoning = mapping_at(mapping_at(response, "usage"), details).get("reasoning_tokens")
    if isinstance(reasoning, int):
        facts["x-reasoning-tokens"] = reasoning
    builder.set_model(response.get("model"))
    return facts


class RunBuilder(ImportedRunBuilder):
    """An `ImportedRunBuilder` whose steps each name their JSONL row, and whose calls wait for results by call id."""

    def __init__(self, file: str, run_id: str, *, fmt: str) -> None:
        super().__init__(run_id, file=file)
        self.header_x["format"] = fmt
        self._waiting: dict[str, deque[dict[str, Any]]] = {}
        self._ids: set[str] = set()

    def _place(self, at: At) -> int | str | None:
        # ImportedRunBuilder writes `self.row` into each step's source; here every step may come from its own row.
        self.row = at[0]
        return at[1]

    def _where(self, at: At) -> str:
        row, index = at
        return self.file + (f":{row}" if row is not None else "") + (f" item {index}" if index is not None else "")

    def set_model(self, model: Any) -> None:
        if isinstance(model, str) and model:
            self.source["model"] = model

    def note(self, what: str, at: At = NOWHERE) -> None:
        """Something with no place in a trace; the import table groups these by `what`."""
        self.skip(f"{self._where(at)}: {what}")

    def text(self, content: Any, at: At, context: str) -> str:
        """`content_text` of `content`, noting each non-text part (`image_url content part in a user message`)."""
        skipped: list[str] = []
        text = content_text(content, skipped)
        for kind in skipped:
            self.note(f"{kind} content part in {context}", at)
        return text

    def say(self, role: str, text: str, *, at: At = NOWHERE, origin: str | None = None, name: Any = None,
            agent: str | None = None) -> None:
        """A message; a `name` of a person or system prompt is kept under `x-name` (the format's `name` says
        which *agent* spoke)."""
        if isinstance(name, str) and name and origin != "agent":
            self.message(role, text, index=self._place(at), origin=origin, agent=agent, x={"name": name})
        else:
            named = name if isinstance(name, str) and name else None
            self.message(role, text, index=self._place(at), origin=origin, name=named, agent=agent)

    def turn(self, *, tokens: Mapping[str, int] | None = None, text: str = "", error: str | None = None,
             x: Mapping[str, Any] | None = None, at: At = NOWHERE, agent: str | None = None) -> dict[str, Any]:
        """An `llm` step: one model turn, with its usage and the text it wrote beside its calls."""
        tokens = tokens or {}
        step = self.llm(index=self._place(at), input_tokens=tokens.get("input_tokens"),
                        output_tokens=tokens.get("output_tokens"), error=error, agent=agent, x=dict(x or {}))
        if text:
            step["llm"]["text"] = text
        return step

    def call(self, call_id: str | None, tool: str, args: Mapping[str, Any], *, x: Mapping[str, Any] | None = None,
             result: Mapping[str, Any] | None = None, at: At = NOWHERE, agent: str | None = None,
             awaits_result: bool = True) -> dict[str, Any]:
        """A tool call; without `result` it waits for `result(call_id, …)` unless `awaits_result` is false
        (a span is the whole call: no result content means a plain success)."""
        extra = dict(x or {})
        if call_id:
            extra["x-call-id"] = call_id
        if not tool:
            self.warn(f"{self._where(at)}: a call without a tool name, imported as 'unnamed'")
        step = self.tool(tool or "unnamed", dict(args), index=self._place(at), agent=agent, x=extra,
                         result=dict(result) if result is not None else None)
        if result is None and awaits_result:
            if call_id and call_id in self._ids:
                self.warn(f"{self._where(at)}: call id {call_id!r} is reused; results pair with the oldest "
                          "waiting call of that id")
            self._waiting.setdefault(call_id or ANONYMOUS, deque()).append(step)
        if call_id:
            self._ids.add(call_id)
        return step

    def waits_for(self, call_id: str | None) -> bool:
        """Whether a call of `call_id` still waits for its result."""
        return bool(self._waiting.get(call_id or ANONYMOUS))

    def result(self, call_id: str | None, result: Mapping[str, Any], *, at: At = NOWHERE) -> bool:
        """Give the oldest waiting call of `call_id` its result; an orphan result is a warning (False)."""
        queue = self._waiting.get(call_id or ANONYMOUS)
        if not queue:
            what = f"call id {call_id!r}" if call_id else "no call id"
            self.warn(f"{self._where(at)}: orphan result ({what}): no call waits for it; not imported")
            return False
        step = queue.popleft()
        self.set_result(step, dict(result))
        if at != NOWHERE:
            # Where the result came from, beside the call's own pointer: results arrive later, in any order.
            step["x-result-source"] = {k: v for k, v in zip(("row", "index"), at, strict=True) if v is not None}
        return True

    def finish(self, *, text: str = "", at: At = NOWHERE, agent: str | None = None) -> None:
        """The agent's final answer: a `done` step."""
        self.done(index=self._place(at), text=text, agent=agent)

    def build(self) -> ImportedRun:
        """The run; calls still waiting for a result are warnings and keep no result (`x-result-missing`)."""
        for queue in self._waiting.values():
            for step in queue:
                call_id = step.get("x-call-id")
                named = f" (call id {call_id!r})" if call_id else ""
                self.warn(f"run {self.run_id}: call {step['tool']}{named} has no result")
                step["x-result-missing"] = True
        self._waiting.clear()
        return super().build()
