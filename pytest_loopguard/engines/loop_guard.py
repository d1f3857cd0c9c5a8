"""loop_guard: consecutive identical calls, poll calls, ping-pong and poisoned outcomes (seed 000)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .base import Engine, EngineSettings

__all__ = ["ENGINE", "LoopGuard", "Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    identity: Literal["canonical", "ordered"] = "canonical"
    warn_at: int = 3
    block_at: int = 5
    warn_action: Literal["warn", "block"] = "warn"  # Spacebot skips the call on a warning: block
    poll_multiplier: int = 3
    poll_shell_tools: tuple[str, ...] = ()  # tools whose short argument text with a poll word is a poll call
    poll_words: tuple[str, ...] = (
        "status", "poll", "wait", "watch", "tail", '"ps ', "jobs", "pgrep", "docker ps", "kubectl get",
    )
    poll_max_chars: int = 200
    max_warnings_per_call: int = 3
    ring_size: int = 30
    ping_pong: bool = True
    ping_pong_periods: tuple[int, ...] = (2, 3)
    ping_pong_detect_repeats: int = 3  # a period is seen once it repeats this often
    ping_pong_min_repeats: int = 3  # repeats at which ping-pong blocks outright
    outcome_block_threshold: int = 4  # 0 disables outcome poisoning
    outcome_prefix_bytes: int = 1000
    reset_on_user_message: bool = True


class LoopGuard(Engine):
    name = "loop_guard"
    Settings = Settings


ENGINE = LoopGuard
