"""failure_tracker's requery rules: a limit on rejected replies, SWE-agent's command blocklist and its command timeouts.

- rejected replies (`rejected_stop_at`): each `rejected` step adds 1 to a count, and so does a call the
  blocklist blocks; the step that brings it to `rejected_stop_at` stops the run
  (`failure_tracker.rejected_limit`). The count goes back to 0 at every turn's start (`rejected_stop_reset:
  turn`, mini-swe-agent's "any clean step"), after every call that ran (`call`, SWE-agent's requeries per
  agent step), or only at a user message when `per_prompt_usage` is on (`never`, Pydantic AI's output
  retries per run);
- the blocklist (`blocklist_tools`): SWE-agent's `should_block_action` on the stripped `command` argument
  (prefixes, standalone commands, commands allowed only with a matching regex) blocks the call
  (`failure_tracker.blocklist`);
- command timeouts (`timeout_stop_at`): calls that ran whose result text holds a `timeout_markers` entry, in
  a row; the one that brings the streak to `timeout_stop_at` stops the run (`failure_tracker.timeouts`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from ..core._model import Action, ToolCall, ToolResult, Verdict
from .base import SettingError, at_least

if TYPE_CHECKING:
    from ..core._model import Rejected

__all__ = ["Requery", "blocklist_patterns", "check_requery_settings", "requery_on"]

_NAME: Final = "failure_tracker"  # the engine whose verdicts these are
# the compiled `block_unless_regex` of each settings object (id -> (settings, patterns)): settings are
# immutable and shared by the runs of a policy, so each compiles once
_PATTERNS: dict[int, tuple[Any, dict[str, re.Pattern[str]]]] = {}


def requery_on(settings: Any) -> bool:
    """Whether any rule of this module is on under `settings` (failure_tracker's)."""
    return (settings.rejected_stop_at is not None or bool(settings.blocklist_tools)
            or settings.timeout_stop_at is not None)


def check_requery_settings(settings: Any) -> None:
    """Raise SettingError naming the first bad value of this module's settings."""
    at_least(settings, 1, "rejected_stop_at", "timeout_stop_at")
    for name, pattern in settings.block_unless_regex.items():
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SettingError(f"block_unless_regex.{name}",
                               f"expected a regular expression, got {pattern!r} ({exc})") from None
    for name in ("timeout_markers", "blocklist", "blocklist_standalone"):
        if any(not entry for entry in getattr(settings, name)):
            # an empty marker is in every text, an empty prefix starts every command: never what was meant
            raise SettingError(name, "expected non-empty strings, got ''")


def blocklist_patterns(settings: Any) -> dict[str, re.Pattern[str]]:
    """`block_unless_regex` compiled, once per settings object (checked when the settings were made)."""
    hit = _PATTERNS.get(id(settings))
    if hit is not None and hit[0] is settings:
        return hit[1]
    if len(_PATTERNS) >= 64:
        _PATTERNS.clear()
    patterns = {name: re.compile(p) for name, p in settings.block_unless_regex.items()}
    _PATTERNS[id(settings)] = (settings, patterns)
    return patterns


class Requery:
    """One run's rejected-reply count, blocklist and timeout streak (see the module docstring)."""

    __slots__ = ("_blocklist_tools", "_patterns", "_prefixes", "_standalone", "count", "settings", "timeouts")

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.count = 0  # rejected replies and blocklisted calls since the last reset
        self.timeouts = 0  # calls that timed out in a row
        self._blocklist_tools = frozenset(settings.blocklist_tools)
        self._prefixes = tuple(settings.blocklist)
        self._standalone = frozenset(settings.blocklist_standalone)
        self._patterns = blocklist_patterns(settings) if settings.block_unless_regex else {}

    # ---- events ----------------------------------------------------------------------------------------
    def turn_start(self) -> None:
        if self.settings.rejected_stop_reset == "turn":
            self.count = 0  # the harness accepted a response

    def prompt(self) -> None:
        """A user message under `per_prompt_usage`: a new run, whose `never`-reset count starts afresh."""
        if self.settings.rejected_stop_reset == "never":
            self.count = 0

    def rejected(self, rejected: Rejected) -> Verdict | None:
        return self._requeried(f"the harness rejected the reply ({rejected.reason})")

    def before_call(self, call: ToolCall) -> list[Verdict] | None:
        if call.tool not in self._blocklist_tools:
            return None
        command = call.args.get("command")
        action = command.strip() if isinstance(command, str) else ""
        if not action or not self._blocked(action):
            return None
        block = Verdict(
            _NAME, Action.BLOCK, "failure_tracker.blocklist",
            self.settings.blocklist_message.replace("{action}", action),
            {"tool": call.tool, "command": action[:200]},
        )
        stop = self._requeried(f"'{action[:80]}' is on the blocklist")
        return [block] if stop is None else [block, stop]

    def after_call(self, result: ToolResult | None, blocked: bool) -> Verdict | None:
        if blocked:
            return None  # a blocked call ran nothing: no reset, no timeout, no end to a streak
        s = self.settings
        if s.rejected_stop_reset == "call":
            self.count = 0
        if s.timeout_stop_at is None:
            return None
        text = result.result_text if result is not None else None
        if not text or not any(marker in text for marker in s.timeout_markers):
            self.timeouts = 0
            return None
        self.timeouts += 1
        if self.timeouts < s.timeout_stop_at:
            return None
        return Verdict(
            _NAME, Action.STOP, "failure_tracker.timeouts",
            f"Exit due to multiple consecutive command timeouts: {self.timeouts} commands in a row timed out.",
            {"count": self.timeouts, "stop_at": s.timeout_stop_at},
        )

    # ---- rules -----------------------------------------------------------------------------------------
    def _blocked(self, action: str) -> bool:
        """SWE-agent's `should_block_action` on a stripped, non-empty command."""
        if action.startswith(self._prefixes) or action in self._standalone:
            return True
        pattern = self._patterns.get(action.split()[0]) if self._patterns else None
        return pattern is not None and pattern.search(action) is None

    def _requeried(self, why: str) -> Verdict | None:
        """One more requery; the stop when it brings the count to `rejected_stop_at`."""
        s = self.settings
        if s.rejected_stop_at is None:
            return None
        self.count += 1
        if self.count < s.rejected_stop_at:
            return None
        when = "in this prompt" if s.rejected_stop_reset == "never" else "in a row"
        message = s.rejected_stop_message or f"Stopped: {self.count} replies {when} could not be used; the last: {why}."
        return Verdict(_NAME, Action.STOP, "failure_tracker.rejected_limit", message,
                       {"count": self.count, "stop_at": s.rejected_stop_at, "reset": s.rejected_stop_reset})
