"""loop_guard's settings: the fields a policy file may set (the rule is `engines/loop_guard.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...core._identity import IdentityMode
from ...core._model import Action
from ..lru import DEFAULT_MAX_KEYS
from . import EngineSettings, SettingError, at_least

__all__ = ["Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    """The loop guard's thresholds; presets set them from PRESETS.md (docs/engines.md has the table)."""

    identity: IdentityMode = "canonical"
    warn_at: int | None = 3  # None: no warning stage (Roo, Goose)
    block_at: int | None = 5  # None: never blocks on the consecutive count (Goose out of the box)
    # default: the same call made this often in a row, blocked ones included, ends the run: an agent that
    # ignores every block would otherwise repeat a blocked call forever (its turns do not fail: nothing ran);
    # only once the call has been blocked (a count past `block_at`). With `block_at: null` (Cline, OpenCode)
    # the call that brings the count to `stop_at` is stopped before it runs, no block first
    stop_at: int | None = None
    # the consecutive stop's message ({tool}, {count}); None: ours, which names the block before it when
    # there is a block stage
    stop_message: str | None = None
    # the consecutive warning only on the call whose count equals `warn_at` (Cline's `=== 3`), not on the
    # later calls of the streak
    warn_exact: bool = False
    warn_message: str = "Warning: tool '{tool}' has been called {count} times with identical parameters. " \
        "Consider a different approach."
    # top-level argument names left out of the identity (Cline's `task_progress`)
    ignore_args: tuple[str, ...] = ()
    # `turn`: the consecutive count lives within one model response and starts again at every turn
    # (OpenCode's doom_loop reads the current assistant message's parts only)
    count_scope: Literal["run", "turn"] = "run"
    # CrewAI: a call identical to the last call that ran and did not fail is blocked (`block_message`)
    block_repeat_of_last_success: bool = False
    reset_after_block: bool = False  # Roo: a block forgets the current identity and its count
    # calls invisible to the engine: {tool: NAME, when: {arg: value}}; Roo's scroll actions
    exempt: tuple[Mapping[str, Any], ...] = ()
    # what the agent is told at a consecutive block; {tool} and {count} are filled in
    block_message: str = (
        "Blocked: tool '{tool}' called {count} times with identical parameters. "
        "Try a different approach or different parameters."
    )
    warn_action: Literal[Action.WARN, Action.BLOCK] = Action.WARN  # Spacebot skips the call on a warning: block
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
    # per-identity maps (outcome counts, poisoned identities, ping-pong warnings) keep at most this
    # many keys, least recently used evicted first (docs/engines.md, "Bounded state")
    max_keys: int = DEFAULT_MAX_KEYS
    # ---- what a repeated call achieved (engines/_progress.py; on in `default` only) ------------------------
    # an identical call whose result differs from the previous one's is progress, not repetition
    result_aware: bool = False
    poll_gap_ms: int | None = None  # an identical call this long after the previous one: the agent waited
    progress_warn_at: int | None = None  # a streak whose results change: a warning at this many calls ...
    progress_block_at: int | None = None  # ... and blocks from this many (calls that waited not counted)
    poll_warn_at: int | None = 100  # the same, for a tool declared `poll` or `paged` in the tool table
    poll_block_at: int | None = 200
    poll_warn_ms: int | None = None  # ... or once it has lasted this long on the run's clock
    poll_block_ms: int | None = None
    poll_idle_warn_at: int | None = 10  # a tool declared `poll`: calls in a row without a changed result
    poll_idle_block_at: int | None = 20
    unchanged_output_warn_at: int | None = None  # the same check's same output across edits, this many runs

    def __post_init__(self) -> None:
        at_least(self, 1, "warn_at", "block_at", "stop_at", "poll_multiplier", "ring_size", "ping_pong_detect_repeats",
                 "ping_pong_min_repeats", "outcome_prefix_bytes")
        at_least(self, 1, "max_keys", "poll_gap_ms", "poll_warn_at", "poll_block_at", "poll_warn_ms", "poll_block_ms",
                 "poll_idle_warn_at", "poll_idle_block_at", "progress_warn_at", "progress_block_at")
        at_least(self, 2, "unchanged_output_warn_at")
        at_least(self, 0, "max_warnings_per_call", "outcome_block_threshold")
        action: object = self.warn_action
        if type(action) is not Action:  # a plain name, from code (a policy file's is the member already)
            if not isinstance(action, str) or action not in (Action.WARN, Action.BLOCK):
                raise SettingError("warn_action", f"expected one of 'warn', 'block', got {action!r}")
            object.__setattr__(self, "warn_action", Action(action))
        for name in ("block_message", "warn_message", "stop_message"):
            text = getattr(self, name)
            try:
                if text is not None:
                    text.format(tool="t", count=1)
            except (KeyError, IndexError, ValueError) as exc:
                raise SettingError(name, f"expected a text with only {{tool}} and {{count}}: {exc!r}") from None
        for i, arg in enumerate(self.ignore_args):
            if not arg:
                raise SettingError(f"ignore_args[{i}]", "expected an argument name, got ''")
        for i, rule in enumerate(self.exempt):
            tool = rule.get("tool")
            if not isinstance(tool, str) or not tool:
                raise SettingError(f"exempt[{i}].tool", f"expected a tool name, got {tool!r}")
            when = rule.get("when")
            if when is not None and not isinstance(when, Mapping):
                raise SettingError(f"exempt[{i}].when", f"expected a mapping of argument values, got {when!r}")
            unknown = set(rule) - {"tool", "when"}
            if unknown:
                raise SettingError(f"exempt[{i}]", f"unknown key(s) {sorted(unknown)}; expected tool, when")
