"""budget: the opt-in task envelope — counters, streaks, hard limits and phases (seed 002)."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Engine, EngineSettings

__all__ = ["ENGINE", "Budget", "Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    max_tool_calls: int | None = None
    max_wall_ms: int | None = None
    max_consecutive_same_tool: int | None = 5
    max_observation_streak: int | None = 6
    max_failure_streak: int | None = 4
    max_same_url_navigations: int | None = 3
    allowed_domains: tuple[str, ...] | None = None
    checkpoint_every_calls: int | None = None
    near_ratio: float = 0.8
    recent_events: int = 10
    url_arg: str = "url"


class Budget(Engine):
    name = "budget"
    Settings = Settings


ENGINE = Budget
