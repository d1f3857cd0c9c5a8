"""failure_tracker's settings: the fields a policy file may set (the rule is `engines/failure_tracker.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._second_wave import check_second_wave
from ..lru import DEFAULT_MAX_KEYS
from . import EngineSettings, at_least

__all__ = ["Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    turn_failure: Literal["single_call", "all_failed", "each_call"] = "all_failed"  # Cline: each_call
    max_failures: int | None = 3
    final_response_after_failure: bool = True
    max_repetitions: int | None = None  # qa-agent: 3
    target_keys: tuple[str, ...] = ("index",)
    max_steps: int | None = None  # turns; qa-agent 50, browser-use 500
    rejected_turns: Literal["failed", "ignore"] = "ignore"  # browser-use, qa-agent: failed
    # Cline: a turn in which no call ran (none, or all blocked) sets the failed-turn count to 0, leaves it
    # or adds 1; false: a failed call with an exit code is, for the failed-turn rules, a call that succeeded
    empty_turns: Literal["reset", "keep", "fail"] = "reset"
    exit_code_failures: bool = True
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
    rejected_warn_at: int | None = None  # default: warn at this many rejected turns in a row (never a stop)
    # default: the same (tool, verb, target) failing, other calls between (reset when it succeeds) / in a row
    failing_key_warn_at: int | None = None
    failing_key_streak_warn_at: int | None = None
    failures_warn_at: int | None = None  # default: a warning (again every as many) before the forced done
    # the second wave's requery rules (engines/_requery.py): mini-swe-agent, SWE-agent, Pydantic AI
    rejected_stop_at: int | None = None
    rejected_stop_reset: Literal["turn", "call", "never"] = "turn"
    rejected_stop_message: str = ""  # empty: a message of ours
    blocklist_tools: tuple[str, ...] = ()
    blocklist: tuple[str, ...] = ()  # command prefixes
    blocklist_standalone: tuple[str, ...] = ()  # whole commands
    block_unless_regex: Mapping[str, str] = field(default_factory=dict)  # command name -> regex it must match
    blocklist_message: str = "Operation '{action}' is not supported by this environment."
    timeout_markers: tuple[str, ...] = ()
    timeout_stop_at: int | None = None
    # the second wave's usage limits (engines/_usage_limits.py): Pydantic AI, LangChain
    tool_retries: int | None = None
    tool_calls_limit: int | None = None
    output_tools: tuple[str, ...] = ()
    per_prompt_usage: bool = False  # a user message starts the step, retry and usage counts afresh
    call_limits: tuple[Mapping[str, Any], ...] = ()  # {tool, thread_limit, run_limit, exit_behavior} each
    # per-key maps (exact, per-tool, no-progress, failing-key counts) keep at most this many keys, least
    # recently used evicted first (docs/engines.md, "Bounded state")
    max_keys: int = DEFAULT_MAX_KEYS

    def __post_init__(self) -> None:
        at_least(self, 1, "max_keys")
        check_second_wave(self)
