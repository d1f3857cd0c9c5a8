"""The `loopguard_paths` ini option read as pytest reads it, so `loopguard run` without PATHS replays the same corpus.

pytest takes the first configuration file found walking up from the current directory, trying in each
directory pytest.ini, .pytest.ini, pyproject.toml (with a [tool.pytest.ini_options] or [tool.pytest] table),
tox.ini (with a [pytest] section) and setup.cfg (with [tool:pytest]); paths are relative to that file's folder.
"""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path
from typing import Any

from ..errors import LoopguardError

__all__ = ["DEFAULT_PATHS", "find_ini", "trace_paths"]

DEFAULT_PATHS = ("traces",)  # the plugin's default for the option
OPTION = "loopguard_paths"
_INI_SECTIONS = {"pytest.ini": "pytest", ".pytest.ini": "pytest", "tox.ini": "pytest", "setup.cfg": "tool:pytest"}


def find_ini(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The configuration file pytest would use from `start`, and its pytest options; None when there is none."""
    for folder in (start, *start.parents):
        for name in ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
            path = folder / name
            if not path.is_file():
                continue
            options = _read_toml(path) if name == "pyproject.toml" else _read_ini(path, _INI_SECTIONS[name])
            if options is not None:
                return path, options
    return None


def trace_paths(start: Path) -> list[str]:
    """The trace folders `loopguard_paths` names (default `traces`), relative to the config file's folder."""
    found = find_ini(start)
    if found is None:
        return [_shown(start / p) for p in DEFAULT_PATHS]
    path, options = found
    raw = options.get(OPTION, list(DEFAULT_PATHS))
    if isinstance(raw, str):  # an ini linelist: one path per line
        raw = [line.strip() for line in raw.splitlines() if line.strip()]
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise LoopguardError(f"{path}: {OPTION}: expected a list of folders, got {raw!r}")
    return [_shown(path.parent / p) for p in raw]


def _shown(path: Path) -> str:
    # relative to the current directory when below it: the names the rest of the output uses
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read_ini(path: Path, section: str) -> dict[str, Any] | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as exc:
        raise LoopguardError(f"{path}: {exc}") from None
    if not parser.has_section(section):
        # pytest.ini counts even without a [pytest] section; tox.ini and setup.cfg only with theirs
        return {} if path.name in ("pytest.ini", ".pytest.ini") else None
    return dict(parser.items(section))


def _read_toml(path: Path) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LoopguardError(f"{path}: {exc}") from None
    tool = data.get("tool", {}).get("pytest")
    if not isinstance(tool, dict):
        return None
    ini_options = tool.get("ini_options")
    return dict(ini_options) if isinstance(ini_options, dict) else {k: v for k, v in tool.items()}
