"""What a repeated call achieved: the loop guard's result-aware streaks, poll budgets and unchanged-output rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

from .._mypyc import mypyc_attr
from ..core._classify import shell_line
from ..core._model import Action, Verdict
from .lru import LRUMap

if TYPE_CHECKING:
    from ..core._classify import Repeat
    from ..core._model import ToolCall, ToolResult
    from ..core._runcontext import RunContext
    from .loop_guard import Settings

__all__ = ["StreakProgress", "UnchangedOutput"]

NAME: Final = "loop_guard"
# the effects of a call that is a check (a test, build or lint run, a script): not a read, search or edit
_CHECK_EFFECTS: Final = frozenset({"run", "other"})
_EDIT_EFFECTS: Final = frozenset({"write", "revert"})
_COMMAND_CHARS: Final = 80  # how much of a check's command line a warning quotes


Outcome = tuple[bool, str | None, str | None]  # what a call returned, compared as it is (`StreakProgress`)


def command_of(call: ToolCall, run: RunContext) -> str:
    """The command a check ran, as a warning quotes it: the shell line, else the tool name."""
    rule = run.classifier.locator(call)
    line = shell_line(call.args.get(rule.shell)) if rule is not None and rule.shell is not None else None
    text = line.strip() if line else call.tool
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 1] + "…"


class StreakProgress:
    """One run's current streak of identical calls, judged by what each call achieved.

    A call whose result differs from the previous identical call's (`result_aware`, or a tool declared
    `paged` or `poll`) is progress, and so is one made at least `poll_gap_ms` after it on the run's clock
    (the agent waited: polling). Progress restarts the consecutive count (the loop guard's `_consecutive`)
    and makes the streak a poll, whose own budget bounds it: in calls that did not wait, `progress_warn_at` /
    `progress_block_at` (`poll_warn_at` / `poll_block_at` for a tool declared `poll` or `paged`), and in run
    time `poll_warn_ms` / `poll_block_ms`. A tool declared `poll` is held to `poll_idle_warn_at` /
    `poll_idle_block_at` calls without a changed result instead of the consecutive thresholds.
    """

    __slots__ = ("_last", "_last_ms", "_ms_warned", "_poll_gap_ms", "_result_aware", "_settings", "_start_ms",
                 "_warned", "calls", "paced", "progressed", "run", "waited")

    def __init__(self, settings: Settings, run: RunContext) -> None:
        self._settings = settings
        self._poll_gap_ms = settings.poll_gap_ms  # read on every identical call: a field rather than a look-up
        self._result_aware = settings.result_aware
        self.run = run
        self.calls = 0  # identical calls in a row, whatever they returned
        self.paced = 0  # of them, the calls made after a poll gap (waits: the time budget's business)
        self.progressed = False  # whether the streak has made progress: it is a poll
        self.waited = False  # whether the current call came after a poll gap (its result says "still so")
        # the previous identical call's result, kept as it is: compared (not hashed) when an identical call
        # follows, so a streak that ends at one call, most of them, never reads its result's text
        self._last: Outcome | None = None
        self._start_ms = 0
        self._last_ms = 0
        self._warned = False
        self._ms_warned = False

    def restart(self) -> None:
        """A call with another identity starts a new streak."""
        now = self.run.clock.now_ms
        self.calls = self.paced = 0
        self.progressed = self.waited = self._warned = self._ms_warned = False
        self._last = None
        self._start_ms = self._last_ms = now

    def before(self) -> bool:
        """Count the next identical call; True when it comes after a poll gap (progress)."""
        self.calls += 1
        now = self.run.clock.now_ms
        gap = self._poll_gap_ms
        self.waited = gap is not None and self.calls > 1 and now - self._last_ms >= gap
        self._last_ms = now
        if self.waited:
            self.progressed = True
            self.paced += 1
        return self.waited

    def after(self, result: ToolResult, repeat: Repeat | None) -> bool:
        """Note what the call returned; True when it differs from the previous identical call's (progress).
        A result with neither text nor error (a recorded step without one) says nothing: it is not compared."""
        if result.text is None and result.error is None:
            return False
        outcome = (result.ok, result.text, result.error)
        previous, self._last = self._last, outcome
        if previous is None or previous == outcome:
            return False
        if not (self._result_aware or repeat == "paged" or repeat == "poll"):
            return False
        self.progressed = True
        return True

    def budget_verdict(self, call: ToolCall, repeat: Repeat | None, multiplier: int) -> Verdict | None:
        """The poll budget's verdict for a streak that is a poll (it made progress, or its tool is declared one).
        `multiplier`: the loop guard's poll multiplier for an observation tool (1 otherwise); it scales the
        undeclared budget as it scales the consecutive thresholds."""
        declared = repeat == "poll" or repeat == "paged"
        if not (self.progressed or repeat == "poll"):
            return None
        s = self._settings
        calls = self.calls - self.paced
        if declared:
            warn_at, block_at = s.poll_warn_at, s.poll_block_at
        else:
            warn_at = s.progress_warn_at * multiplier if s.progress_warn_at is not None else None
            block_at = s.progress_block_at * multiplier if s.progress_block_at is not None else None
        elapsed = self.run.clock.now_ms - self._start_ms
        data = {"tool": call.tool, "calls": calls, "elapsed_ms": elapsed, "warn_at": warn_at,
                "block_at": block_at, "warn_ms": s.poll_warn_ms, "block_ms": s.poll_block_ms, "declared": repeat}
        over_calls = block_at is not None and calls >= block_at
        if over_calls or (s.poll_block_ms is not None and elapsed >= s.poll_block_ms):
            span = f"{calls} times" if over_calls else f"for {elapsed // 1000} s"
            return Verdict(
                NAME, Action.BLOCK, "loop_guard.poll_budget",
                f"Blocked: tool '{call.tool}' has been polled with identical parameters {span}, past the poll "
                "budget. Stop polling and try a different approach.",
                data,
            )
        warn = None
        if not self._warned and warn_at is not None and calls >= warn_at:
            self._warned = True
            warn = f"{calls} times"
        elif not self._ms_warned and s.poll_warn_ms is not None and elapsed >= s.poll_warn_ms:
            self._ms_warned = True
            warn = f"for {elapsed // 1000} s"
        if warn is None:
            return None
        return Verdict(
            NAME, Action.WARN, "loop_guard.poll_budget_warning",
            f"Warning: tool '{call.tool}' has been called with identical parameters {warn}. Its results change, "
            "but consider whether repeating it will get you there; a more direct approach may.",
            data,
        )


@final
@mypyc_attr(acyclic=True)  # a result's parts and counts: never in a cycle
class _Check:
    """One check's last output and the runs in a row that returned it (`UnchangedOutput`).

    The output itself, not a digest of it: comparing the next run's output with it stops at the first difference
    (an unchanged output is compared whole, which costs a fraction of hashing it), where a digest hashed every
    output whole (each result a new string, whose hash no one has worked out: 12% of a live check). It holds the
    result's own strings, at most one output per check identity the map keeps (`max_keys`), as the read
    tracker's exact re-reads and the loop guard's identical outcomes hold theirs (`TextKey`)."""

    __slots__ = ("edits_at_first", "edits_at_last", "error", "ok", "runs", "text", "warnings")

    ok: bool
    text: str | None
    error: str | None
    runs: int  # runs in a row with this output, an edit before each
    edits_at_last: int  # edits that had run at the last of them
    edits_at_first: int  # ... and at the first
    warnings: int

    def __init__(self, result: ToolResult, edits: int) -> None:
        self.restart(result, edits)

    def restart(self, result: ToolResult, edits: int) -> None:
        """`result` is the check's output now, run once so far."""
        self.ok = result.ok
        self.text = result.text
        self.error = result.error
        self.runs = 1
        self.edits_at_last = edits
        self.edits_at_first = edits
        self.warnings = 0

    def returned(self, result: ToolResult) -> bool:
        """Whether `result` is this output again: the same text and error, and failed or not alike."""
        return self.ok == result.ok and self.text == result.text and self.error == result.error


class UnchangedOutput:
    """The same check (test, build, lint run, script) run again after edits, returning the same output.

    Per identity: its last output, how many runs in a row returned it with at least one edit before each, and
    the edit count at the first of them (`_Check`). A run with another output starts over; a run with no edit
    since the previous one is the consecutive rule's business and is not counted.
    """

    __slots__ = ("_checks", "_settings", "edits", "run")

    def __init__(self, settings: Settings, run: RunContext) -> None:
        self._settings = settings
        self.run = run
        self.edits = 0  # edits that ran so far in this run
        self._checks: LRUMap[str, _Check] = LRUMap(settings.max_keys)

    def clear(self) -> None:
        self._checks.clear()

    def after(self, call: ToolCall, identity: str, result: ToolResult) -> Verdict | None:
        """Note a call that ran; a warning when a check's output stayed the same across enough edits."""
        effect = self.run.target(call).effect
        if effect in _EDIT_EFFECTS:
            if result.ok:
                self.edits += 1
            return None
        if effect not in _CHECK_EFFECTS or self.run.kind(call) != "action":
            return None
        if result.text is None and result.error is None:  # no output recorded: nothing to compare
            return None
        edits = self.edits
        checks = self._checks
        entry = checks.get(identity)
        if entry is None:
            checks[identity] = _Check(result, edits)
            return None
        if not entry.returned(result):
            # another output (most runs of a check): its entry starts over and is marked used, as assigning a new
            # one would, without the map's Python `__setitem__` (a key it holds never needs an eviction)
            entry.restart(result, edits)
            checks.move_to_end(identity)
            return None
        if entry.edits_at_last == edits:
            return None
        entry.runs += 1
        entry.edits_at_last = edits
        s = self._settings
        threshold = s.unchanged_output_warn_at
        if threshold is None or entry.runs < threshold or entry.warnings >= s.max_warnings_per_call:
            return None
        entry.warnings += 1
        command = command_of(call, self.run)
        runs, across = entry.runs, edits - entry.edits_at_first
        return Verdict(
            NAME, Action.WARN, "loop_guard.unchanged_output",
            f"Warning: '{command}' has returned the same output {runs} times, across {across} edits: the edits "
            "have not changed its result. Reconsider the approach before editing again.",
            {"tool": call.tool, "command": command, "runs": runs, "edits": across, "threshold": threshold},
        )
