"""OpenHands V1 (software-agent-sdk) conversations: a folder of `event-00000-<id>.json` files, one event each.

Events are discriminated by `kind` (FORMATS.md §6): `ActionEvent` is a call (`tool_name`, the model's
`tool_call` arguments, else the `action` object), `ObservationEvent` its result (paired by `action_id`,
else `tool_call_id`), `UserRejectObservation` and `AgentErrorEvent` failed results, `MessageEvent` and
`SystemPromptEvent` messages; a `finish` action ends the run. Actions sharing an `llm_response_id` are
one model turn (one `llm` step before them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from ..core._safeload import parse_foreign_json, read_text
from ..errors import TraceError
from .base import ImportedRun, Importer, Source
from .build import ImportedRunBuilder, obj, parse_arguments, result

__all__ = ["OpenHandsV1"]

EVENT_FILE = re.compile(r"^event-(\d{5})-(.+)\.json$")
FINISH_TOOL = "finish"


def _text(content: Any) -> str:
    """Text of a V1 content value: a string, or a list of `{type: text, text}` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _events(folder: Path, name: str) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for path in sorted(folder.iterdir()):
        m = EVENT_FILE.match(path.name)
        if not m:
            continue
        text = read_text(path)  # a regular, bounded, UTF-8 file (TraceError otherwise)
        event = parse_foreign_json(text, f"{name}/{path.name}", expected="one OpenHands event object")
        if not isinstance(event, dict) or "kind" not in event:
            raise TraceError("expected an OpenHands event: a JSON object with a 'kind'", file=f"{name}/{path.name}",
                             field="kind")
        out.append((int(m.group(1)), event))
    return out


class OpenHandsV1(Importer):
    name: ClassVar[str] = "openhands-v1"
    description: ClassVar[str] = "OpenHands software-agent-sdk event folder (event-NNNNN-<id>.json files)"

    def sniff(self, source: Source) -> bool:
        return source.is_dir and any(EVENT_FILE.match(p.name) for p in source.files)

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        if not source.is_dir or source.path is None:
            raise TraceError("expected an OpenHands conversation folder of event-NNNNN-<id>.json files",
                             file=source.name)
        events = _events(source.path, source.name)
        if not events:
            raise TraceError("no event-NNNNN-<id>.json files in this folder", file=source.name)
        run_id = source.path.name
        b = ImportedRunBuilder(run_id, file=source.name, agent="OpenHands SDK",
                         description=f"OpenHands conversation {run_id}")
        _Conversation(b).run(events)
        yield b.build()


class _Conversation:
    def __init__(self, b: ImportedRunBuilder) -> None:
        self.b = b
        self.by_action: dict[str, dict[str, Any]] = {}  # ActionEvent id -> tool step
        self.by_call: dict[str, dict[str, Any]] = {}  # tool_call_id -> tool step
        self.last_response: Any = None

    def run(self, events: list[tuple[int, dict[str, Any]]]) -> None:
        for idx, event in events:
            kind = event["kind"]
            handler = getattr(self, f"on_{kind}", None)
            if handler is None:
                self.b.skip(f"event {idx}: {kind}")
                continue
            handler(idx, event)
        for call_id in self.by_call:
            self.b.warn(f"call {call_id} has no observation")

    def on_SystemPromptEvent(self, idx: int, event: dict[str, Any]) -> None:
        self.b.message("system", _text(event.get("system_prompt", {}).get("text")
                                       if isinstance(event.get("system_prompt"), dict) else event.get("system_prompt")),
                       index=idx)

    def on_MessageEvent(self, idx: int, event: dict[str, Any]) -> None:
        msg = obj(event.get("llm_message"))
        text = _text(msg.get("content"))
        if event.get("source") == "user":
            self.b.message("user", text, origin="user", index=idx)
        elif event.get("source") == "agent":
            self.b.message("assistant", text, index=idx)
        else:
            self.b.message("user", text, origin="harness", index=idx)

    def on_ActionEvent(self, idx: int, event: dict[str, Any]) -> None:
        response = event.get("llm_response_id")
        if response is not None and response != self.last_response:
            self.last_response = response
            self.b.llm(index=idx)
        tool = str(event.get("tool_name") or "?")
        action = obj(event.get("action"))
        call = obj(event.get("tool_call"))
        x: dict[str, Any] = {"x-event_id": event.get("id")}
        if event.get("thought"):
            x["x-thought"] = _text(event["thought"])
        if "arguments" in call:
            args, extra = parse_arguments(call["arguments"])
            x.update(extra)
        else:
            args = {k: v for k, v in action.items() if k != "kind"}
        if tool == FINISH_TOOL:
            self.b.done(index=idx, text=str(action.get("message") or args.get("message") or ""), x=x)
            return
        step = self.b.tool(tool, args, index=idx, x=x)
        call_id = str(event.get("tool_call_id") or call.get("id") or event.get("id"))
        if call_id in self.by_call:
            self.b.warn(f"event {idx}: tool_call_id {call_id} reused before its observation")
        self.by_call[call_id] = step
        self.by_action[str(event.get("id"))] = step

    def _take(self, event: dict[str, Any]) -> dict[str, Any] | None:
        step = self.by_action.pop(str(event.get("action_id")), None)
        call_id = str(event.get("tool_call_id"))
        if step is None:
            step = self.by_call.get(call_id)
        if step is not None:
            self.by_call = {k: v for k, v in self.by_call.items() if v is not step}
        return step

    def on_ObservationEvent(self, idx: int, event: dict[str, Any]) -> None:
        step = self._take(event)
        if step is None:
            self.b.warn(f"event {idx}: orphan observation (no pending call {event.get('tool_call_id')})")
            self.b.skip(f"event {idx}: orphan ObservationEvent")
            return
        obs = obj(event.get("observation"))
        text = _text(obs.get("content")) or str(obs.get("output") or "")
        meta = obj(obs.get("metadata"))
        code = obs.get("exit_code", meta.get("exit_code"))
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        error = None
        if obs.get("is_error") is True or obs.get("error"):
            error = str(obs.get("error") or text.split("\n", 1)[0] or "error")
        self.b.set_result(step, result(text, exit_code=code, error=error))

    def on_UserRejectObservation(self, idx: int, event: dict[str, Any]) -> None:
        step = self._take(event)
        reason = str(event.get("rejection_reason") or "rejected by the user")
        if step is None:
            self.b.warn(f"event {idx}: orphan UserRejectObservation")
            return
        self.b.set_result(step, result(reason, error=f"rejected by the user: {reason}"))

    def on_AgentErrorEvent(self, idx: int, event: dict[str, Any]) -> None:
        step = self._take(event)
        error = str(event.get("error") or "agent error")
        if step is None:
            # an error with no call behind it (e.g. a tool that does not exist): feedback from the harness
            self.b.message("user", error, origin="harness", index=idx)
            return
        self.b.set_result(step, result(error, error=error.split("\n", 1)[0]))
