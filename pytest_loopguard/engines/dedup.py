"""dedup: stale results of polling tools replaced by a placeholder in the prompt view (seed 000)."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Engine, EngineSettings

__all__ = ["ENGINE", "Dedup", "Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    tools: tuple[str, ...] = ("browser_snapshot", "browser_tab_list")
    placeholder: str = "[{tool} output superseded by a later call]"


class Dedup(Engine):
    name = "dedup"
    Settings = Settings


ENGINE = Dedup
