"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl` and its subagents) as runs.

One session file is one run. Its subagents (`<session>/subagents/agent-<id>.jsonl` beside it) are part of
that run: their steps follow the Task call that started them (the call whose result names the agentId),
each with `agent: agent-<id>` and `x-parent-call: <the Task call's id>`; a subagent no Task call names (the
compaction agent `agent-acompact-…`) is placed where it ended (its last line's timestamp): the
compaction agent's steps come right before the compaction they wrote. A subagent file imported alone, or a
folder of subagent files, is a run of its own. A project folder is one source: a run per session file.
The `agent_progress` lines of the main file copy the subagent's messages and are not steps (the subagent's own
file is the record). How each line maps, and the text markers of calls that never ran or failed without an
`is_error` flag, are in `_claude_code_lines` and docs/import.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from ..core._limits import MAX_LOG_BYTES
from ..errors import TraceError
from ._claude_code_lines import (
    CANCELLED_MARKERS,
    DENIED_BY_RULE_MARKERS,
    DENIED_BY_USER_MARKERS,
    ERROR_MARKERS,
    Builder,
    Transcript,
    read_rows,
)
from .base import ImportedRun, Importer, Source

__all__ = [
    "CANCELLED_MARKERS", "DENIED_BY_RULE_MARKERS", "DENIED_BY_USER_MARKERS", "ERROR_MARKERS", "ClaudeCodeImporter",
    "looks_like_line",
]

FORMAT: Final = "claude-code"
FIRST_LINE_MAX: Final = 1 << 20  # a folder is recognised by each file's first line, read up to this many bytes
OTHER_LOGS: Final = (".json", ".traj")  # a folder holding these is a folder of logs, not a Claude Code project


def looks_like_line(row: Any) -> bool:
    """A Claude Code transcript line: typed, and naming its session (`sessionId`), or one of the two line
    types that do not (`summary` with `leafUuid`, `file-history-snapshot` with `snapshot`)."""
    if not isinstance(row, dict) or not isinstance(row.get("type"), str):
        return False
    if isinstance(row.get("sessionId"), str):
        return True
    return (row["type"] == "summary" and "leafUuid" in row) or (
        row["type"] == "file-history-snapshot" and "snapshot" in row)


def _first_line(path: Path) -> Any:
    try:
        with path.open("rb") as fh:
            head = fh.readline(FIRST_LINE_MAX)
        return json.loads(head.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def _folder_logs(folder: Path) -> tuple[list[Path], list[Path]]:
    """(session files, subagent files) of a project folder, a session folder or a `subagents` folder."""
    try:
        top = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(".jsonl"))
    except OSError:
        return [], []
    if folder.name == "subagents":
        return [], top
    subs = sorted(folder.glob("subagents/agent-*.jsonl")) + sorted(folder.glob("*/subagents/agent-*.jsonl"))
    return top, subs


def _session_of(subagent: Path) -> Path:
    """The session file a subagent file belongs to: `<session>/subagents/agent-x.jsonl` → `<session>.jsonl`."""
    session_folder = subagent.parent.parent
    return session_folder.with_name(session_folder.name + ".jsonl")


def _subagents_of(session: Path) -> list[Path]:
    return sorted(session.with_suffix("").glob("subagents/agent-*.jsonl"))


def _run_id_of_subagent(path: Path) -> str:
    stem = path.name.removesuffix(".jsonl")
    return f"{path.parent.parent.name}-{stem}" if path.parent.name == "subagents" else stem


def _rows(source: Source, builder_warnings: list[str]) -> list[tuple[int, dict[str, Any]]]:
    rows, warnings = read_rows(source.text, source.name)
    builder_warnings.extend(warnings)
    if rows and not looks_like_line(rows[0][1]):
        raise TraceError("line 1 is not a Claude Code transcript line (expected a typed line with a sessionId)",
                         file=source.name, line=rows[0][0])
    return rows


def _agent_id(rows: list[tuple[int, dict[str, Any]]], path_stem: str) -> str:
    for _, row in rows:
        if isinstance(row.get("agentId"), str) and row["agentId"]:
            return str(row["agentId"])
    return path_stem.removeprefix("agent-")


def _header(b: Builder, reader: Transcript) -> None:
    if reader.models:
        b.set_model(reader.models[0])
    if len(reader.models) > 1:
        b.header_x["models"] = reader.models
    b.header_x.update(reader.facts)
    if reader.summaries:
        b.header_x["summaries"] = reader.summaries


def _subagent_steps(b: Builder, path: Path) -> tuple[str, list[dict[str, Any]], str | None]:
    """(agentId, its steps, its last timestamp): the file read with `b`, its steps kept apart from the run's."""
    source = Source.from_path(path, MAX_LOG_BYTES)
    rows = _rows(source, b.warnings)
    agent_id = _agent_id(rows, path.name.removesuffix(".jsonl"))
    main_steps, main_file = b.steps, b.file
    b.steps, b.file = [], source.name
    try:
        reader = Transcript(b, agent=f"agent-{agent_id}", prompt_origin=_prompt_origin(agent_id))
        reader.read(rows)
    finally:
        steps, b.steps, b.file = b.steps, main_steps, main_file
    last = max(reader.times.values(), default=None)
    return agent_id, steps, last


def _prompt_origin(agent_id: str) -> str:
    # the compaction agent's prompt ("create a detailed summary…") is Claude Code's, not the main agent's words
    return "harness" if agent_id.startswith("acompact") else "agent"


def _convert_session(source: Source, subagents: list[Path], run_id: str) -> ImportedRun:
    b = Builder(source.name, run_id, fmt=FORMAT)
    b.source["agent"] = FORMAT
    reader = Transcript(b)
    reader.read(_rows(source, b.warnings))
    _header(b, reader)
    task_of = {agent_id: call_id for call_id, agent_id in reader.subagent_of.items()}
    for path in subagents:
        agent_id, steps, last = _subagent_steps(b, path)
        call_id = task_of.get(agent_id)
        if call_id is not None:
            task_step = reader.task_calls[call_id]
            for step in steps:
                step["x-parent-call"] = call_id
            subagent_type = task_step["args"].get("subagent_type")
            if isinstance(subagent_type, str):
                for step in steps:
                    step["x-subagent-type"] = subagent_type
            at = next(i for i, s in enumerate(b.steps) if s is task_step) + 1
        elif last is not None:
            # placed where it ended: before the first main step written after its last line
            stamps = [reader.times.get(id(s), "") for s in b.steps]
            at = next((i for i, stamp in enumerate(stamps) if stamp > last), len(b.steps))
        else:
            at = len(b.steps)
        b.steps[at:at] = steps
    return b.build()


def _convert_subagent(source: Source, run_id: str) -> ImportedRun:
    b = Builder(source.name, run_id, fmt=FORMAT)
    b.source["agent"] = FORMAT
    rows = _rows(source, b.warnings)
    stem = source.path.name.removesuffix(".jsonl") if source.path is not None else source.stem
    agent_id = _agent_id(rows, stem)
    reader = Transcript(b, agent=f"agent-{agent_id}", prompt_origin=_prompt_origin(agent_id))
    reader.read(rows)
    _header(b, reader)
    return b.build()


def _is_subagent_file(source: Source) -> bool:
    if source.path is not None and source.path.parent.name == "subagents":
        return True
    first = source.first_row
    return isinstance(first, dict) and first.get("isSidechain") is True and isinstance(first.get("agentId"), str)


class ClaudeCodeImporter(Importer):
    """Claude Code session transcripts: a session file (with its subagents), a subagent file, a project folder."""

    name = FORMAT
    title = "a Claude Code session transcript"
    description = "Claude Code session transcripts (~/.claude/projects/<project>/<session>.jsonl)"

    def sniff(self, source: Source) -> bool:
        if source.is_dir:
            assert source.path is not None
            sessions, subagents = _folder_logs(source.path)
            if not sessions and not subagents:
                return False
            stems = {p.name.removesuffix(".jsonl") for p in sessions}
            try:
                for p in source.path.iterdir():
                    # other logs, or a subfolder that is not a session's: a folder of logs, walked file by file
                    if p.is_file() and p.name.endswith(OTHER_LOGS):
                        return False
                    if p.is_dir() and p.name not in stems and p.name != "subagents" and not (p / "subagents").is_dir():
                        return False
            except OSError:
                return False
            return all(looks_like_line(_first_line(p)) for p in [*sessions, *subagents])
        if not source.head.startswith("{"):
            return False
        return looks_like_line(source.first_row)

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        if source.is_dir:
            assert source.path is not None
            yield from self._convert_folder(source.path)
            return
        if _is_subagent_file(source):
            path = source.path
            yield _convert_subagent(source, _run_id_of_subagent(path) if path is not None else source.stem)
            return
        subagents = _subagents_of(source.path) if source.path is not None else []
        yield _convert_session(source, subagents, source.stem)

    def _convert_folder(self, folder: Path) -> Iterator[ImportedRun]:
        sessions, subagents = _folder_logs(folder)
        if not sessions and not subagents:
            raise TraceError("no Claude Code session files (*.jsonl) in this folder", file=str(folder))
        names = {p.name for p in sessions}
        for path in sessions:
            source = Source.from_path(path, MAX_LOG_BYTES)
            if _is_subagent_file(source):
                yield _convert_subagent(source, source.stem)
            else:
                yield _convert_session(source, _subagents_of(path), source.stem)
        for path in subagents:  # those whose session file is not in this folder stand alone
            if _session_of(path).name not in names or _session_of(path).parent != folder:
                yield _convert_subagent(Source.from_path(path, MAX_LOG_BYTES), _run_id_of_subagent(path))

