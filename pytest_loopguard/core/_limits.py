"""The documented bounds on every input: file size, nesting, strings, numbers and policy chains.

Every file pytest-loopguard reads comes from someone else's repository, so each bound here is checked at the
edge (the safe reader, the trace loader, the policy resolver, the scenario parser) and refused with a
one-line error naming the file and the field. docs/trace-format.md and docs/simulation.md list them; each has
a test at its edge in tests/core/test_limits.py.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "MAX_DEPTH",
    "MAX_EXTENDS",
    "MAX_FILE_BYTES",
    "MAX_GENERATED_CHARS",
    "MAX_INT",
    "MAX_INT_DIGITS",
    "MAX_LOG_BYTES",
    "MAX_NODES",
    "MAX_SCENARIO_COUNT",
    "MAX_SETTING",
    "MAX_SETTING_ITEMS",
    "MAX_STEPS",
    "MAX_STRING",
    "MAX_TURNS",
]

MAX_FILE_BYTES: Final = 32 * 1024 * 1024
"""A trace, scenario or policy file is at most 32 MiB (the largest calibration run is under 1 MiB)."""

MAX_LOG_BYTES: Final = 1024 * 1024 * 1024
"""An agent log that `loopguard import` reads is at most 1 GiB: an OpenHands `output.jsonl` of a whole
benchmark holds hundreds of runs in one file, far above a trace's 32 MiB."""

MAX_DEPTH: Final = 64
"""Mappings and lists nest at most 64 deep (a trace needs about 6; tool arguments may add a few)."""

MAX_NODES: Final = 2_000_000
"""At most 2,000,000 values per file counted with every alias expanded: bounds `&a [*b, *b, ...]` bombs."""

MAX_STEPS: Final = 100_000
"""A trace holds at most 100,000 steps (the calibration runs hold a few hundred); replaying that many takes
about 200 MB and seconds, not minutes."""

MAX_STRING: Final = 8 * 1024 * 1024
"""A single string (a tool result's text, say) is at most 8 Mi characters."""

MAX_INT: Final = 2**53
"""Every integer in a file is within ±2^53, the integers a JSON number holds exactly."""

MAX_INT_DIGITS: Final = 4_300
"""An integer in an agent log (which may exceed MAX_INT: ids, nanosecond times) has at most 4,300 digits,
Python's own bound on converting text to int; the safe reader checks the length before converting."""

MAX_SETTING: Final = 1_000_000_000
"""Every numeric engine setting (a threshold, window, count, delay or ratio) lies in [0, 10^9]."""

MAX_SETTING_ITEMS: Final = 1_000
"""A list-valued setting (poll words, marker phrases, periods, tool names) holds at most 1,000 items."""

MAX_EXTENDS: Final = 8
"""A preset `extends` chain is at most 8 presets long (the bundled ones use 2)."""

MAX_TURNS: Final = 1_000
"""A simulated run is at most 1,000 turns (a scenario's `max_turns`, its script's length): the frameworks the
presets model stop far sooner (qa-agent 50, browser-use 500), and no input may make the simulator loop longer.
A recorded trace's `max_turns` is only read (up to MAX_SETTING): its steps are what a replay walks."""

MAX_SCENARIO_COUNT: Final = 10_000
"""Every count in a scenario (attempts, repeats, turns, generated lines, polls, pages, files) is at most 10,000;
latencies in milliseconds are at most MAX_SETTING."""

MAX_GENERATED_CHARS: Final = 4 * 1024 * 1024
"""Text a scenario asks the simulators to generate (`{lines: N, width: W}` files) is at most 4 Mi characters."""
