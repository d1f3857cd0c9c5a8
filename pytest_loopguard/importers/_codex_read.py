"""How the `codex` importer reads a rollout's parts: an output's outcome, a call's arguments, a message's author.

Codex marks a failed call only in the text it hands the model, so these are the exact markers the `codex`
importer recognises (docs/import.md lists them). Each is anchored (a whole output, the start of one, or a
header line before the `Output:` line), so a command that merely prints one of them, or prints "error",
is not a failure:

- the old `shell` tool's structured output, JSON `{"output": ..., "metadata": {"exit_code": N}}`;
- the freeform exec output's first line `Exit code: N` (`shell_command`, `apply_patch` run as a command);
- the unified exec header (`exec_command`, `write_stdin`): `Process exited with code N` and
  `Process running with session ID N`, among the `Chunk ID:` / `Wall time:` / `Original token count:` lines;
- outputs starting with `exec_command failed: `, `write_stdin failed: `, `failed to parse function
  arguments`, `failed to parse exec_command arguments`, `failed to parse write_stdin arguments`,
  `unsupported call: `, `unsupported custom tool call: ` or `apply_patch verification failed: ` (an error);
- the whole output `exec command rejected by user` or `patch rejected by user` (a person denied the call),
  or one starting `This action was rejected due to unacceptable risk.` (the approval reviewer denied it);
- the whole output `aborted`: Codex's stand-in for a call the user interrupted before it returned.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..core._safeload import parse_json
from ..errors import TraceError
from .build import exit_code
from .run_builder import content_text, mapping_at

__all__ = [
    "CALL_ITEMS", "ERROR_PREFIXES", "HARNESS_MARKERS", "LINE_TYPES", "MODEL_ITEMS", "Outcome", "call_args",
    "command_line", "exit_code", "is_rollout_line", "read_output", "type_name", "user_origins",
]

ERROR_PREFIXES: Final = (
    "exec_command failed: ",
    "write_stdin failed: ",
    "failed to parse function arguments",
    "failed to parse exec_command arguments",
    "failed to parse write_stdin arguments",
    "unsupported call: ",
    "unsupported custom tool call: ",
    "apply_patch verification failed: ",
)
DENIED_BY_USER: Final = frozenset({"exec command rejected by user", "patch rejected by user"})
DENIED_BY_REVIEWER: Final = "This action was rejected due to unacceptable risk."
ABORTED: Final = "aborted"
LINE_TYPES: Final = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
CALL_ITEMS: Final = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
MODEL_ITEMS: Final = CALL_ITEMS | {"reasoning"}
# the start of a user-role message the harness wrote (Codex's own tags and headings)
HARNESS_MARKERS: Final = (
    "<environment_context>", "<user_instructions>", "# AGENTS.md instructions for ", "<INSTRUCTIONS>",
    "<turn_aborted>", "<user_shell_command>", "<skill>", "<subagent_notification>", "<plugins>", "<subagents>",
)
_REDACTED = re.compile(r"\[REDACTED_[A-Z_]+ (len=\d+ sha=[0-9a-f]+)\]")



_EXIT_CODE = re.compile(r"Exit code: (-?\d+)")
_PROCESS_EXITED = re.compile(r"Process exited with code (-?\d+)")
_PROCESS_RUNNING = re.compile(r"Process running with session ID (\d+)")
# the other lines a header may hold before `Output:` (unified exec and freeform exec output)
_HEADER_LINE = re.compile(
    r"Chunk ID: \S*|Wall time: [\d.]+ seconds|Original token count: \d+|Total output lines: \d+"
)
_HEADER_MAX_LINES: Final = 8


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one output says: `text` is what the command printed (a header's body), the rest what it signals."""

    text: str
    exit_code: int | None = None  # the call's own exit code (structured or freeform exec output)
    error: str | None = None
    denied_by: str | None = None  # "user" or "rule": the call never ran
    aborted: bool = False  # interrupted before it returned
    process_exit: int | None = None  # unified exec: the exit of the process behind the session
    session: int | None = None  # unified exec: the session the process keeps running in


def read_output(text: str) -> Outcome:
    """The outcome of one tool output (never raises: text that matches no marker is a plain success)."""
    whole = text.strip()
    if whole in DENIED_BY_USER:
        return Outcome(text, denied_by="user")
    if whole.startswith(DENIED_BY_REVIEWER):
        return Outcome(text, denied_by="rule")
    if whole == ABORTED:
        return Outcome(text, aborted=True)
    if whole.startswith(ERROR_PREFIXES):
        return Outcome(text, error=text)
    structured = _structured(whole)
    if structured is not None:
        return structured
    return _with_header(text) or Outcome(text)


def _structured(whole: str) -> Outcome | None:
    if not (whole.startswith("{") and whole.endswith("}") and '"metadata"' in whole):
        return None
    try:
        value = parse_json(whole)  # NaN, numbers out of bounds and deep nesting are refused: then it is text
    except TraceError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("output"), str):
        return None
    metadata = value.get("metadata")
    if not isinstance(metadata, dict):
        return None
    return Outcome(value["output"], exit_code=exit_code(metadata.get("exit_code")))


def _with_header(text: str) -> Outcome | None:
    """A header of known lines, then `Output:` and the body; None when the text does not open with one."""
    lines = text.split("\n", _HEADER_MAX_LINES + 1)
    own = process = session = None
    for n, line in enumerate(lines[:_HEADER_MAX_LINES + 1]):
        line = line.rstrip("\r")
        if line == "Output:":
            if n == 0:
                return None
            body = text.split("\n", n + 1)[n + 1] if len(lines) > n + 1 else ""
            return Outcome(body, exit_code=own, process_exit=process, session=session)
        if n == 0 and (m := _EXIT_CODE.fullmatch(line)):
            own = exit_code(m.group(1))
        elif m := _PROCESS_EXITED.fullmatch(line):
            process = exit_code(m.group(1))
        elif m := _PROCESS_RUNNING.fullmatch(line):
            session = int(m.group(1)[:15])
        elif not _HEADER_LINE.fullmatch(line):
            return None
    return None


def command_line(argv: list[Any]) -> str:
    """One command line from an argv list: the script of `bash -lc SCRIPT` (and the like), else the argv joined."""
    words = [str(w) for w in argv]
    if len(words) >= 3 and words[-2] in ("-c", "-lc", "-ic", "-Command", "/c"):
        return words[-1]
    return shlex.join(words)


def is_rollout_line(row: Any) -> bool:
    return (isinstance(row, Mapping) and type_name(row.get("type")) in LINE_TYPES
            and isinstance(row.get("payload"), Mapping))


def type_name(value: Any) -> str | None:
    """A `type` field as a name: logs may hold anything there (an object is no name, and not hashable)."""
    return value if isinstance(value, str) else None


def call_args(kind: str, item: Mapping[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(tool, args, x- fields) of a call item; an argv list under `command` becomes one command line (the
    arguments are otherwise the model's own: `exec_command` keeps its line under `cmd`, where the built-in
    tool table reads it)."""
    if kind == "custom_tool_call":
        return str(item.get("name") or ""), {"input": item.get("input", "")}, {"x-tool-type": "custom"}
    if kind in ("local_shell_call", "web_search_call"):
        action = {k: v for k, v in mapping_at(item, "action").items() if k != "type"}
        x: dict[str, Any] = {}
        if isinstance(action.get("command"), list):
            x["x-argv"] = action["command"]
            action["command"] = command_line(action["command"])
        return kind.removesuffix("_call"), action, x
    name = str(item.get("name") or "")
    raw = item.get("arguments")
    args = _json_object(raw)
    if args is None:
        # Redacted or broken arguments stay comparable: two equal texts are two equal calls.
        text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
        return name, {"raw": text}, {"x-arguments": text, "x-arguments-error": "not a JSON object"}
    x = {}
    if isinstance(args.get("command"), list):  # the old `shell` tool: {"command": ["bash", "-lc", ...]}
        x["x-argv"] = args["command"]
        args["command"] = command_line(args["command"])
    return name, args, x


def _json_object(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return dict(raw)
    if not isinstance(raw, str):
        return None
    try:
        value = parse_json(raw)  # NaN, numbers out of bounds and deep nesting are refused: then it is text
    except TraceError:
        return None
    return value if isinstance(value, dict) else None


def user_origins(rows: Sequence[tuple[int, Any]]) -> dict[int, str]:
    """Line -> origin of each user-role response item, and `user` for each `user_message` event that only
    repeats one (so it is not a second message).

    The prompt a person typed is the response item Codex also wrote as a `user_message` event (the same text,
    or the same redaction placeholder); one that starts with a harness marker, or that no event repeats in a
    log that has such events, is the harness's (environment context, AGENTS.md instructions)."""
    origins: dict[int, str] = {}
    items: list[tuple[int, str]] = []  # user items and events not yet paired, since the last model item
    events: list[tuple[int, str]] = []
    has_events = False
    for line, row in rows:
        if not is_rollout_line(row):
            continue
        payload = row["payload"]
        kind = type_name(payload.get("type"))
        if row["type"] == "response_item" and kind == "message" and payload.get("role") == "user":
            text = content_text(payload.get("content")).strip()
            if text.startswith(HARNESS_MARKERS):
                origins[line] = "harness"
            elif (match := _pair(text, events)) is not None:
                origins[line] = origins[match] = "user"
            else:
                items.append((line, text))
        elif row["type"] == "event_msg" and kind == "user_message":
            has_events = True
            message = payload.get("message")
            text = message.strip() if isinstance(message, str) else ""
            if (match := _pair(text, items)) is not None:
                origins[line] = origins[match] = "user"
            else:
                events.append((line, text))
        elif row["type"] == "response_item" and kind in MODEL_ITEMS | {"message"}:
            items.clear()  # the model answered: what came before is settled
            events.clear()
    if has_events:
        for line, row in rows:
            if is_rollout_line(row) and row["type"] == "response_item" and line not in origins:
                payload = row["payload"]
                if payload.get("type") == "message" and payload.get("role") == "user":
                    origins[line] = "harness"
    return origins


def _pair(text: str, waiting: list[tuple[int, str]]) -> int | None:
    """The line of the latest waiting message `text` repeats (equal text, the same redaction, or contained)."""
    key = _key(text)
    for n in range(len(waiting) - 1, -1, -1):
        line, other = waiting[n]
        if _key(other) == key or (text and (text in other or other in text) and bool(other)):
            del waiting[n]
            return line
    return None


def _key(text: str) -> str:
    m = _REDACTED.fullmatch(text)
    return f"redacted {m.group(1)}" if m else text
