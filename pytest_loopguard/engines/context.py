"""context: token accounting, pre-prompt compaction, overflow and transient recovery (seeds 000, 001, 004).

The engine works on the prompt view (`run.view`), never on the transcript.

- Prompt size: the view's tokens (entry tokens given by the trace, else the view's counter). A recorded
  `llm.input_tokens` is the provider's count of the prompt the recorded run sent, which includes what a
  trace does not record (system prompt, tool schemas), so it raises the estimate:
  `prompt = max(view tokens, input_tokens - tokens this run's compactions removed)`. Subtracting what we
  removed keeps a counterfactual replay (one that compacted where the recorded run did not) from
  compacting again on every later step because of figures measured on the uncompacted prompt.
- Pre-prompt compaction: before a model call, when `prompt >= ceil(compact_at * window)`, older messages
  become one summary entry (`context.compact`). `keep_recent` keeps the last `preserve_recent` entries,
  moved back to the assistant call when the boundary would split a turn; `drop_oldest` (Spacebot) drops
  the oldest `compact_fraction` (at least one), keeps at least `min_kept`, moves forward past tool
  results whose assistant call is dropped, and back only if `min_kept` stops it. Views of
  `compact_floor` entries or fewer are never compacted. A tool result is never orphaned.
- Cadence: with `pre_prompt_check` (every preset) the check runs before every model call. Without it the
  check runs only at segment boundaries: before the model call that follows every `turns_per_segment`
  turns (Spacebot before PR #359 checked only there). `max_turns` is separate: the turn after
  `max_turns` stops the run as exhausted (`context.max_turns`); segments never end a run.
- Markers are lower-cased substrings, except that a marker made of digits only (a status code such as
  `500`) matches a whole number: `HTTP 500` is transient, `prompt 5000 tokens` is not.
- Overflow: an error containing an overflow marker (case-insensitive; a marker set matches when all of
  its markers are present) is tested first. It compacts (`preserve_schedule`: the k-th overflow in a row
  keeps the k-th count, the last one repeating; `force_fraction`: drops the oldest
  `force_compact_fraction`) and retries (`context.overflow`, compact_retry) at most
  `max_compact_retries` times in a row; the next overflow fails (`context.overflow_exhausted`).
- Transient: an error containing a transient marker is retried after `backoff_base_ms * 2**(k-1)`
  (capped by `backoff_cap_ms`) on the run's virtual clock (`context.transient`, retry), at most
  `max_transient_retries` in a row; the next fails (`context.transient_exhausted`).
- Streaks end only with a successful model call: a transient error between two overflows does not
  reset the overflow streak, nor the reverse. Any other error fails at once (`context.unrecoverable`).
- After a compaction that folded messages, one message (role `injection_role`) is appended to the view
  when there is something to say: the file regions already read (from the read_tracker engine, when
  `inject_read_regions`) with an instruction not to re-read them, and the active todos (pending,
  in_progress; when `inject_todos`) kept from `todo_tool` calls. Bounded (`injection_max_tokens`): at
  most that many tokens and never past the threshold, todos first, then the most recent regions, those of
  one file that overlap or touch merged (`merge_regions`). The hermes presets keep the whole list.
  The verdict keeps the message's size and hash, not its text.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core._conversation import Entry
from ..core._model import Action, Verdict
from ..core.hookspecs import hookimpl
from .base import Engine, per_settings
from .settings.context import Settings

if TYPE_CHECKING:
    from ..core._conversation import PromptView
    from ..core._model import LLMCall, ToolCall, ToolResult
    from ..core._runcontext import RunContext, Turn

__all__ = ["ENGINE", "Context", "Settings", "compaction_boundary"]

ACTIVE_TODO = frozenset({"pending", "in_progress"})
_TURN_START = frozenset({"loopguard_turn_start"})  # what idle_hooks names without a turn limit




def _drop_oldest(todos: dict[str, tuple[str, str]], excess: int) -> None:
    """Take `excess` todos out of the list: the oldest that are not active (never injected) first, then the
    oldest active ones."""
    done = [tid for tid, (_, status) in todos.items() if status not in ACTIVE_TODO][:excess]
    skip = set(done)
    oldest = list(itertools.islice((tid for tid in todos if tid not in skip), excess - len(done)))
    for tid in (*done, *oldest):
        del todos[tid]


def compaction_boundary(
    entries: Sequence[Entry], *, preserve: int | None = None, fraction: float | None = None, min_kept: int = 0
) -> int:
    """How many of the oldest entries to fold into the summary (0: none), never orphaning a tool result.

    With `fraction`: drop the oldest fraction (at least one), keep at least `min_kept`, and move forward
    past tool results whose assistant call would be dropped. With `preserve`: keep the last `preserve`.
    Either way, if the first kept entry is still a tool result, move back to its turn's assistant call.
    """
    n = len(entries)
    limit = max(0, n - min_kept)
    if fraction is not None:
        b = min(max(int(n * fraction + 1e-9), 1), limit)
        while b < limit and entries[b].role == "tool":
            b += 1
    else:
        b = min(max(0, n - (preserve or 0)), limit)
    while 0 < b < n and entries[b].role == "tool":
        b -= 1
    return b


def _merged(regions: Iterable[tuple[Any, Any, Any]], merge: bool) -> list[tuple[Any, Any, Any]]:
    """Regions in the order given, those of one file that overlap or touch (integer offset and limit)
    folded into the first of them; regions with other offsets or limits stay as they are."""
    if not merge:
        return list(regions)
    out: list[list[Any]] = []
    spans: dict[Any, list[list[Any]]] = {}  # path -> its mergeable entries of `out`, as [path, start, end]
    # a compaction runs this over up to 4 regions per token of budget: the common case (int offset and
    # limit, the region inside or beside one span of its file) is kept to a few comparisons
    for path, offset, limit in regions:
        if not ((offset.__class__ is int or _whole(offset)) and (limit.__class__ is int or _whole(limit))
                and limit > 0):
            out.append([path, offset, limit, False])
            continue
        start, end = offset, offset + limit
        mine = spans.get(path)
        if mine is None:
            mine = spans[path] = []
        hit = None
        for span in mine:  # few per file once merged
            low, high = span[1], span[2]
            if start <= high and low <= end:
                hit = span
                if start >= low and end <= high:  # inside the span: nothing changes
                    break
                if start < low:
                    span[1] = start
                if end > high:
                    span[2] = end
                # the widened span may now reach others of the file (spans of a file neither overlap nor
                # touch, so only a widened one can): fold them in
                for other in [o for o in mine if o is not span and o[1] <= span[2] and span[1] <= o[2]]:
                    span[1], span[2] = min(span[1], other[1]), max(span[2], other[2])
                    mine.remove(other)
                    out.remove(other)
                break
        if hit is None:
            hit = [path, start, end, True]
            mine.append(hit)
            out.append(hit)
    return [(p, a, b - a) if spans_ else (p, a, b) for p, a, b, spans_ in out]


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _region_line(path: Any, offset: Any, limit: Any) -> str:
    return f"- {path} (offset {offset}, limit {limit})"


ContextSettings = Settings  # the class attribute `Settings` below shadows the name inside the class


@functools.lru_cache(maxsize=64)  # one per marker list in use: presets share them, Guards are built per run
def _markers(markers: tuple[str, ...]) -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    """Lower-cased substring markers, and one pattern matching the all-digit ones as whole numbers."""
    codes = [m for m in markers if m.isdigit()]
    words = tuple(m.lower() for m in markers if not m.isdigit())
    pattern = re.compile(r"(?<!\d)(?:" + "|".join(codes) + r")(?!\d)") if codes else None
    return words, pattern


@per_settings
def _prepared_markers(settings: Settings) -> tuple[tuple[str, ...], re.Pattern[str] | None, tuple[tuple[str, ...], ...],
                                                   tuple[str, ...], re.Pattern[str] | None]:
    """The overflow markers, codes and sets and the transient markers and codes, as the engine tests them."""
    overflow, overflow_codes = _markers(tuple(settings.overflow_markers))
    sets = tuple(tuple(m.lower() for m in s) for s in settings.overflow_marker_sets if s)
    transient, transient_codes = _markers(tuple(settings.transient_markers))
    return overflow, overflow_codes, sets, transient, transient_codes


class Context(Engine[ContextSettings]):
    """Keeps the prompt view inside the window and recovers from overflow and transient errors."""

    name = "context"
    Settings = Settings
    # Every reason code this engine's verdicts carry (rule coverage lists the ones no trace exercises).
    REASONS = (
        "context.max_turns",
        "context.compact",
        "context.overflow",
        "context.overflow_exhausted",
        "context.transient",
        "context.transient_exhausted",
        "context.unrecoverable",
    )

    def __init__(self, settings: ContextSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        # markers are prepared once per settings: substring tests on the lower-cased error, one regex for
        # status codes
        (self._overflow_markers, self._overflow_codes, self._overflow_sets, self._transient_markers,
         self._transient_codes) = _prepared_markers(settings)
        self._overflow_streak = 0
        self._todo_tool = settings.todo_tool  # read on every call: an attribute of the engine's own is a field
        self._transient_streak = 0
        self._removed = 0  # tokens this run's compactions took out of the view
        self._summarized = 0  # messages folded into the view's summary entry so far
        self._todos: dict[str, tuple[str, str]] = {}  # id -> (content, status), in creation order
        self._threshold_window = -1  # the window `_threshold` was computed for
        self._threshold = 0

    # ---- public state ------------------------------------------------------------------------------
    @property
    def todos(self) -> list[tuple[str, str, str]]:
        """The todo list as (id, content, status), in creation order."""
        return [(tid, content, status) for tid, (content, status) in self._todos.items()]

    def window(self, view: PromptView) -> int:
        """The window in tokens: the trace's `context.window_tokens`, else the setting."""
        return view.window_tokens or self.settings.window_tokens

    def threshold(self, view: PromptView) -> int:
        """The prompt size at which pre-prompt compaction starts."""
        window = view.window_tokens or self.settings.window_tokens
        if window != self._threshold_window:  # asked before every model call; the window rarely changes
            self._threshold_window = window
            self._threshold = math.ceil(round(self.settings.compact_at * window, 6))
        return self._threshold

    def is_overflow(self, error: str) -> bool:
        text = error.lower()
        return (
            any(m in text for m in self._overflow_markers)
            or any(all(m in text for m in markers) for markers in self._overflow_sets)
            or (self._overflow_codes is not None and self._overflow_codes.search(text) is not None)
        )

    def is_transient(self, error: str) -> bool:
        text = error.lower()
        return any(m in text for m in self._transient_markers) or (
            self._transient_codes is not None and self._transient_codes.search(text) is not None
        )

    def injection(self, room: int | None = None) -> tuple[str, int] | None:
        """The message appended after a compaction and how many region lines it lists, or None.

        Bounded (`injection_max_tokens` set): it takes at most that many tokens and at most `room` (what
        the view has left below the threshold), todos first, then the most recently read regions that fit.
        Unbounded (the published Hermes rule): every region in first-read order and every active todo.
        """
        s = self.settings
        budget = s.injection_max_tokens
        if budget is not None and room is not None:
            budget = min(budget, room)
        if budget is not None and budget <= 0:
            return None
        count = self.run.view.count_tokens
        parts: list[str] = []
        if s.inject_todos:
            active = [
                f"- [{status}] {content} (id {tid})"
                for tid, (content, status) in self._todos.items()
                if status in ACTIVE_TODO
            ]
            if active:
                todos = s.todos_text.format(todos="\n".join(active))
                if budget is None or count(todos) <= budget:
                    parts.append(todos)
        listed = 0
        if s.inject_read_regions:
            left = None if budget is None else budget - sum(count(p) + 1 for p in parts)
            regions = self._region_lines(left)
            if regions:
                listed = len(regions)
                parts.insert(0, s.read_regions_text.format(regions="\n".join(regions)))
        return ("\n\n".join(parts), listed) if parts else None

    def _region_lines(self, budget: int | None) -> list[str]:
        """The region lines to inject: all of them in first-read order when `budget` is None, else the
        most recent first while the regions part stays within `budget` tokens."""
        reads = self.run.reads  # the read tracker's regions, when the policy enables it
        if reads is None:
            return []
        s = self.settings
        if budget is None:
            lines = _merged(reads.regions, s.merge_regions)
            return [_region_line(*r) for r in lines]
        header = self.run.view.count_tokens(s.read_regions_text.format(regions=""))
        if header >= budget:
            return []
        # a line costs at least a few tokens, so 4 regions per token of budget is more than can ever be
        # listed (merging included): the scan, like the message, is bounded whatever the run's length
        scanned = list(itertools.islice(reads.recent_regions(), 4 * budget))
        count = self.run.view.count_tokens
        out: list[str] = []
        used = header
        for region in _merged(scanned, s.merge_regions):
            line = _region_line(*region)
            cost = count(line) + 1
            if used + cost > budget:
                break
            out.append(line)
            used += cost
        return out

    # ---- hooks -------------------------------------------------------------------------------------
    def idle_hooks(self) -> frozenset[str]:
        # without a turn limit a turn's start has nothing to check
        return _TURN_START if self.settings.max_turns is None else frozenset()

    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> Verdict | None:
        limit = self.settings.max_turns
        if limit is None or turn.index < limit:
            return None
        return Verdict(
            self.name,
            Action.STOP,
            "context.max_turns",
            f"Stopped: the run reached its limit of {limit} turns.",
            {"outcome": "exhausted", "max_turns": limit, "turn": turn.index + 1},
        )

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> None:
        if blocked or call.tool != self._todo_tool or result is None or not result.ok:
            return
        items = call.args.get("todos")
        if not isinstance(items, (list, tuple)):  # a call without `todos` reads the list
            return
        if not call.args.get("merge", False):
            self._todos = {}
        todos = self._todos
        for item in items:
            if not isinstance(item, Mapping) or item.get("id") is None:
                continue
            tid = str(item["id"])
            old = todos.get(tid)
            content = item.get("content", old[0] if old else "")
            status = item.get("status", old[1] if old else "pending")
            todos[tid] = (str(content), str(status))
        if len(todos) > self.settings.max_todos:
            _drop_oldest(todos, len(todos) - self.settings.max_todos)

    @hookimpl
    def loopguard_before_llm(self, llm: LLMCall, view: PromptView) -> Verdict | None:
        s = self.settings
        if s.pre_prompt_check:
            trigger = "pre_prompt"
        elif s.turns_per_segment and self.run.turns and self.run.turns % s.turns_per_segment == 0:
            trigger = "segment"
        else:
            return None
        view_tokens = view.tokens()
        prompt = view_tokens
        if llm.input_tokens is not None:
            prompt = max(prompt, llm.input_tokens - self._removed)
        threshold = self.threshold(view)
        if prompt < threshold:  # nearly every model call: nothing more to do
            return None
        if s.compaction == "drop_oldest":
            done = self._compact(view, fraction=s.compact_fraction)
        else:
            done = self._compact(view, preserve=s.preserve_recent)
        if done is None:  # nothing older than what must be kept
            return None
        data: dict[str, Any] = {
            "trigger": trigger,
            "tokens_before": prompt,
            "view_tokens_before": view_tokens,
            "input_tokens": llm.input_tokens,
            "window": self.window(view),
            "threshold": threshold,
            **done,
        }
        return Verdict(
            self.name,
            Action.COMPACT,
            "context.compact",
            f"Compacted the prompt before the model call: {done['summarized']} older messages summarized, "
            f"{done['preserved']} kept ({prompt} tokens >= {threshold} of a {data['window']}-token window).",
            data,
        )

    @hookimpl
    def loopguard_llm_result(self, llm: LLMCall, view: PromptView) -> Verdict | None:
        error = llm.error
        if error is None:
            self._overflow_streak = 0
            self._transient_streak = 0
            return None
        if self.is_overflow(error):  # tested first: a 429 that says "too many tokens" is an overflow
            return self._overflow(error, view)
        if self.is_transient(error):
            return self._transient(error)
        return Verdict(
            self.name,
            Action.FAIL,
            "context.unrecoverable",
            f"The model call failed with an error that is neither a context overflow nor transient: {error}",
            {"error": error},
        )

    # ---- recovery ----------------------------------------------------------------------------------
    def _overflow(self, error: str, view: PromptView) -> Verdict:
        s = self.settings
        self._overflow_streak += 1
        attempt = self._overflow_streak
        if s.max_compact_retries is not None and attempt > s.max_compact_retries:
            return Verdict(
                self.name,
                Action.FAIL,
                "context.overflow_exhausted",
                f"The context window overflowed {attempt} times in a row; compaction was retried "
                f"{s.max_compact_retries} times.",
                {"attempt": attempt, "max_compact_retries": s.max_compact_retries, "error": error},
            )
        before = view.tokens()
        preserve: int | None = None
        if s.overflow_strategy == "force_fraction":
            done = self._compact(view, fraction=s.force_compact_fraction)
        else:
            schedule = s.preserve_schedule
            preserve = schedule[min(attempt, len(schedule)) - 1] if schedule else 0
            done = self._compact(view, preserve=preserve)
        if done is None:  # nothing could be folded; the retry still happens, on the same prompt
            done = {"preserved": len(view), "summarized": 0, "tokens_after": before, "injected": None}
        data: dict[str, Any] = {
            "attempt": attempt,
            "max_compact_retries": s.max_compact_retries,
            "preserve": preserve,
            "fraction": s.force_compact_fraction if preserve is None else None,
            "tokens_before": before,
            "window": self.window(view),
            "compacted": done["summarized"] > 0,
            "error": error,
            **done,
        }
        return Verdict(
            self.name,
            Action.COMPACT_RETRY,
            "context.overflow",
            f"Context window exceeded: compacted to {done['preserved']} recent messages and retrying "
            f"(attempt {attempt}{'' if s.max_compact_retries is None else f' of {s.max_compact_retries}'}).",
            data,
        )

    def _transient(self, error: str) -> Verdict:
        s = self.settings
        self._transient_streak += 1
        attempt = self._transient_streak
        if attempt > s.max_transient_retries:
            return Verdict(
                self.name,
                Action.FAIL,
                "context.transient_exhausted",
                f"The model call failed {attempt} times in a row with transient errors; gave up after "
                f"{s.max_transient_retries} retries.",
                {"attempt": attempt, "max_transient_retries": s.max_transient_retries, "error": error},
            )
        delay = s.backoff_base_ms << (attempt - 1)
        if s.backoff_cap_ms is not None:
            delay = min(delay, s.backoff_cap_ms)
        clock = self.run.clock
        clock.advance(delay)
        return Verdict(
            self.name,
            Action.RETRY,
            "context.transient",
            f"Transient model error; retrying after {delay} ms (attempt {attempt} of {s.max_transient_retries}).",
            {
                "attempt": attempt,
                "max_transient_retries": s.max_transient_retries,
                "delay_ms": delay,
                "clock_ms": clock.now_ms,
                "error": error,
            },
        )

    # ---- compaction --------------------------------------------------------------------------------
    def _compact(
        self, view: PromptView, *, preserve: int | None = None, fraction: float | None = None
    ) -> dict[str, Any] | None:
        """Fold the oldest entries into one summary and inject; None when nothing was folded."""
        s = self.settings
        entries = view.entries
        n = len(entries)
        if n <= s.compact_floor:
            return None
        b = compaction_boundary(entries, preserve=preserve, fraction=fraction, min_kept=s.min_kept)
        has_summary = n > 0 and entries[0].role == "summary"
        if b == 0 or (b == 1 and has_summary):
            return None
        before = view.tokens()
        # the summary stands for what it replaces: an earlier summary's messages carry over
        messages = b + (self._summarized - 1 if has_summary else 0)
        self._summarized = messages
        summary = Entry("summary", s.summary_text.format(messages=messages), replaced=True)
        view.replace_entries([summary, *entries[b:]])
        # the injection never by itself takes the view to the threshold (else every model call compacts)
        made = self.injection(room=self.threshold(view) - 1 - view.tokens())
        injected: dict[str, Any] | None = None
        if made is not None:
            text, regions = made
            entry = Entry(s.injection_role, text, replaced=True)
            view.append(entry)
            # the verdict keeps the message's size and identity, not its text: verdicts live as long as
            # the result, and a long run compacts many times (the text is in the view while it matters)
            injected = {"tokens": view.entry_tokens(entry), "chars": len(text), "regions": regions,
                        "sha256": hashlib.sha256(text.encode()).hexdigest()[:16]}
        after = view.tokens()
        self._removed += before - after
        return {"preserved": n - b, "summarized": b, "tokens_after": after, "injected": injected}


ENGINE = Context
