"""loop_guard: consecutive identical calls, poll calls, ping-pong and poisoned outcomes (seed 000; Roo, Goose)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core._identity import FLAT_SAME_AS, IDENTITIES, is_flat
from ..core._model import Action, Verdict
from ..core.hookspecs import hookimpl
from ._lruops import increment
from ._progress import StreakProgress, UnchangedOutput
from ._textkey import SAMPLED, TextKey
from .base import Engine, per_settings
from .lru import LRUMap
from .settings.loop_guard import Settings

if TYPE_CHECKING:
    from ..core._model import Message, ToolCall, ToolResult
    from ..core._runcontext import RunContext, Turn

__all__ = ["ENGINE", "LoopGuard", "Settings"]



NAME = "loop_guard"
_TURN_START = frozenset({"loopguard_turn_start"})  # what idle_hooks names when the count spans the run


class _Derived:
    """What a loop_guard's settings alone decide, shared (read-only) by every run using those settings."""

    __slots__ = ("exempt", "first_threshold", "flat_same_as_ordered", "identity_text", "ignore_args", "mode_text",
                 "ordered", "period_needs", "poll_shell_tools", "poll_words")

    def __init__(self, settings: Settings) -> None:
        mode = settings.identity
        # canonical and ordered are precomputed on every call; the other modes are computed by the engine,
        # only for the policies that use them, and only for arguments where they differ from both
        # (FLAT_SAME_AS)
        self.identity_text = None if mode in ("canonical", "ordered") else IDENTITIES[mode]
        self.flat_same_as_ordered = FLAT_SAME_AS.get(mode) == "ordered"
        self.ordered = mode == "ordered"
        self.mode_text = IDENTITIES[mode]
        self.ignore_args = frozenset(settings.ignore_args)
        exempt: dict[str, list[Mapping[str, Any]]] = {}
        for rule in settings.exempt:
            exempt.setdefault(rule["tool"], []).append(rule.get("when") or {})
        self.exempt: Mapping[str, Sequence[Mapping[str, Any]]] = exempt
        self.poll_words = tuple(w.lower() for w in settings.poll_words)
        self.poll_shell_tools = frozenset(settings.poll_shell_tools)
        # (index, period, matches needed) per ping-pong period: a period's last `window` calls repeat once
        # `window - period` newest entries match; a period below 2 never counts (one identity over and
        # over is consecutive)
        periods = [p for p in settings.ping_pong_periods if p >= 2] if settings.ping_pong else []
        self.period_needs = tuple((j, p, p * (settings.ping_pong_detect_repeats - 1)) for j, p in enumerate(periods))
        # no consecutive verdict below the lowest threshold (a poll multiplier only raises them), so the
        # count of most calls is compared once
        thresholds = [t for t in (settings.warn_at, settings.block_at, settings.stop_at) if t is not None]
        self.first_threshold = min(thresholds) if thresholds else None


_derived = per_settings(_Derived)


LoopGuardSettings = Settings  # the class attribute `Settings` below shadows the name inside the class


class LoopGuard(Engine[LoopGuardSettings]):
    """Counts consecutive identical calls, spots alternations in a ring of recent calls and poisons
    identities that keep producing the same result.

    Only the current identity's consecutive and warning counts are kept: a call with another identity
    resets them all (Spacebot clears its maps), so one triple says everything. Ping-pong warning counts
    and outcome counts are per identity and survive that reset; everything goes at a user message.
    """

    name = NAME
    Settings = Settings
    # Every reason code this engine's verdicts carry (rule coverage lists the ones no trace exercises).
    REASONS = (
        "loop_guard.consecutive_warning",
        "loop_guard.consecutive_block",
        "loop_guard.ping_pong_warning",
        "loop_guard.ping_pong",
        "loop_guard.identical_outcome",
        "loop_guard.warnings_exhausted",
        "loop_guard.consecutive_stop",
        "loop_guard.poll_budget_warning",
        "loop_guard.poll_budget",
        "loop_guard.unchanged_output",
    )

    def __init__(self, settings: LoopGuardSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        fixed = _derived(settings)  # what the settings alone decide, worked out once per settings object
        self._identity_text = fixed.identity_text
        self._flat_same_as_ordered = fixed.flat_same_as_ordered
        self._ordered = fixed.ordered
        self._exempt = fixed.exempt
        self._ignore_args = fixed.ignore_args
        self._mode_text = fixed.mode_text
        self._poll_words = fixed.poll_words
        self._poll_shell_tools = fixed.poll_shell_tools
        # the identities of the last `ring_size` calls and the calls themselves: whether a call is a poll or
        # an observation is asked only when a rule needs it (a count at a threshold, a periodic ring),
        # from the call, so no per-identity map is kept for it
        self._ring: deque[str] = deque(maxlen=settings.ring_size)
        self._ring_calls: deque[ToolCall] = deque(maxlen=settings.ring_size)
        # per ping-pong period p: how many newest ring entries in a row equal the entry p before them,
        # kept as calls arrive so a periodic tail is measured without rescanning the ring (`_Derived.period_needs`)
        self._period_needs = fixed.period_needs
        self._runs = [0] * len(fixed.period_needs)
        self._first_threshold = fixed.first_threshold
        self._outcome_threshold = settings.outcome_block_threshold
        self._outcome_prefix = settings.outcome_prefix_bytes
        self._current: str | None = None
        self._consecutive = 0
        self._warnings = 0
        self._ping_pong_warnings: LRUMap[str, int] = LRUMap(settings.max_keys)
        self._outcomes: LRUMap[TextKey | tuple[str, str | bytes], int] = LRUMap(settings.max_keys)
        self._poisoned: LRUMap[str, int] = LRUMap(settings.max_keys)  # identity -> the outcome count that poisoned it
        self._last_poisoned: tuple[str, int, Verdict] | None = None  # (tool, count, the block built for them)
        # the last identity computed and its call: after_call reads the one before_call computed
        self._last_call: ToolCall | None = None
        self._last_identity = ""
        # the identity of the last call that ran and did not fail (block_repeat_of_last_success)
        self._track_success = settings.block_repeat_of_last_success
        self._last_success: str | None = None
        # what repeated calls achieved (engines/_progress.py): None when neither the settings nor the tool
        # table ask for it, so the published presets' runs never pay for it
        self._progress = (
            StreakProgress(settings, run)
            if settings.result_aware or settings.poll_gap_ms is not None or run.classifier.declares_repeat
            else None
        )
        self._unchanged = UnchangedOutput(settings, run) if settings.unchanged_output_warn_at is not None else None
        self._watching = self._progress is not None or self._unchanged is not None
        self._declares_repeat = run.classifier.declares_repeat
        # whether a call can be exempt at all (an `exempt` rule, or a tool table declaring `repeat: exempt`,
        # which turns `_progress` on): asked once here, not per call
        self._check_exempt = bool(self._exempt) or self._declares_repeat

    # ---- identity ----------------------------------------------------------------------------------
    def _identity(self, call: ToolCall) -> str:
        if call is self._last_call:
            return self._last_identity
        text = self._identity_text
        if self._ignore_args and not self._ignore_args.isdisjoint(call.args):
            # the identity of the arguments without the ignored ones, written as the mode writes any call's
            # (on flat arguments that is the text of the precomputed fingerprints the branches below read)
            kept = {k: v for k, v in call.args.items() if k not in self._ignore_args}
            identity = call.tool + "\x1f" + self._mode_text(kept)
        elif text is None:
            identity = call.ordered_fingerprint if self._ordered else call.fingerprint
        elif is_flat(call.args):
            identity = call.ordered_fingerprint if self._flat_same_as_ordered else call.fingerprint
        else:
            identity = call.tool + "\x1f" + text(call.args)
        self._last_call, self._last_identity = call, identity
        return identity

    def _is_exempt(self, call: ToolCall) -> bool:
        conditions = self._exempt.get(call.tool)
        # or declared `repeat: exempt` in the tool table (a table without declarations is never asked)
        declared = self._declares_repeat and self.run.classifier.repeat(call) == "exempt"
        if conditions is None:
            return declared
        args = call.args
        return declared or any(all(args.get(k) == v for k, v in when.items()) for when in conditions)

    def _observation(self, call: ToolCall) -> bool:
        return self.run.kind(call) == "observation"

    def _poll(self, call: ToolCall) -> bool:
        """An observation, or a short shell command with a poll word: its thresholds are multiplied."""
        if self._observation(call):
            return True
        if call.tool not in self._poll_shell_tools:
            return False
        text = call.ordered
        if len(text) >= self.settings.poll_max_chars:
            return False
        lowered = text.lower()
        return any(word in lowered for word in self._poll_words)

    def state(self, call: ToolCall | None) -> dict[str, Any]:
        """The identity being counted, how many calls in a row had it and the warnings given for it."""
        return {"identity": self._current, "consecutive": self._consecutive, "warnings": self._warnings}

    # ---- hooks -------------------------------------------------------------------------------------
    @hookimpl
    def loopguard_before_call(self, call: ToolCall, result: ToolResult | None) -> Verdict | None:
        # every argument of the event, in the contract's order: the Guard then calls this method directly
        if self._check_exempt and self._is_exempt(call):
            return None  # invisible: the current identity and its count stay as they were
        identity = self._identity(call)
        # the ring holds every call the agent made, blocked ones included
        ring = self._ring
        ring.append(identity)
        self._ring_calls.append(call)
        periodic = False
        if self._period_needs:
            n, runs = len(ring), self._runs
            for j, period, need in self._period_needs:
                run = runs[j] = runs[j] + 1 if n > period and ring[-1 - period] == identity else 0
                # only matches still inside the ring count: a full ring dropped the oldest ones a run counted
                if run >= need and n - period >= need:
                    periodic = True

        if self._poisoned:
            poisoned_at = self._poisoned.get(identity)
            if poisoned_at is not None:
                return self._poisoned_verdict(call.tool, poisoned_at)

        if identity != self._current:
            self._current = identity
            self._consecutive = 0
            self._warnings = 0
            if self._progress is not None:
                self._progress.restart()
        self._consecutive += 1
        progress = self._progress
        if self._last_success is not None and identity == self._last_success:
            return self._repeat_block(call.tool)
        if progress is not None:
            verdict = self._progress_verdict(progress, call)
            if verdict is not None:
                return verdict
        else:
            first = self._first_threshold
            if first is not None and self._consecutive >= first:
                verdict = self._consecutive_verdict(call)
                if verdict is not None:
                    return verdict
        if periodic:
            return self._ping_pong(identity, call.tool)
        return None

    def _progress_verdict(self, progress: StreakProgress, call: ToolCall) -> Verdict | None:
        """The consecutive rule and the poll budget, for a streak judged by what its calls achieved."""
        if progress.before():  # the agent waited since the previous identical call: polling
            self._consecutive = 1
            self._warnings = 0
        # a table that declares no repetition is not asked (its answer is None)
        declared = self.run.classifier.repeat(call) if self._declares_repeat else None
        progressed = progress.progressed
        if progressed or declared == "poll":  # the poll budget holds only a streak that is a poll
            multiplier = self.settings.poll_multiplier if progressed and self._poll(call) else 1
            verdict = progress.budget_verdict(call, declared, multiplier)
            if verdict is not None:
                return verdict
        if declared == "poll":  # expected to repeat: held to calls without a changed result (openclaw's)
            return self._idle_poll_verdict(call)
        first = self._first_threshold
        if first is not None and self._consecutive >= first:
            return self._consecutive_verdict(call, progress.progressed)
        return None

    def _idle_poll_verdict(self, call: ToolCall) -> Verdict | None:
        s = self.settings
        idle = self._consecutive
        data = {"tool": call.tool, "count": idle, "warn_at": s.poll_idle_warn_at, "block_at": s.poll_idle_block_at}
        if s.poll_idle_block_at is not None and idle >= s.poll_idle_block_at:
            return Verdict(
                NAME, Action.BLOCK, "loop_guard.poll_budget",
                f"Blocked: poll tool '{call.tool}' returned the same result {idle} times in a row. The polled "
                "work is not progressing; stop polling and try a different approach.",
                data,
            )
        if s.poll_idle_warn_at is not None and idle == s.poll_idle_warn_at:
            return Verdict(
                NAME, Action.WARN, "loop_guard.poll_budget_warning",
                f"Warning: poll tool '{call.tool}' returned the same result {idle} times in a row. Consider "
                "whether the polled work is stuck.",
                data,
            )
        return None

    def _poisoned_verdict(self, tool: str, poisoned_at: int) -> Verdict:
        # a poisoned call is usually retried as it is: the last block, a frozen value of only these two and
        # the settings, serves again rather than being built again
        last = self._last_poisoned
        if last is not None and last[0] == tool and last[1] == poisoned_at:
            return last[2]
        verdict = Verdict(
            NAME, Action.BLOCK, "loop_guard.identical_outcome",
            f"Blocked: tool '{tool}' returned the same result {poisoned_at} times for identical parameters. "
            "Calling it again will not change the result; try a different approach.",
            {"tool": tool, "outcome_count": poisoned_at, "threshold": self.settings.outcome_block_threshold},
        )
        self._last_poisoned = (tool, poisoned_at, verdict)
        return verdict

    def _consecutive_verdict(self, call: ToolCall, polling: bool = False) -> Verdict | None:
        """The consecutive rule's verdict for the current identity's count, if it reached a threshold.
        `polling`: the streak made progress (engines/_progress.py), so it is held to the poll thresholds."""
        s = self.settings
        tool, poll = call.tool, polling or self._poll(call)
        count = self._consecutive
        multiplier = s.poll_multiplier if poll else 1
        block_at = s.block_at * multiplier if s.block_at is not None else None
        # a stop only once the call was blocked before (count past block_at): "called again after a block";
        # without a block stage, at the count itself (Cline, OpenCode)
        if s.stop_at is not None and (count > block_at if block_at is not None else True) \
                and count >= s.stop_at * multiplier:
            return self._stop(tool, count, s.stop_at * multiplier, poll, blocked_first=block_at is not None)
        if block_at is not None and count >= block_at:
            if s.reset_after_block:  # Roo resets its detector after refusing a call
                self._forget_current()
            return Verdict(
                NAME, Action.BLOCK, "loop_guard.consecutive_block", s.block_message.format(tool=tool, count=count),
                {"tool": tool, "count": count, "threshold": block_at, "poll": poll},
            )
        warn_at = s.warn_at * multiplier if s.warn_at is not None else None
        if warn_at is not None and count >= warn_at and (count == warn_at or not s.warn_exact):
            self._warnings += 1
            data = {"tool": tool, "count": count, "threshold": warn_at, "block_at": block_at, "poll": poll,
                    "warnings": self._warnings, "max_warnings": s.max_warnings_per_call}
            if self._warnings > s.max_warnings_per_call:
                if s.reset_after_block:
                    self._forget_current()
                return Verdict(
                    NAME, Action.BLOCK, "loop_guard.warnings_exhausted",
                    f"Blocked: tool '{tool}' called {count} times with identical parameters after "
                    f"{s.max_warnings_per_call} warnings. Try a different approach or different parameters.",
                    data,
                )
            return Verdict(NAME, s.warn_action, "loop_guard.consecutive_warning",
                           s.warn_message.format(tool=tool, count=count), data)
        return None

    def _stop(self, tool: str, count: int, threshold: int, poll: bool, *, blocked_first: bool) -> Verdict:
        """The consecutive stop: after a block (a block stage), or at the count itself (none)."""
        message = self.settings.stop_message
        if message is not None:
            text = message.format(tool=tool, count=count)
        elif blocked_first:
            text = (f"Stopped: tool '{tool}' was called {count} times in a row with identical parameters and "
                    "was called again after being blocked; the run ends here.")
        else:
            text = (f"Stopped: tool '{tool}' was called {count} times in a row with identical parameters; "
                    "the run ends here.")
        return Verdict(NAME, Action.STOP, "loop_guard.consecutive_stop", text,
                       {"tool": tool, "count": count, "threshold": threshold, "poll": poll})

    def _repeat_block(self, tool: str) -> Verdict:
        """CrewAI's refusal: the same call as the last one that ran and did not fail."""
        return Verdict(
            NAME, Action.BLOCK, "loop_guard.consecutive_block",
            self.settings.block_message.format(tool=tool, count=self._consecutive),
            {"tool": tool, "count": self._consecutive, "threshold": None, "poll": False,
             "repeat_of_last_success": True},
        )

    def _forget_current(self) -> None:
        self._current = None
        self._consecutive = 0
        self._warnings = 0

    def _ping_pong(self, identity: str, tool: str) -> Verdict | None:
        s = self.settings
        ring = self._ring
        n = len(ring)
        for j, period, need in self._period_needs:
            # matches still inside the ring: a full ring has dropped the oldest entries a run counted
            run = min(self._runs[j], n - period)
            # the last `window` identities repeat with this period ...
            if run < need:
                continue
            cycle = [ring[i] for i in range(n - period, n)]
            # ... and are not one identity over and over (that is the consecutive rule's business)
            if all(c == cycle[0] for c in cycle):
                continue
            calls = [self._ring_calls[i] for i in range(n - period, n)]
            if self._observation_exempt(calls):
                continue
            # whole trailing repetitions: the periodic tail is the run of matches plus the period they match
            repeats = (run + period) // period
            tools = [c.tool for c in calls]
            data: dict[str, Any] = {"tool": tool, "period": period, "repeats": repeats, "tools": tools,
                                    "threshold": s.ping_pong_min_repeats}
            names = ", ".join(f"'{t}'" for t in tools)
            if repeats >= s.ping_pong_min_repeats:
                return Verdict(
                    NAME, Action.BLOCK, "loop_guard.ping_pong",
                    f"Blocked: ping-pong loop detected: tools {names} alternating, {repeats} repetitions. "
                    "Break the cycle with a different approach.",
                    data,
                )
            warnings = increment(self._ping_pong_warnings, identity)
            if warnings > s.max_warnings_per_call:
                return None
            data["warnings"] = warnings
            data["max_warnings"] = s.max_warnings_per_call
            return Verdict(
                NAME, s.warn_action, "loop_guard.ping_pong_warning",
                f"Warning: ping-pong pattern detected: tools {names} alternating, {repeats} repetitions. "
                "Consider a different approach.",
                data,
            )
        return None

    def _observation_exempt(self, cycle: list[ToolCall]) -> bool:
        """Observation ↔ action alternation is normal browsing: exempt when exactly one side of any
        neighbouring pair of the cycle (A–B, B–C, C–A) is an observation. Two observations are not."""
        period = len(cycle)
        pairs = 1 if period == 2 else period
        observation = [self._observation(c) for c in cycle]
        return any(observation[i] != observation[(i + 1) % period] for i in range(pairs))

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> Verdict | None:
        if self._track_success and not blocked and (result is None or result.ok) and not (
                self._exempt and self._is_exempt(call)):
            # the last call that ran and returned (CrewAI's last_used_tool): a failed or refused call leaves it
            self._last_success = self._last_identity if call is self._last_call else self._identity(call)
        verdict: Verdict | None = None
        if self._watching:  # what the call achieved (engines/_progress.py); off in the published presets
            if blocked or result is None or (self._check_exempt and self._is_exempt(call)):
                return None
            verdict, waited = self._achieved(call, result)
            if waited:  # a poll's "still so" after a wait is the poll budget's business, not an outcome
                return verdict
        threshold = self._outcome_threshold
        if blocked or result is None or threshold <= 0 or (self._exempt and self._is_exempt(call)):
            return verdict
        # `result.result_text` read as two fields: the property is a call into Python per result
        text = result.text if result.ok or result.error is None else result.error
        if text is None:
            return verdict
        size = self._outcome_prefix
        # the result's first `size` bytes; a character is at least one byte, so `size` characters cover
        # them. An ASCII prefix is its own bytes (kept as text, sparing an encode per call); any other
        # has a byte >= 0x80 within the first `size`, so keys of the two kinds never stand for equal bytes.
        prefix = text[:size]
        identity = self._last_identity if call is self._last_call else self._identity(call)
        outcome = prefix if prefix.isascii() else prefix.encode("utf-8")[:size]
        count = increment(self._outcomes, TextKey(identity, outcome) if SAMPLED else (identity, outcome))
        if count >= threshold and identity not in self._poisoned:
            self._poisoned[identity] = count
        return verdict

    def _achieved(self, call: ToolCall, result: ToolResult) -> tuple[Verdict | None, bool]:
        """A call that ran, judged by its result: (the unchanged-output warning, whether the call was a wait
        or a declared poll's)."""
        identity = self._last_identity if call is self._last_call else self._identity(call)
        progress, waited = self._progress, False
        if progress is not None and identity == self._current:
            declared = self.run.classifier.repeat(call) if self._declares_repeat else None
            waited = progress.waited or declared == "poll"
            if progress.after(result, declared):  # a changed result: the repetition restarts here
                self._consecutive = 1
                self._warnings = 0
        unchanged = self._unchanged
        return (unchanged.after(call, identity, result) if unchanged is not None else None), waited

    @hookimpl
    def loopguard_message(self, message: Message) -> None:
        if not message.from_user or not self.settings.reset_on_user_message:
            return
        # a user message starts a new prompt: Spacebot builds a fresh guard for it
        self._ring.clear()  # the runs restart by themselves: a first call has nothing to match
        self._ring_calls.clear()
        self._forget_current()
        self._ping_pong_warnings.clear()
        self._outcomes.clear()
        self._poisoned.clear()
        self._last_success = None
        if self._unchanged is not None:
            self._unchanged.clear()

    def idle_hooks(self) -> frozenset[str]:
        # the count starts again at a turn's start only with `count_scope: turn`
        return _TURN_START if self.settings.count_scope == "run" else frozenset()

    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> None:
        if self.settings.count_scope == "turn":  # OpenCode: only the current response's parts are read
            self._forget_current()


ENGINE = LoopGuard
