"""failure_tracker: consecutive failed turns, forced done, repetition, action loops, guardrails (seed 003)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .base import Engine, EngineSettings

__all__ = ["ENGINE", "FailureTracker", "Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    turn_failure: Literal["single_call", "all_failed"] = "all_failed"
    max_failures: int | None = 3
    final_response_after_failure: bool = True
    max_repetitions: int | None = None  # qa-agent: 3
    target_keys: tuple[str, ...] = ("index",)
    max_steps: int | None = None  # turns; qa-agent 50, browser-use 500
    action_loop: bool = False  # browser-use's windowed nudges
    action_loop_window: int = 20
    action_loop_levels: tuple[int, ...] = (5, 8, 12)
    action_loop_exempt: tuple[str, ...] = ("wait", "done", "go_back")
    guardrails: bool = False  # hermes-current
    exact_failure_warn_at: int = 2
    same_tool_failure_warn_at: int = 3
    no_progress_warn_at: int = 2
    read_only_tools: tuple[str, ...] = ("read_file", "search_files", "web_search", "web_extract", "browser_snapshot")
    exact_failure_block_at: int | None = None  # opt-in: 5
    same_tool_failure_stop_at: int | None = None  # opt-in: 8
    no_progress_block_at: int | None = None  # opt-in: 5


class FailureTracker(Engine):
    name = "failure_tracker"
    Settings = Settings


ENGINE = FailureTracker
