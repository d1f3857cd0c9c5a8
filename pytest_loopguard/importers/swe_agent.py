"""SWE-agent `.traj` files (old and current fields): each `trajectory[i]` is one call, `submit` ends the run.

Older files have steps with only `action, observation, response, state, thought` and `info` with only
`exit_status, submission, model_stats`; every field is treated as optional (FORMATS.md §5). The action is
a shell string (SWE-agent's own commands `open`, `edit`, `goto` ... are shell functions), so a call is
`bash {command}` unless the history holds the structured tool call of a function-calling run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, ClassVar

from ..core._safeload import parse_foreign_json
from ..errors import TraceError
from .base import ImportedRun, Importer, Source
from .build import ImportedRunBuilder, obj, parse_arguments, result, seq, text_of

__all__ = ["SweAgent"]

SHELL_TOOL = "bash"
# observations SWE-agent's tools write when a call failed (tools/windowed_edit_*, tools/edit_anthropic)
ERROR_PREFIXES = (
    "Your proposed edit has introduced new syntax error(s)",
    "Wrong flag!",
)
ERROR_RE = re.compile(r"^(?:Error|ERROR)\b[:\s]|^/bin/bash: line \d+: .*: command not found")


def _error_of(observation: str) -> str | None:
    head = observation.lstrip()
    for prefix in ERROR_PREFIXES:
        if head.startswith(prefix):
            return prefix
    if ERROR_RE.match(head):
        return head.split("\n", 1)[0]
    return None


def _is_submission(action: str, last: bool, info: dict[str, Any]) -> bool:
    """`submit` as the last step of a submitted run (an EnIGMA `submit FLAG` the env rejected is a call)."""
    words = action.strip().split()
    exit_status = str(info.get("exit_status") or "")
    return bool(words) and words[0] == "submit" and last and exit_status.startswith("submitted")


def _structured_calls(history: list[Any]) -> list[dict[str, Any]]:
    """The tool calls of a function-calling run's assistant history items, in order (empty for old files)."""
    calls: list[dict[str, Any]] = []
    for item in history:
        if isinstance(item, dict) and item.get("role") == "assistant" and isinstance(item.get("tool_calls"), list):
            calls.extend(c for c in item["tool_calls"] if isinstance(c, dict))
    return calls


def _model(doc: dict[str, Any]) -> str | None:
    raw = doc.get("replay_config")
    try:
        config = parse_foreign_json(raw) if isinstance(raw, str) else raw  # the one safe reader
    except TraceError:
        return None
    model = config.get("agent", {}).get("model", {}) if isinstance(config, dict) else {}
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) else None


class SweAgent(Importer):
    name: ClassVar[str] = "swe-agent"
    description: ClassVar[str] = "SWE-agent .traj (trajectory + history + info)"

    def sniff(self, source: Source) -> bool:
        doc = source.parsed
        return isinstance(doc, dict) and isinstance(doc.get("trajectory"), list) and "info" in doc

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        doc = source.document
        if not isinstance(doc, dict) or not isinstance(doc.get("trajectory"), list):
            raise TraceError("expected a SWE-agent trajectory: a JSON object with a 'trajectory' list",
                             file=source.name, field="trajectory")
        yield self._run(doc, source)

    def _run(self, doc: dict[str, Any], source: Source) -> ImportedRun:
        info = obj(doc.get("info"))
        run_id = source.stem.removesuffix(".traj")
        version = info.get("swe_agent_version")
        b = ImportedRunBuilder(run_id, file=source.name, agent=f"SWE-agent {version}" if version else "SWE-agent",
                         model=_model(doc), description=f"SWE-agent trajectory of {run_id}")
        b.header_x.update({"x-exit_status": info.get("exit_status"), "x-model_stats": info.get("model_stats"),
                           "x-environment": doc.get("environment")})
        history = seq(doc.get("history"))
        self._messages(b, history)
        structured = _structured_calls(history)
        traj = doc["trajectory"]
        for i, step in enumerate(traj):
            if not isinstance(step, dict):
                b.skip(f"trajectory[{i}]: not an object")
                continue
            action = str(step.get("action") or "")
            observation = str(step.get("observation") or "")
            x = {"x-thought": step["thought"]} if step.get("thought") else {}
            if _is_submission(action, i == len(traj) - 1, info):
                b.done(index=i, text=str(info.get("submission") or observation), x=x)
                continue
            tool, args = SHELL_TOOL, {"command": action.rstrip("\n")}
            if len(structured) == len(traj):
                fn = structured[i].get("function") or {}
                tool = str(fn.get("name") or SHELL_TOOL)
                args, extra = parse_arguments(fn.get("arguments"))
                x.update(extra)
            error = _error_of(observation)
            b.tool(tool, args, index=i, result=result(observation, error=error), x=x)
        return b.build()

    def _messages(self, b: ImportedRunBuilder, history: list[Any]) -> None:
        """The system prompt and the task (history items before the first action); demonstrations are skipped."""
        for i, item in enumerate(history):
            if not isinstance(item, dict):
                continue
            if item.get("role") == "assistant":
                return
            if str(item.get("is_demo")).lower() == "true":
                b.skip(f"history[{i}]: demonstration (is_demo)")
                continue
            role = item.get("role")
            text = text_of(item.get("content"))
            if role == "system":
                b.message("system", text, index=f"history[{i}]")
            elif role == "user":
                b.message("user", text, origin="user", index=f"history[{i}]")
