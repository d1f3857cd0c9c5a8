"""read_tracker: consecutive identical reads and searches, and the unchanged-file stub (seed 001)."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Engine, EngineSettings

__all__ = ["ENGINE", "ReadTracker", "Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    warn_at: int = 3
    block_at: int = 4
    shared_streak: bool = False  # hermes: reads and searches share one last-key/count pair
    search_pagination: bool = True  # hermes (the seed's version): False
    unchanged_stub: bool = False  # hermes-current: True
    read_offset_default: int = 1
    read_limit_default: int = 500
    search_target_default: str = "content"
    search_path_default: str = "."
    search_limit_default: int = 50
    search_offset_default: int = 0


class ReadTracker(Engine):
    name = "read_tracker"
    Settings = Settings


ENGINE = ReadTracker
