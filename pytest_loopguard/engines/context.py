"""context: token accounting, pre-prompt compaction, overflow and transient recovery (seeds 000, 001, 004)."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Engine, EngineSettings

__all__ = ["ENGINE", "Context", "Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    window_tokens: int = 128000
    compact_at: float = 0.8


class Context(Engine):
    name = "context"
    Settings = Settings


ENGINE = Context
