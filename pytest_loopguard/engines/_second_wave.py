"""The second wave's failure_tracker rules in one place: the requeries and the usage limits, as the engine hears them.

failure_tracker keeps one `SecondWave` per run when any of these settings is on (None otherwise, so the
presets before it pay one `is None` test per event) and hands it each event; the rules themselves live in
`_requery` (rejected replies, the blocklist, timeouts) and `_usage_limits` (tool retries, the tool-call
limit, call limits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core._model import Action, ToolCall, ToolResult, Verdict
from ._requery import Requery, check_requery_settings, requery_on
from ._usage_limits import UsageLimits, check_limit_settings, limits_on

if TYPE_CHECKING:
    from ..core._model import Rejected
    from ..core._runcontext import Turn

__all__ = ["SecondWave", "check_second_wave"]


def check_second_wave(settings: Any) -> None:
    """Raise SettingError naming the first bad value of the second wave's settings."""
    check_requery_settings(settings)
    check_limit_settings(settings)


class SecondWave:
    """One run's requery and usage-limit state (either part None when its settings are off)."""

    __slots__ = ("limits", "requery")

    def __init__(self, requery: Requery | None, limits: UsageLimits | None) -> None:
        self.requery = requery
        self.limits = limits

    @classmethod
    def of(cls, settings: Any) -> SecondWave | None:
        """The rules `settings` switch on for a new run; None when none is."""
        requery = Requery(settings) if requery_on(settings) else None
        limits = UsageLimits(settings) if limits_on(settings) else None
        return None if requery is None and limits is None else cls(requery, limits)

    def turn_start(self, turn: Turn) -> None:
        if self.requery is not None:
            self.requery.turn_start()
        if self.limits is not None:
            self.limits.turn_start(turn)

    def rejected(self, rejected: Rejected) -> list[Verdict]:
        if self.limits is not None:
            self.limits.rejected()
        stop = self.requery.rejected(rejected) if self.requery is not None else None
        return [] if stop is None else [stop]

    def before_call(self, call: ToolCall) -> list[Verdict] | None:
        # what the usage limits decided at the turn's start comes first: a call they stop is never checked
        # against the blocklist (the run ends before it)
        decided = self.limits.before_call() if self.limits is not None else None
        if decided and any(v.action is Action.STOP for v in decided):
            return decided
        blocked = self.requery.before_call(call) if self.requery is not None else None
        return [*decided, *blocked] if decided and blocked else decided or blocked

    def after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> list[Verdict] | None:
        requery = self.requery.after_call(result, blocked) if self.requery is not None else None
        limits = self.limits.after_call(call, result, blocked) if self.limits is not None else None
        if requery is None and limits is None:
            return None
        return [v for v in (requery, limits) if v is not None]

    def prompt(self) -> None:
        """A person's message: a new invocation for the call limits, a new run under `per_prompt_usage`."""
        if self.requery is not None and self.requery.settings.per_prompt_usage:
            self.requery.prompt()
        if self.limits is not None:
            self.limits.prompt()
