"""OpenHands V0 event streams: a JSON list of events, `output.jsonl` rows with `history`, older flat rows.

Events (FORMATS.md §6) carry `id`, `source`, `action` or `observation`; an observation answers the action
whose id is its `cause`. The older resolver rows have no ids: an observation answers the action right
before it. A call's tool and arguments come from `tool_call_metadata` (the model's own function call)
when present, else from the action type and its `args`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

from ..errors import TraceError
from .base import ImportedRun, Importer, Source
from .build import ImportedRunBuilder, obj, parse_arguments, result, seq

__all__ = ["OpenHandsV0", "error_of"]

# actions that are tool calls; `finish` ends the run (a done step); `message` is a chat turn
CALL_ACTIONS = frozenset({
    "run", "run_ipython", "read", "write", "edit", "browse", "browse_interactive", "call_tool_mcp",
    "delegate", "think", "task_tracking", "send_pr", "push",
})
# bookkeeping on an action's args that is not an argument of the call
NOT_ARGS = frozenset({
    "thought", "is_confirmed", "confirmation_state", "action_risk", "security_risk", "keep_prompt",
    "kernel_init_code", "impl_source", "translated_ipython_code", "is_input", "blocking", "hidden",
    "wait_for_response", "images_urls", "action", "include_extra",
})
# observation texts OpenHands writes for a failed call
ERROR_PREFIXES = (
    "ERROR:",                                                   # oh_aci editor (str_replace_editor)
    "[Your proposed edit has introduced new syntax error(s)",   # agentskills edit_file_by_replace
    "[No exact match found",                                    # agentskills edit_file_by_replace
    "[Error",                                                   # agentskills open_file and friends
)


def error_of(observation: dict[str, Any]) -> str | None:
    """The error an observation reports: an `error` observation, `success: false` without an exit code,
    or an error text the tools write (ERROR_PREFIXES); None for a successful one."""
    content = str(observation.get("content") or "")
    if observation.get("observation") == "error":
        return content.split("\n", 1)[0] or "error"
    for prefix in ERROR_PREFIXES:
        if content.startswith(prefix):
            return content.split("\n", 1)[0] if prefix != "ERROR:" else _second_line(content)
    if observation.get("success") is False and _exit_code(observation) is None:
        return content.split("\n", 1)[0] or "failed"
    return None


def _second_line(text: str) -> str:
    lines = [line for line in text.split("\n")[1:] if line.strip()]
    return lines[0] if lines else "ERROR"


def _exit_code(observation: dict[str, Any]) -> int | None:
    extras = obj(observation.get("extras")) or observation
    meta = obj(extras.get("metadata"))
    code = meta.get("exit_code", extras.get("exit_code"))
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _call(event: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(tool, args, x-keys) of an action event."""
    x: dict[str, Any] = {}
    args = obj(event.get("args")) or {
        k: v for k, v in event.items() if k not in ("id", "timestamp", "source", "message", "cause", "action",
                                                 "tool_call_metadata", "llm_metrics", "timeout")}
    if args.get("thought"):
        x["x-thought"] = args["thought"]
    meta = event.get("tool_call_metadata")
    if isinstance(meta, dict) and meta.get("function_name"):
        x["x-tool_call_id"] = meta.get("tool_call_id")
        raw = _model_arguments(meta)
        if raw is not None:
            parsed, extra = parse_arguments(raw)
            x.update(extra)
            return str(meta["function_name"]), parsed, x
    action = str(event.get("action"))
    return action, {k: v for k, v in args.items() if k not in NOT_ARGS}, x


def _model_arguments(meta: dict[str, Any]) -> Any:
    """The arguments the model wrote for this call, from the stored model response (None when stripped)."""
    resp = meta.get("model_response")
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not isinstance(choices, list):
        return None
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        calls = message.get("tool_calls") if isinstance(message, dict) else None  # a log's types are not ours
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict) and call.get("id") == meta.get("tool_call_id"):
                function = call.get("function")
                return function.get("arguments") if isinstance(function, dict) else None
    return None


def _usage(event: dict[str, Any]) -> tuple[str | None, int | None, int | None, str | None]:
    """(response id, input tokens, output tokens, text) of the model response behind an action event."""
    resp = obj(obj(event.get("tool_call_metadata")).get("model_response"))
    if not resp:
        return None, None, None, None
    usage = obj(resp.get("usage"))
    choices = seq(resp.get("choices"))
    content = obj(obj(choices[0]).get("message")).get("content") if choices else None
    text = content if isinstance(content, str) else None
    return resp.get("id"), usage.get("prompt_tokens"), usage.get("completion_tokens"), text


def _is_event_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(e, dict) for e in value[:5]) and any(
        "action" in e or "observation" in e for e in value[:5])


class _Events:
    """Converts one event list (ids and causes, or positional pairs) into steps."""

    def __init__(self, b: ImportedRunBuilder, events: list[Any], *, key: str) -> None:
        self.b = b
        self.events = events
        self.key = key  # how source.index names an event: its `id`, or its position in `history`
        self.pending: dict[Any, dict[str, Any]] = {}
        self.last_response: Any = None

    def index(self, pos: int, event: dict[str, Any]) -> Any:
        ident = event.get("id", pos) if self.key == "id" else pos
        # a trace's source.index is a string or an integer ≥ 0: a malformed id points at the position
        valid = isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool) and ident >= 0)
        return ident if valid else pos

    def run(self) -> None:
        last_call: dict[str, Any] | None = None
        for pos, event in enumerate(self.events):
            if not isinstance(event, dict):
                self.b.skip(f"history[{pos}]: not an object")
                continue
            if "action" in event:
                last_call = self.action(pos, event)
            elif "observation" in event:
                self.observation(pos, event, last_call)
                last_call = None
            else:
                self.b.skip(f"history[{pos}]: neither action nor observation")
        for ident in self.pending:
            self.b.warn(f"action {ident} has no observation")

    def action(self, pos: int, event: dict[str, Any]) -> dict[str, Any] | None:
        kind = event.get("action")
        kind = kind if isinstance(kind, str) else json.dumps(kind)  # a malformed type is skipped, never a crash
        index = self.index(pos, event)
        src = event.get("source")
        args = obj(event.get("args")) or event
        if kind == "system":
            self.b.message("system", str(args.get("content") or event.get("message") or ""), index=index)
        elif kind == "message":
            text = str(args.get("content") or event.get("message") or "")
            if src == "agent":
                self.b.message("assistant", text, index=index)
            else:
                self.b.message("user", text, origin="user", index=index)
        elif kind == "finish":
            self._llm(event, index)
            outputs = obj(args.get("outputs"))
            completed = args.get("task_completed", outputs.get("task_completed"))
            success = {"true": True, "false": False}.get(str(completed).lower())
            text = str(args.get("final_thought") or event.get("message") or args.get("thought") or "")
            self.b.done(index=index, text=text, success=success,
                        x={"x-task_completed": completed} if completed is not None else None)
        elif kind in CALL_ACTIONS:
            self._llm(event, index)
            tool, call_args, x = _call(event)
            step = self.b.tool(tool, call_args, index=index, x=x)
            ident = _key(event.get("id", pos))
            if ident in self.pending:
                self.b.warn(f"action id {ident} reused")
            self.pending[ident] = step
            return step
        else:
            self.b.skip(f"history[{pos}]: action {kind!r}")
        return None

    def _llm(self, event: dict[str, Any], index: Any) -> None:
        """One llm step per model response (parallel calls share one response)."""
        response_id, tin, tout, text = _usage(event)
        if response_id is not None and response_id != self.last_response:
            self.last_response = response_id
            self.b.llm(index=index, input_tokens=tin, output_tokens=tout, text=text)

    def observation(self, pos: int, event: dict[str, Any], last_call: dict[str, Any] | None) -> None:
        kind = event.get("observation")
        cause = _key(event.get("cause"))
        if cause is not None:
            step = self.pending.pop(cause, None)
            if step is None:
                if kind not in ("null", "recall", "agent_state_changed"):
                    self.b.warn(f"history[{pos}]: orphan observation (cause {cause} is no pending call)")
                self.b.skip(f"history[{pos}]: observation {kind!r} without its call")
                return
        elif last_call is not None and self.key != "id":
            step = last_call
            self.pending = {k: v for k, v in self.pending.items() if v is not step}
        elif kind == "error":
            # an error the agent controller reports without an action (the model's call was invalid):
            # feedback from the harness; labels.yaml does not count it as a call
            self.b.message("user", str(event.get("content") or ""), origin="harness", index=self.index(pos, event))
            return
        else:
            if kind not in ("null", "recall", "agent_state_changed"):
                self.b.skip(f"history[{pos}]: observation {kind!r}")
            else:
                self.b.skip(f"history[{pos}]: {kind} observation")
            return
        content = event.get("content")
        self.b.set_result(step, result(str(content) if content is not None else None,
                                       exit_code=_exit_code(event), error=error_of(event)))


class OpenHandsV0(Importer):
    name: ClassVar[str] = "openhands-v0"
    description: ClassVar[str] = "OpenHands V0 events: a JSON event list, output.jsonl rows with history"

    def sniff(self, source: Source) -> bool:
        doc = source.parsed
        if _is_event_list(doc):
            return True
        if isinstance(doc, dict) and _is_event_list(doc.get("history")):
            return True
        if doc is None and source.is_jsonl:
            first = source.first_row
            return isinstance(first, dict) and isinstance(first.get("history"), list) and (
                "instance_id" in first or "issue" in first or "instruction" in first)
        return False

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        doc = source.parsed
        stem = source.stem
        if _is_event_list(doc):
            yield self._run(stem, doc, source, None, {})
            return
        if isinstance(doc, dict) and isinstance(doc.get("history"), list):
            yield self._run(_row_id(doc, stem), doc["history"], source, None, doc)
            return
        if doc is not None:
            raise TraceError("expected OpenHands events: a JSON list of events or rows with a 'history' list",
                             file=source.name)
        for n, row in enumerate(source.rows):
            if not isinstance(row.value, dict) or not isinstance(row.value.get("history"), list):
                raise TraceError("expected an OpenHands output row: a JSON object with a 'history' list",
                                 file=source.name, line=row.line, field="history")
            yield self._run(_row_id(row.value, f"{stem}-{n}"), row.value["history"], source, n, row.value)

    def _run(self, run_id: str, events: list[Any], source: Source, row: int | None,
             meta: dict[str, Any]) -> ImportedRun:
        metadata = obj(meta.get("metadata"))
        llm_config = obj(metadata.get("llm_config"))
        agent = metadata.get("agent_class")
        b = ImportedRunBuilder(run_id, file=source.name, row=row,
                         agent=f"OpenHands {agent}" if agent else "OpenHands", model=llm_config.get("model"),
                         description=f"OpenHands run {run_id}")
        with_ids = any(isinstance(e, dict) and "id" in e for e in events)
        if not with_ids and "instruction" in meta:
            b.skip("instruction: the first history entry repeats it")
        for key in ("instance_id", "error", "success", "metrics", "test_result"):
            if meta.get(key) is not None:
                b.header_x[f"x-{key}"] = meta[key]
        _Events(b, events, key="id" if with_ids else "history").run()
        return b.build()


def _key(value: Any) -> Any:
    """An event id or cause as a dict key: a malformed one (a list, an object) as its JSON text, so it pairs
    with nothing instead of crashing the import."""
    return value if value is None or isinstance(value, str | int | float) else json.dumps(value, sort_keys=True)


def _row_id(row: dict[str, Any], fallback: str) -> str:
    if row.get("instance_id"):
        return str(row["instance_id"])
    issue = row.get("issue")
    if isinstance(issue, dict) and issue.get("number") is not None:
        return f"{issue.get('owner', '')}-{issue.get('repo', '')}-{issue['number']}".strip("-")
    return fallback
