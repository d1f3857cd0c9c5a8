"""stuck_detector's settings: the fields a policy file may set (the rule is `engines/stuck_detector.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from . import EngineSettings, SettingError, at_least

__all__ = ["Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    """Which detector, and its thresholds (defaults: each source's own; docs/engines.md has the table)."""

    detector: Literal["openhands", "openhands_sdk", "gemini"] = "openhands"
    # openhands and openhands_sdk: CodeAct's tool names for the result kinds
    command_tools: tuple[str, ...] = ("execute_bash",)
    ipython_tools: tuple[str, ...] = ("execute_ipython_cell",)
    # openhands (V0): false = the GUI server, which looks only after the last user message
    headless: bool = True
    # openhands_sdk: StuckDetectionThresholds and the scan window
    action_observation: int = 4
    action_error: int = 3
    monologue: int = 3
    alternating_pattern: int = 6
    window: int = 20
    # gemini: the tool check ...
    cycle_lengths: tuple[int, ...] = (1, 2, 3, 4, 5)
    cycle_repeats: int = 5
    tool_history: int = 25
    # ... and the content check
    chunk_size: int = 50
    content_threshold: int = 10
    max_average_distance: int = 250
    max_distinct_periods: int = 5
    content_buffer: int = 5000

    def __post_init__(self) -> None:
        at_least(self, 1, "action_observation", "action_error", "monologue", "window", "cycle_repeats",
                 "tool_history", "chunk_size", "max_average_distance", "max_distinct_periods", "content_buffer")
        at_least(self, 2, "content_threshold")  # an average distance needs two positions
        at_least(self, 3, "alternating_pattern")  # a[i] = a[i+2] needs three places
        for i, k in enumerate(self.cycle_lengths):
            if k < 1:
                raise SettingError(f"cycle_lengths[{i}]", f"expected an integer >= 1, got {k!r}")
