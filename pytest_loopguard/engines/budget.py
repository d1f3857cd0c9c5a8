"""budget: the opt-in task envelope — counters, streaks, hard limits and phases (seed 002).

The envelope opens only when the run has a task (the trace's `task`; its `budget` mapping overrides the
settings for that run, by the same names). Without one the engine returns no verdict at all, so outputs
are unchanged. `phase` steps change the envelope's phase; `phase: done` closes it (no verdicts after).

Where each check runs, and why:

- `before_call` (needs only the call, and a block must come before the call runs): the call budget
  (`max_tool_calls`, hard: block, blocked calls counted too), wall time on the run's clock
  (`max_wall_ms`, hard: block), `allowed_domains` for navigations (hard: block), the same-tool streak
  (action calls only), the observation streak, same-URL navigations (per URL, for the whole task) and
  the checkpoint every `checkpoint_every_calls` calls.
- `after_call` (needs the result): the failure streak. A blocked call did not run: it neither extends
  nor ends the streak.

A soft budget beyond its limit (the limit+1-th and later) warns with `budget_status: exceeded`; the
first time a counter reaches ceil(`near_ratio` × limit) gives an informational `allow` verdict
`budget.near` (once per run for the call count and wall time, once per streak for a streak, once per URL
for navigations). Every verdict's data carries `budget_status` and `recommended_next`.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, final
from urllib.parse import urlsplit

from ..core._model import Action, ToolCall, ToolResult, Verdict
from ..core.hookspecs import hookimpl
from .base import Engine, per_settings
from .lru import LRUMap
from .settings.budget import Settings

if TYPE_CHECKING:
    from ..core._model import ToolCall
    from ..core._runcontext import RunContext

__all__ = ["ENGINE", "RECOMMENDED_NEXT", "Budget", "BudgetEvent", "Envelope", "Settings"]



# What the agent should do next, per budget (seed 002; the domain rule's entry is our choice).
RECOMMENDED_NEXT: Final[Mapping[str, str]] = MappingProxyType({
    "consecutive_same_tool": "change_strategy",
    "observation_streak": "change_strategy_or_verify",
    "failure_streak": "recover",
    "same_url_navigations": "change_strategy",
    "max_tool_calls": "finish",
    "max_wall_ms": "finish",
    "domain_not_allowed": "change_strategy",
    "checkpoint": "checkpoint",
})


@final
@dataclass(frozen=True, slots=True)
class BudgetEvent:
    """A meaningful event of the envelope: a phase change, a failed call, a navigation or a verdict."""

    kind: str  # phase | failure | navigation | verdict
    call: int  # calls made when it happened
    t: int  # run clock, ms
    detail: Mapping[str, Any]


@final
@dataclass(frozen=True, slots=True)
class Envelope:
    """A snapshot of the task envelope: what OpenChrome's `oc_task_get` returns."""

    objective: str
    phase: str
    open: bool
    limits: Settings
    counters: Mapping[str, Any]
    budget_status: str  # ok | near | exceeded
    recent_events: tuple[BudgetEvent, ...]


def _near_at(limit: int | None, ratio: float) -> int | None:
    """Where `near` is reported: ceil(ratio × limit), at least 1; None without a (positive) limit."""
    if limit is None or limit <= 0:
        return None
    # round first so that 0.8 × 5 (4.000000000000001 in floats) is 4, not 5
    return max(1, math.ceil(round(ratio * limit, 9)))


def _host(url: str) -> str:
    """The lower-cased host name of a URL; a URL written without a scheme (`example.com/a`) works too."""
    parts = urlsplit(url if "//" in url else "//" + url)
    return (parts.hostname or "").lower()


def _push(out: list[Verdict] | None, verdict: Verdict) -> list[Verdict]:
    """`out` with `verdict` appended; a new list when there was none yet."""
    if out is None:
        return [verdict]
    out.append(verdict)
    return out


class _Derived:
    """What a budget's settings alone decide, shared (read-only) by every run using those settings."""

    __slots__ = ("domains", "near_calls", "near_failures", "near_observations", "near_same_tool", "near_url",
                 "near_wall", "same_tool_exempt")

    def __init__(self, settings: Settings) -> None:
        ratio = settings.near_ratio
        self.near_calls = _near_at(settings.max_tool_calls, ratio)
        self.near_wall = _near_at(settings.max_wall_ms, ratio)
        self.near_same_tool = _near_at(settings.max_consecutive_same_tool, ratio)
        self.same_tool_exempt = frozenset(settings.same_tool_exempt)
        self.near_observations = _near_at(settings.max_observation_streak, ratio)
        self.near_failures = _near_at(settings.max_failure_streak, ratio)
        self.near_url = _near_at(settings.max_same_url_navigations, ratio)
        self.domains: tuple[str, ...] | None = (
            None if settings.allowed_domains is None
            else tuple(d.lower().strip(".") for d in settings.allowed_domains)
        )


_derived = per_settings(_Derived)  # a task's own budget makes new settings per run: derived for each

BudgetSettings = Settings  # the class attribute `Settings` below shadows the name inside the class


class Budget(Engine[BudgetSettings]):
    name = "budget"
    Settings = Settings
    # Every reason code this engine's verdicts carry (rule coverage lists the ones no trace exercises).
    REASONS = (
        "budget.max_tool_calls",
        "budget.max_wall_ms",
        "budget.observation_streak",
        "budget.consecutive_same_tool",
        "budget.same_url_navigations",
        "budget.domain_not_allowed",
        "budget.failure_streak",
        "budget.checkpoint",
        "budget.near",
    )

    def __init__(self, settings: BudgetSettings, run: RunContext) -> None:
        task = run.task
        if task is not None and task.budget:
            settings = dataclasses.replace(settings, **task.budget)
        super().__init__(settings, run)
        self._task = task
        self._open = task is not None and task.phase != "done"
        self._phase: str = task.phase if task is not None else ""
        self._opened_at: int = run.clock.now_ms
        # the call and time budgets and checkpoints are off in most policies: asked once here, not per call
        self._limits = settings.max_tool_calls is not None or settings.max_wall_ms is not None
        self._checkpoints = settings.checkpoint_every_calls
        fixed = _derived(settings)  # what the settings alone decide, worked out once per settings object
        self._near_calls = fixed.near_calls
        self._near_wall = fixed.near_wall
        self._near_same_tool = fixed.near_same_tool
        self._same_tool_exempt = fixed.same_tool_exempt
        self._near_observations = fixed.near_observations
        # the limits every call reads, as attributes of the engine's own (compiled, a settings read is a look-up
        # on a Python object; an engine attribute is a field)
        self._max_observation_streak = settings.max_observation_streak
        self._max_same_tool = settings.max_consecutive_same_tool
        self._near_failures = fixed.near_failures
        self._near_url = fixed.near_url
        self._wall_near_sent = False
        self._domains = fixed.domains
        self._calls = 0
        self._action_calls = 0
        self._observation_calls = 0
        self._failures = 0
        self._navigations: LRUMap[str, int] = LRUMap(settings.max_keys)  # per URL; LRU-capped
        self._same_tool: str | None = None
        self._same_tool_count = 0
        self._observation_streak = 0
        self._failure_streak = 0
        # (kind, call, t, detail): a BudgetEvent is built only when the envelope is read, since most
        # events are pushed out of the window unread
        self._events: deque[tuple[str, int, int, Mapping[str, Any]]] = deque(maxlen=max(settings.recent_events, 0))

    # ---- public state ------------------------------------------------------------------------------
    def state(self, call: ToolCall | None) -> dict[str, Any]:
        """The envelope's counters now (nothing when the run has no task envelope)."""
        if self._task is None:
            return {}
        return {"phase": self._phase, "calls": self._calls, "same_tool": self._same_tool,
                "same_tool_count": self._same_tool_count, "observation_streak": self._observation_streak,
                "failure_streak": self._failure_streak, "failures": self._failures}

    @property
    def envelope(self) -> Envelope | None:
        """The envelope's state (None when the run has no task): counters, phase, recent events."""
        if self._task is None:
            return None
        return Envelope(
            objective=self.run.objective or self._task.objective,
            phase=self._phase,
            open=self._open,
            limits=self.settings,
            counters=MappingProxyType({
                "calls": self._calls,
                "action_calls": self._action_calls,
                "observation_calls": self._observation_calls,
                "failures": self._failures,
                "wall_ms": self._elapsed(),
                "navigations": MappingProxyType(dict(self._navigations)),
                "consecutive_same_tool": self._same_tool_count,
                "observation_streak": self._observation_streak,
                "failure_streak": self._failure_streak,
            }),
            budget_status=self._status(),
            recent_events=tuple(BudgetEvent(*event) for event in self._events),
        )

    def _elapsed(self) -> int:
        return self.run.clock.now_ms - self._opened_at

    def _status(self) -> str:
        """The envelope's status now: exceeded if any counter is beyond its limit, near if any is near."""
        s = self.settings
        pairs: list[tuple[int, int | None, int | None]] = [
            (self._calls, s.max_tool_calls, self._near_calls),
            (self._elapsed(), s.max_wall_ms, self._near_wall),
            (self._same_tool_count, s.max_consecutive_same_tool, self._near_same_tool),
            (self._observation_streak, s.max_observation_streak, self._near_observations),
            (self._failure_streak, s.max_failure_streak, self._near_failures),
            (max(self._navigations.values(), default=0), s.max_same_url_navigations, self._near_url),
        ]
        status = "ok"
        for count, limit, near in pairs:
            if limit is not None and count > limit:
                return "exceeded"
            if near is not None and count >= near:
                status = "near"
        return status

    # ---- hooks -------------------------------------------------------------------------------------
    @hookimpl
    def loopguard_before_call(self, call: ToolCall, result: ToolResult | None) -> list[Verdict] | None:
        # every argument of the event, in the contract's order: the Guard then calls these methods directly
        if not self._open:
            return None
        s = self.settings
        self._calls += 1
        calls = self._calls
        out: list[Verdict] | None = None  # most calls get no verdict: a list only for one that does

        if self._limits:
            out = self._limit_verdicts(calls)
        kind = self.run.kind(call)
        if kind == "observation":
            self._observation_calls += 1
            self._same_tool, self._same_tool_count = None, 0
            self._observation_streak += 1
            n, limit = self._observation_streak, self._max_observation_streak
            if limit is not None and n > limit:
                out = _push(out, self._verdict(
                    Action.WARN, "observation_streak", n, limit,
                    f"Budget exceeded: {n} observation calls in a row (limit {limit}). Change strategy, "
                    "or verify what you have observed.",
                ))
            elif n == self._near_observations:
                out = _push(out, self._near("observation_streak", n, limit, f"{n} observation calls in a row"))
        else:
            self._action_calls += 1
            self._observation_streak = 0
            if call.tool in self._same_tool_exempt:
                self._same_tool, self._same_tool_count = None, 0
            elif call.tool == self._same_tool:
                self._same_tool_count += 1
            else:
                self._same_tool, self._same_tool_count = call.tool, 1
            n, limit = self._same_tool_count, self._max_same_tool
            if limit is not None and n > limit:
                out = _push(out, self._verdict(
                    Action.WARN, "consecutive_same_tool", n, limit,
                    f"Budget exceeded: {call.tool!r} called {n} times in a row (limit {limit}). "
                    "Change strategy.",
                    tool=call.tool,
                ))
            elif n == self._near_same_tool:
                out = _push(out, self._near("consecutive_same_tool", n, limit,
                                            f"{call.tool!r} {n} times in a row", tool=call.tool))
            if kind == "navigation":
                url = call.args.get(s.url_arg)
                if isinstance(url, str):
                    for verdict in self._navigation(url):
                        out = _push(out, verdict)

        every = self._checkpoints
        if every and calls % every == 0:
            out = _push(out, self._verdict(
                Action.ALLOW, "checkpoint", calls, every,
                f"Checkpoint after {calls} calls: record your progress toward the objective: "
                f"{self.run.objective or (self._task.objective if self._task else '')}",
                status=self._status(),
            ))
        return out

    def _limit_verdicts(self, calls: int) -> list[Verdict] | None:
        """The call and time budgets' verdicts on call number `calls` (a policy with either set)."""
        s = self.settings
        out: list[Verdict] | None = None
        if s.max_tool_calls is not None:
            if calls > s.max_tool_calls:
                out = _push(out, self._verdict(
                    Action.BLOCK, "max_tool_calls", calls, s.max_tool_calls,
                    f"Tool call budget exhausted: this is call {calls} of a task allowed {s.max_tool_calls}. "
                    "Finish with what you have.",
                ))
            elif calls == self._near_calls:
                out = _push(out, self._near("max_tool_calls", calls, s.max_tool_calls, f"{calls} tool calls"))
        if s.max_wall_ms is not None:
            elapsed = self._elapsed()
            if elapsed > s.max_wall_ms:
                out = _push(out, self._verdict(
                    Action.BLOCK, "max_wall_ms", elapsed, s.max_wall_ms,
                    f"Time budget exhausted: {elapsed} ms elapsed of the task's {s.max_wall_ms} ms. "
                    "Finish with what you have.",
                ))
            elif self._near_wall is not None and elapsed >= self._near_wall and not self._wall_near_sent:
                self._wall_near_sent = True
                out = _push(out, self._near("max_wall_ms", elapsed, s.max_wall_ms, f"{elapsed} ms elapsed"))
        return out

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> Verdict | None:
        if not self._open or blocked or result is None:
            return None
        if result.ok:
            self._failure_streak = 0
            return None
        self._failures += 1
        self._failure_streak += 1
        self._event("failure", {"error": result.error or ""})
        n, limit = self._failure_streak, self.settings.max_failure_streak
        if limit is not None and n > limit:
            return self._verdict(
                Action.WARN, "failure_streak", n, limit,
                f"Budget exceeded: {n} failed calls in a row (limit {limit}). Recover before going on: "
                "find out why the calls fail.",
            )
        if n == self._near_failures:
            return self._near("failure_streak", n, limit, f"{n} failed calls in a row")
        return None

    @hookimpl
    def loopguard_phase(self, phase: str) -> None:
        if not self._open:
            return
        self._event("phase", {"from": self._phase, "to": phase})
        self._phase = phase
        if phase == "done":
            self._open = False

    # ---- rules -------------------------------------------------------------------------------------
    def _navigation(self, url: str) -> list[Verdict]:
        s = self.settings
        out: list[Verdict] = []
        self._event("navigation", {"url": url})
        n = self._navigations.get(url, 0) + 1
        self._navigations[url] = n
        limit = s.max_same_url_navigations
        if limit is not None and n > limit:
            out.append(self._verdict(
                Action.WARN, "same_url_navigations", n, limit,
                f"Budget exceeded: navigated to {url} {n} times (limit {limit}). Change strategy.",
                url=url,
            ))
        elif n == self._near_url:
            out.append(self._near("same_url_navigations", n, limit, f"{n} navigations to {url}", url=url))
        if self._domains is not None:
            host = _host(url)
            if not host or not any(host == d or host.endswith("." + d) for d in self._domains):
                out.append(self._verdict(
                    Action.BLOCK, "domain_not_allowed", n, None,
                    f"Navigation to {host or url!r} is outside the task's allowed domains "
                    f"({', '.join(self._domains) or 'none'}).",
                    url=url, host=host,
                ))
        return out

    def _near(self, budget: str, count: int, limit: int | None, what: str, **extra: Any) -> Verdict:
        return self._verdict(Action.ALLOW, budget, count, limit, f"Budget near its limit: {what} (limit {limit}).",
                             status="near", reason="budget.near", **extra)

    def _verdict(
        self, action: Action, budget: str, count: int, limit: int | None, message: str, *,
        status: str = "exceeded", reason: str | None = None, **extra: Any,
    ) -> Verdict:
        code = reason or f"budget.{budget}"
        data = {
            "budget": budget, "count": count, "limit": limit, "budget_status": status,
            "recommended_next": RECOMMENDED_NEXT[budget], "phase": self._phase, **extra,
        }
        self._event("verdict", {"action": action, "reason": code, "budget": budget})
        return Verdict(self.name, action, code, message, data)

    def _event(self, kind: str, detail: Mapping[str, Any]) -> None:
        self._events.append((kind, self._calls, self.run.clock.now_ms, detail))


ENGINE = Budget
