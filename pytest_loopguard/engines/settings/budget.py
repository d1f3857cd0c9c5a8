"""budget's settings: the fields a policy file may set (the rule is `engines/budget.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..lru import DEFAULT_MAX_KEYS
from . import EngineSettings, at_least

__all__ = ["Settings"]


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
    # generic shell/terminal tools: every step of a bash-only agent is the same tool, so a streak of
    # them carries no signal (it fired on 173 of 175 resolved calibration runs); they reset the streak
    same_tool_exempt: tuple[str, ...] = ()
    # navigation counts keep at most this many URLs, least recently used evicted first (docs/engines.md)
    max_keys: int = DEFAULT_MAX_KEYS

    def __post_init__(self) -> None:
        at_least(self, 1, "max_keys")
