"""dedup's settings: the fields a policy file may set (the rule is `engines/dedup.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from . import EngineSettings

__all__ = ["Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    tools: tuple[str, ...] = ("browser_snapshot", "browser_tab_list")
    placeholder: str = "[{tool} output superseded by a later call]"
