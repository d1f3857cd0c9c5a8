"""Where each coding agent keeps its session logs on this machine, and the logs under the paths a user names.

Each agent's own setting for that place is honoured: `CLAUDE_CONFIG_DIR` (Claude Code), `CODEX_HOME` (Codex
CLI), `GEMINI_CLI_HOME` (Gemini CLI: it replaces the home folder, under which `.gemini/` is kept),
`XDG_CONFIG_HOME` / `APPDATA` (VS Code's globalStorage, where Cline and Roo Code keep task folders) and
`AIDER_CHAT_HISTORY_FILE` (aider's `--chat-history-file`). The home folder is `HOME` (`USERPROFILE` on
Windows) as the environment gives it. Nothing is opened here except folder listings and `stat`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from ..importers.base import LOG_SUFFIXES

__all__ = ["AGENTS", "LogFile", "agent_homes", "discover", "is_task_folder", "logs_under"]

# the importer names of the agents whose logs `scan` finds by itself, in the order they are listed
AGENTS: Final = ("claude-code", "codex", "gemini-cli", "cline", "aider")
CLINE_EXTENSIONS: Final = ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline")  # Cline, Roo Code
EDITORS: Final = ("Code", "Code - Insiders", "Cursor", "VSCodium", "Windsurf")  # VS Code and its forks
TASK_FILES: Final = ("api_conversation_history.json", "ui_messages.json")  # what makes a Cline/Roo task folder
AIDER_HISTORY: Final = ".aider.chat.history.md"


@final
@dataclass(frozen=True, slots=True)
class LogFile:
    """One session log to scan: a file, or a Cline/Roo task folder.

    `agent` is the importer that reads it (None: detected from the content); `session` is the main session
    file a Claude Code subagent file belongs to (None for every other log).
    """

    path: Path
    agent: str | None
    mtime: float
    session: Path | None = None


def _mtime(path: Path) -> float:
    """When the log last changed: a file's mtime, a task folder's newest file's."""
    try:
        if path.is_dir():
            times = [p.stat().st_mtime for p in path.iterdir() if p.is_file()]
            return max(times, default=path.stat().st_mtime)
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or env.get("USERPROFILE")
    return Path(home) if home else Path.home()


def _dir(env: Mapping[str, str], name: str, default: Path) -> Path:
    value = env.get(name)
    return Path(value).expanduser() if value else default


def agent_homes(env: Mapping[str, str]) -> dict[str, list[Path]]:
    """The folders each agent's logs are under, as this environment sets them (for docs and `--help`)."""
    home = _home(env)
    config = _dir(env, "XDG_CONFIG_HOME", home / ".config")
    storage_roots = [config / editor / "User" / "globalStorage" for editor in EDITORS]
    storage_roots += [home / "Library" / "Application Support" / e / "User" / "globalStorage" for e in EDITORS]
    if env.get("APPDATA"):
        storage_roots += [Path(env["APPDATA"]) / e / "User" / "globalStorage" for e in EDITORS]
    cline = [root / ext / "tasks" for root in storage_roots for ext in CLINE_EXTENSIONS]
    cline.append(home / ".cline" / "data" / "tasks")  # the Cline CLI
    return {
        "claude-code": [_dir(env, "CLAUDE_CONFIG_DIR", home / ".claude") / "projects"],
        "codex": [_dir(env, "CODEX_HOME", home / ".codex") / "sessions"],
        "gemini-cli": [_dir(env, "GEMINI_CLI_HOME", home) / ".gemini" / "tmp"],
        "cline": cline,
        "aider": [],  # per project: see _aider
    }


def _sorted_glob(folder: Path, pattern: str) -> list[Path]:
    try:
        return sorted(p for p in folder.glob(pattern) if p.is_file())
    except OSError:
        return []


def _claude(projects: Path) -> Iterator[LogFile]:
    # ~/.claude/projects/<project>/<session>.jsonl, and <project>/<session>/subagents/agent-*.jsonl: a
    # subagent's file belongs to the session whose folder holds it
    for path in _sorted_glob(projects, "*/*.jsonl"):
        yield LogFile(path, "claude-code", _mtime(path))
    for path in _sorted_glob(projects, "*/*/subagents/agent-*.jsonl"):
        session = path.parent.parent.with_suffix(".jsonl")
        yield LogFile(path, "claude-code", _mtime(path), session)


def _task_folders(tasks: Path) -> Iterator[LogFile]:
    try:
        folders = sorted(p for p in tasks.iterdir() if p.is_dir())
    except OSError:
        return
    for folder in folders:
        if any((folder / name).is_file() for name in TASK_FILES):
            yield LogFile(folder, "cline", _mtime(folder))


def _aider(env: Mapping[str, str], cwd: Path) -> Iterator[Path]:
    """aider writes its history into the project it runs in (the working folder, or the git root with
    `--git`), never into one place per machine: the working folder and its git root are looked at, and the
    file `AIDER_CHAT_HISTORY_FILE` names."""
    named = env.get("AIDER_CHAT_HISTORY_FILE")
    if named:
        yield (cwd / Path(named).expanduser())
    yield cwd / AIDER_HISTORY
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            yield folder / AIDER_HISTORY
            break


def discover(env: Mapping[str, str] | None = None, cwd: Path | None = None,
             agents: Iterable[str] = AGENTS) -> list[LogFile]:
    """Every session log in the agents' default places, each once, in `AGENTS` order then by path."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    wanted = set(agents)
    homes = agent_homes(env)
    found: list[LogFile] = []
    if "claude-code" in wanted:
        for projects in homes["claude-code"]:
            found += _claude(projects)
    if "codex" in wanted:
        for sessions in homes["codex"]:
            found += (LogFile(p, "codex", _mtime(p)) for p in _sorted_glob(sessions, "*/*/*/rollout-*.jsonl"))
    if "gemini-cli" in wanted:
        for tmp in homes["gemini-cli"]:
            found += (LogFile(p, "gemini-cli", _mtime(p)) for p in _sorted_glob(tmp, "*/chats/session-*.json"))
    if "cline" in wanted:
        for tasks in homes["cline"]:
            found += _task_folders(tasks)
    if "aider" in wanted:
        found += (LogFile(p, "aider", _mtime(p)) for p in _aider(env, cwd) if p.is_file())
    return _once(found)


def _once(logs: Iterable[LogFile]) -> list[LogFile]:
    """Each log once (two settings, or the working folder and its git root, may name the same one)."""
    seen: set[Path] = set()
    out: list[LogFile] = []
    for log in logs:
        key = log.path.resolve()
        if key not in seen:
            seen.add(key)
            out.append(log)
    return out


def is_task_folder(path: Path) -> bool:
    return path.is_dir() and any((path / name).is_file() for name in TASK_FILES)


def logs_under(paths: Iterable[str | Path]) -> Iterator[LogFile | Path]:
    """The logs the user named: a file as it is; a Cline/Roo task folder as one log; any other folder's log
    files (`.json`, `.jsonl`, `.traj`, aider's `*.aider.chat.history.md`), recursively and sorted. The format
    of each is detected from its content. A path that does not exist is yielded as a bare `Path`."""
    logs: list[LogFile] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield path
        elif path.is_dir():
            logs += _walk(path)
        else:
            logs.append(LogFile(path, None, _mtime(path)))
    yield from _once(logs)


def _walk(folder: Path, seen: set[Path] | None = None) -> Iterator[LogFile]:
    seen = set() if seen is None else seen
    key = folder.resolve()
    if key in seen:  # a link back to a folder already walked: walked once
        return
    seen.add(key)
    if is_task_folder(folder):
        yield LogFile(folder, None, _mtime(folder))
        return
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return
    for child in children:
        if child.is_dir():
            yield from _walk(child, seen)
        elif child.name.endswith(LOG_SUFFIXES):
            yield LogFile(child, None, _mtime(child))
