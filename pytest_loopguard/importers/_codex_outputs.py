"""What a Codex CLI tool output says about its call: the exit code, the harness's error and refusal texts.

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
from dataclasses import dataclass
from typing import Any, Final

from ..core._safeload import check_json_depth
from ..errors import TraceError

__all__ = ["ERROR_PREFIXES", "Outcome", "command_line", "read_output"]

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
        check_json_depth(whole)
        value = json.loads(whole)
    except (json.JSONDecodeError, TraceError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("output"), str):
        return None
    metadata = value.get("metadata")
    if not isinstance(metadata, dict):
        return None
    code = metadata.get("exit_code")
    return Outcome(value["output"], exit_code=code if _is_int(code) else None)


def _with_header(text: str) -> Outcome | None:
    """A header of known lines, then `Output:` and the body; None when the text does not open with one."""
    lines = text.split("\n", _HEADER_MAX_LINES + 1)
    exit_code = process_exit = session = None
    for n, line in enumerate(lines[:_HEADER_MAX_LINES + 1]):
        line = line.rstrip("\r")
        if line == "Output:":
            if n == 0:
                return None
            body = text.split("\n", n + 1)[n + 1] if len(lines) > n + 1 else ""
            return Outcome(body, exit_code=exit_code, process_exit=process_exit, session=session)
        if (m := _EXIT_CODE.fullmatch(line)) and n == 0:
            exit_code = int(m.group(1))
        elif m := _PROCESS_EXITED.fullmatch(line):
            process_exit = int(m.group(1))
        elif m := _PROCESS_RUNNING.fullmatch(line):
            session = int(m.group(1))
        elif not _HEADER_LINE.fullmatch(line):
            return None
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def command_line(argv: list[Any]) -> str:
    """One command line from an argv list: the script of `bash -lc SCRIPT` (and the like), else the argv joined."""
    words = [str(w) for w in argv]
    if len(words) >= 3 and words[-2] in ("-c", "-lc", "-Command", "/c"):
        return words[-1]
    return shlex.join(words)
