"""failure_tracker: consecutive failed turns, forced done, repetition, action loops, guardrails (seed 003).

Five independent rules share this engine, each switched on by its settings (PRESETS.md):

- failed turns (`max_failures`): browser-use's rule, a turn with exactly one call which failed counts
  (`turn_failure: single_call`), or ours, a turn whose non-blocked calls all failed (`all_failed`), or
  Cline's consecutive mistakes, every failed call +1 and every other call that ran to 0 (`each_call`);
  `empty_turns` says what a turn in which no call ran does; the call that brings the streak to
  `max_failures` forces the done tool (warn) and any later non-done call stops the run; without
  `final_response_after_failure` reaching it stops at once;
- repetition (`max_repetitions`): the same tool with the same `target_keys` arguments as the previous
  call, `max_repetitions` times over, stops the run before the call;
- `max_steps`: the turn after `max_steps` turns ends the run as exhausted;
- rejected turns (`rejected_turns`): `failed` (browser-use, qa-agent) counts a model turn the harness
  refused as a turn with one failed call, for the failed-turn streak and for `max_steps`; `ignore` (every
  other preset, and `default` for now) leaves every count as it was;
- browser-use's action-loop nudges (`action_loop`): a window of normalised call identities, warn when the
  most frequent one reaches a level;
- Hermes' guardrails (`guardrails`): per-signature and per-tool failure counts and read-only no-progress
  chains, reset at each user message.
- the second wave's requeries and usage limits (mini-swe-agent, SWE-agent, Pydantic AI, LangChain): rejected
  replies, the command blocklist, timeouts, tool retries and call limits, in engines/_second_wave.py.

Opt-in guardrail hard stops, as Hermes places them: `exact_failure_block_at` and `no_progress_block_at`
block the NEXT call of the signature once its count has reached the threshold (checked before the call;
a blocked call changes no count, so it stays blocked until a user message resets the counts);
`same_tool_failure_stop_at` stops the run on the failure that brings the tool's count to it (the run
ends after that call; there is no later call to check).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Final

from ..core._model import Action, ToolCall, ToolResult, Verdict
from ..core.hookspecs import hookimpl
from ._action_loop import ACTION_LOOP_ADVICE, action_identity
from ._lruops import increment
from ._second_wave import SecondWave
from .base import Engine, per_settings
from .lru import LRUMap
from .settings.failure_tracker import Settings

if TYPE_CHECKING:
    from ..core._model import Message, Rejected
    from ..core._runcontext import RunContext, Turn

__all__ = ["ENGINE", "FailureTracker", "Settings", "action_identity"]



NAME: Final = "failure_tracker"
_Settings = Settings  # the class body below rebinds `Settings` (the engine protocol's attribute)

_MISSING: Final = object()  # an absent target argument: equal to itself only, so "missing on both" is the same
_TURN_START: Final = frozenset({"loopguard_turn_start"})  # what idle_hooks names when the turn rules are off


@per_settings
def _prepared(settings: _Settings) -> tuple[tuple[int, ...], frozenset[str], frozenset[str]]:
    """The action-loop levels in order, the tools exempt from it, and the read-only tools."""
    return (tuple(sorted(settings.action_loop_levels)), frozenset(settings.action_loop_exempt),
            frozenset(settings.read_only_tools))


class FailureTracker(Engine[_Settings]):
    """Per-run failure, repetition, step and loop accounting (see the module docstring for the rules)."""

    name = NAME
    Settings = Settings
    # Every reason code this engine's verdicts carry (rule coverage lists the ones no trace exercises).
    REASONS = (
        "failure_tracker.exact_failure",
        "failure_tracker.same_tool_failure",
        "failure_tracker.no_progress",
        "failure_tracker.max_failures",
        "failure_tracker.force_done",
        "failure_tracker.action_loop",
        "failure_tracker.repetition",
        "failure_tracker.max_steps",
        "failure_tracker.failed_turns",
        "failure_tracker.failing_key",
        "failure_tracker.rejected_streak",
        "failure_tracker.rejected_limit",
        "failure_tracker.blocklist",
        "failure_tracker.timeouts",
        "failure_tracker.tool_retries",
        "failure_tracker.tool_calls_limit",
        "failure_tracker.call_limit",
    )

    def __init__(self, settings: _Settings, run: RunContext) -> None:
        super().__init__(settings, run)
        # failed turns
        self.consecutive_failures = 0
        self.forced_done = False
        self.rejected = 0  # rejected turns counted as turns (rejected_turns: failed)
        self._turn_size = 0
        self._turn_seen = 0
        self._turn_ran = 0
        self._turn_failed = 0
        self._single_call = settings.turn_failure == "single_call"
        self._each_call = settings.turn_failure == "each_call"
        # repetition
        self.repetitions = 0
        self._previous_target: tuple[str, tuple[Any, ...]] | None = None
        # action loop: the window, counts per identity, and how many identities have each count, so
        # the top count is known in O(1) per call
        self._levels, self._exempt, self._read_only = _prepared(settings)  # once per settings object
        self._window: deque[Hashable] = deque()
        self._identity_counts: Counter[Hashable] = Counter()
        self._identities_with: Counter[int] = Counter()
        self.top_count = 0
        # per-key maps keep at most max_keys keys, least recently used evicted first (docs/engines.md)
        self.exact_failures: LRUMap[str, int] = LRUMap(settings.max_keys)
        self.tool_failures: LRUMap[str, int] = LRUMap(settings.max_keys)
        # signature -> (last result text, chain)
        self.no_progress: LRUMap[str, tuple[str, int]] = LRUMap(settings.max_keys)
        # rejected turns in a row (any accepted call ends the streak)
        self.rejected_streak = 0
        # failing keys: failures of each (tool, verb, target) since it last succeeded; the key failing now
        self._failing_keys = settings.failing_key_warn_at is not None or settings.failing_key_streak_warn_at is not None
        self.key_failures: LRUMap[tuple[str, str, str], int] = LRUMap(settings.max_keys)
        # every tool with a failing key since the last reset (and maybe some whose keys went since): a
        # success of any other tool has no key to forget. Bounded: at most twice `max_keys` tools
        self._failing_tools: set[str] = set()
        self._streak_key: tuple[str, str, str] | None = None
        self.key_streak = 0
        self._wave = SecondWave.of(settings)  # the second wave's requeries and usage limits; None when off
        self._steps_base = 0  # the query count at the last user message (per_prompt_usage: max_steps from there)
        self._call_rules = settings.max_repetitions is not None or settings.guardrails or self._wave is not None
        # what after_call reads of the settings on every call, as attributes of its own (compiled, a settings
        # read is a look-up on a Python object; an engine attribute is a field)
        self._counts_turns = settings.max_failures is not None
        self._exit_code_failures = settings.exit_code_failures
        self._action_loop = settings.action_loop
        self._guardrails = settings.guardrails
        self._max_steps_on = settings.max_steps is not None

    def state(self, call: ToolCall | None) -> dict[str, Any]:
        """The failed turns in a row, repetitions, the top count in the action window, rejected turns in a row,
        and this call's failures so far (exact, by tool) and its failing key's streak."""
        out: dict[str, Any] = {"failed_turns": self.consecutive_failures, "repetitions": self.repetitions,
                               "top_count": self.top_count, "rejected_streak": self.rejected_streak}
        if call is not None:
            out["exact_failures"] = self.exact_failures.get(call.fingerprint, 0)
            out["tool_failures"] = self.tool_failures.get(call.tool, 0)
        if self._streak_key is not None:
            out["failing_key"] = " ".join(self._streak_key)
            out["key_streak"] = self.key_streak
        return out

    # ---- turns -------------------------------------------------------------------------------------
    def idle_hooks(self) -> frozenset[str]:
        # a turn's size and the reset it may cause serve only the step limit and the turn-failure count
        s = self.settings
        idle = s.max_steps is None and s.max_failures is None and self._wave is None
        return _TURN_START if idle else frozenset()

    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> Verdict | None:
        if self._max_steps_on:
            exhausted = self._max_steps(turn.index + self.rejected - self._steps_base)
            if exhausted is not None:
                return exhausted
        if self._wave is not None:
            self._wave.turn_start(turn)
        size = len(turn.calls)
        self._turn_size = size
        self._turn_seen = self._turn_ran = self._turn_failed = 0
        # a turn that cannot fail by the rule is decided now: no calls, or (browser-use) several calls
        if size == 0:
            return self._empty_turn()
        if size > 1 and self._single_call:
            self.consecutive_failures = 0
        return None

    def _max_steps(self, index: int) -> Verdict | None:
        n = self.settings.max_steps
        if n is None or index < n:
            return None
        return Verdict(NAME, Action.STOP, "failure_tracker.max_steps", f"Stopped: the run used all of its {n} steps.",
                       {"outcome": "exhausted", "max_steps": n})

    @hookimpl
    def loopguard_rejected(self, rejected: Rejected) -> list[Verdict] | None:
        verdicts = [v for v in (self._rejected_as_failed(), self._rejected_streak(rejected)) if v is not None]
        if self._wave is not None and not any(v.reason == "failure_tracker.max_steps" for v in verdicts):
            verdicts += self._wave.rejected(rejected)  # the step limit, checked before the model call, comes first
        return verdicts or None

    def _rejected_as_failed(self) -> Verdict | None:
        # browser-use counts a step whose model output could not be used as a failed step
        if self.settings.rejected_turns != "failed":
            return None
        exhausted = self._max_steps(self.run.turns + self.rejected - self._steps_base)
        self.rejected += 1
        if exhausted is not None:
            return exhausted
        if self.settings.max_failures is None:
            return None
        self._turn_size, self._turn_seen, self._turn_ran, self._turn_failed = 1, 0, 0, 0
        return self._count_turn(blocked=False, failed=True)

    # ---- calls -------------------------------------------------------------------------------------
    @hookimpl
    def loopguard_before_call(self, call: ToolCall, result: ToolResult | None) -> list[Verdict] | None:
        # every argument of the event, in the contract's order: the Guard then calls this method directly
        s = self.settings
        # most calls get no verdict: the list is built only for one that does
        verdicts: list[Verdict] | None = None
        if self.forced_done and self.run.kind(call) != "done":
            n = s.max_failures
            verdicts = [Verdict(
                NAME, Action.STOP, "failure_tracker.max_failures",
                f"Stopped: the agent failed {n} times in a row and was told to call done, but called "
                f"'{call.tool}'.",
                {"count": self.consecutive_failures, "max_failures": n},
            )]
        if not self._call_rules:  # the rules below are off in most policies: asked once, at construction
            return verdicts
        if s.max_repetitions is not None:
            target = (call.tool, tuple(call.args.get(k, _MISSING) for k in s.target_keys))
            self.repetitions = self.repetitions + 1 if target == self._previous_target else 0
            self._previous_target = target
            if self.repetitions >= s.max_repetitions:
                verdicts = [*(verdicts or ()), Verdict(
                    NAME, Action.STOP, "failure_tracker.repetition",
                    f"Stopped: '{call.tool}' repeated on the same target {self.repetitions + 1} times in a row.",
                    {"repetitions": self.repetitions, "max_repetitions": s.max_repetitions, "tool": call.tool},
                )]
        blocks = self._guardrail_blocks(call) if s.guardrails else None
        if blocks is not None:
            verdicts = [*(verdicts or ()), *blocks]
        wave = self._wave.before_call(call) if self._wave is not None else None
        if wave:
            verdicts = [*(verdicts or ()), *wave]
        return verdicts

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> list[Verdict] | None:
        failed = not blocked and result is not None and not result.ok
        self.rejected_streak = 0
        # each rule's verdict, None for most calls: the list is built only when one of them gives one
        turn_verdict = None
        if self._counts_turns:  # with exit_code_failures off a command's exit status is no failure
            turn_verdict = self._count_turn(blocked, failed and (
                self._exit_code_failures or result is None or result.exit_code is None))
        loop_verdict = (self._enter_window(action_identity(call))
                        if self._action_loop and call.tool not in self._exempt else None)
        guard_verdict = self._guardrail_outcome(call, result, failed) if self._guardrails and not blocked else None
        key_verdict = None
        if self._failing_keys and not blocked:
            if failed:
                key_verdict = self._count_key(call, result)
            else:
                self._streak_key, self.key_streak = None, 0
                # only a tool with a failed call since the last reset can have a key to forget: most
                # successful calls skip reading their target
                if call.tool in self._failing_tools:
                    self._forget_key(call)
        wave = self._wave.after_call(call, result, blocked) if self._wave is not None else None
        if turn_verdict is None and loop_verdict is None and guard_verdict is None and key_verdict is None:
            return wave
        return [v for v in (turn_verdict, loop_verdict, guard_verdict, key_verdict) if v is not None] + (wave or [])

    @hookimpl
    def loopguard_message(self, message: Message) -> None:
        if self._failing_keys and message.from_user:
            self.key_failures.clear()
            self._failing_tools.clear()
            self._streak_key, self.key_streak = None, 0
        # Hermes counts per user prompt: a new user message starts the guardrails afresh
        if self.settings.guardrails and message.from_user:
            self.exact_failures.clear()
            self.tool_failures.clear()
            self.no_progress.clear()
        if message.from_user and self.settings.per_prompt_usage:
            self._steps_base = self.run.turns + self.rejected  # a new Pydantic AI run: a new request count
        if message.from_user and self._wave is not None:
            self._wave.prompt()

    # ---- rejected turns ----------------------------------------------------------------------------
    def _rejected_streak(self, rejected: Rejected) -> Verdict | None:
        n = self.settings.rejected_warn_at
        if n is None:
            return None
        self.rejected_streak += 1
        count = self.rejected_streak
        # a warning at n rejections in a row and again every n more: never a stop, since resolved runs
        # hold streaks of 46 (corpus/real) and the harness's own reply already repeats what it wants
        if count < n or (count - n) % n:
            return None
        return Verdict(
            NAME, Action.WARN, "failure_tracker.rejected_streak",
            f"Your last {count} replies were rejected without running anything. The harness said: "
            f"\"{rejected.reason}\" Reply in exactly the form it asks for (for example one action, in the "
            "expected format) instead of another reply like the last ones.",
            {"count": count, "warn_at": n, "reason": rejected.reason},
        )

    # ---- failing keys ------------------------------------------------------------------------------
    def _forget_key(self, call: ToolCall) -> None:
        """A call that ran and succeeded: its key's failures are forgotten."""
        target = self.run.target(call)
        self.key_failures.pop((call.tool, target.verb, target.targets[0] if target.targets else ""), None)

    def _count_key(self, call: ToolCall, result: ToolResult | None) -> Verdict | None:
        """A call that ran and failed: one more failure of its key, and of the streak if it is the same key."""
        target = self.run.target(call)
        key = (call.tool, target.verb, target.targets[0] if target.targets else "")
        tools = self._failing_tools
        tools.add(call.tool)
        n = increment(self.key_failures, key)
        if len(tools) > 2 * self.settings.max_keys:
            # a tool whose keys were all evicted has nothing to forget: the set shrinks to the tools of the
            # (capped) keys, this one's included, and only twice the cap rebuilds it again (O(1) per failure)
            self._failing_tools = {k[0] for k in self.key_failures}
        self.key_streak = self.key_streak + 1 if key == self._streak_key else 1
        self._streak_key = key
        s = self.settings
        any_at, row_at = s.failing_key_warn_at, s.failing_key_streak_warn_at
        in_a_row = row_at is not None and self.key_streak >= row_at
        if not in_a_row and (any_at is None or n < any_at):
            return None
        what = " ".join(p for p in (target.verb, key[2]) if p)
        what = f"'{what}' ({call.tool})" if target.verb != call.tool else f"'{what}'"
        command = call.args.get("command")
        shown = command if isinstance(command, str) else call.ordered
        error = " ".join(((result.result_text if result is not None else None) or "").split())[:160]
        how = f"{self.key_streak} times in a row" if in_a_row else f"{n} times since it last succeeded"
        return Verdict(
            NAME, Action.WARN, "failure_tracker.failing_key",
            f"{what} has failed {how}; the last call was: {shown[:200]}"
            + (f" and it said: {error}" if error else "") + ". Retrying it will fail again: read the error, "
            "check the assumption it contradicts (the file's current content, the working directory, the "
            "exact text to replace), or take a different step.",
            {"tool": call.tool, "verb": target.verb, "target": key[2], "count": n, "in_a_row": self.key_streak,
             "warn_at": any_at, "streak_warn_at": row_at},
        )

    # ---- failed turns ------------------------------------------------------------------------------
    def _empty_turn(self) -> Verdict | None:
        """A turn in which no call ran (`empty_turns`): the count to 0, as it was, or one more failed turn."""
        rule = self.settings.empty_turns
        if rule == "reset":
            self.consecutive_failures = 0
        elif rule == "fail" and self.settings.max_failures is not None:
            self.consecutive_failures += 1
            return self._judge_count()
        return None

    def _count_turn(self, blocked: bool, failed: bool) -> Verdict | None:
        self._turn_seen += 1
        if not blocked:
            self._turn_ran += 1
            self._turn_failed += failed
        if self._each_call:  # Cline: every call that ran counts, the count is compared after the turn's last
            if not blocked:
                self.consecutive_failures = self.consecutive_failures + 1 if failed else 0
            if self._turn_seen != self._turn_size:
                return None
            if not self._turn_ran:
                return self._empty_turn()
            return self._judge_count() if self.consecutive_failures else None
        if self._single_call:
            if self._turn_size != 1:
                return None  # a multi-call turn was reset at its start
            if blocked:
                return self._empty_turn()
            turn_failed = failed
        else:
            if self._turn_seen != self._turn_size:
                return None  # decided on the turn's last call
            if not self._turn_ran:
                return self._empty_turn()
            turn_failed = self._turn_failed == self._turn_ran
        if not turn_failed:
            self.consecutive_failures = 0
            return None
        self.consecutive_failures += 1
        return self._judge_count()

    def _judge_count(self) -> Verdict | None:
        """The failed-turn count went up: the forced done or stop at `max_failures`, else perhaps a warning."""
        s = self.settings
        n = s.max_failures
        assert n is not None
        count = self.consecutive_failures
        # each_call: the calls of one turn may pass the limit together, so at or past it
        if (count < n if self._each_call else count != n) or self.forced_done:
            return self._failures_warning()
        data = {"count": self.consecutive_failures, "max_failures": n}
        if not s.final_response_after_failure:
            return Verdict(NAME, Action.STOP, "failure_tracker.max_failures",
                           f"Stopped: the agent failed {n} times in a row.", data)
        self.forced_done = True
        return Verdict(NAME, Action.WARN, "failure_tracker.force_done", self._force_done_message(n), data)

    def _failures_warning(self) -> Verdict | None:
        at, count = self.settings.failures_warn_at, self.consecutive_failures
        if at is None or count < at or (count - at) % at or self.forced_done:
            return None
        return Verdict(
            NAME, Action.WARN, "failure_tracker.failed_turns",
            f"Your last {count} turns all failed. Repeating the same kind of step will fail again: stop and "
            "check the assumption behind them (is the environment, path or tool what you think it is?), or "
            "try a smaller step that can succeed.",
            {"count": count, "warn_at": at, "max_failures": self.settings.max_failures},
        )

    def _force_done_message(self, n: int) -> str:
        return (
            f"You failed {n} times. Therefore we terminate the agent.\n"
            'Your only tool available is the "done" tool; no other tool is available, whatever the history '
            "or the examples show.\n"
            'If the task is not fully finished as the user asked, set success in "done" to false; '
            "otherwise set it to true.\n"
            'Put everything you found out for the task in the "done" text.\n'
            f"\nOriginal task: {self.run.objective}"
        )

    # ---- action loop -------------------------------------------------------------------------------
    def _enter_window(self, identity: Hashable) -> Verdict | None:
        window, counts, having = self._window, self._identity_counts, self._identities_with
        if len(window) >= self.settings.action_loop_window:
            old = window.popleft()
            n = counts[old]
            having[n] -= 1
            if n == 1:
                del counts[old]
            else:
                counts[old] = n - 1
                having[n - 1] += 1
            if n == self.top_count and not having[n]:
                self.top_count = n - 1
        window.append(identity)
        n = counts[identity] + 1
        counts[identity] = n
        if n > 1:
            having[n - 1] -= 1
        having[n] += 1
        if n > self.top_count:
            self.top_count = n
        top = self.top_count
        levels = self._levels
        if not levels or top < levels[0]:
            return None
        rank = 0
        while rank + 1 < len(levels) and top >= levels[rank + 1]:
            rank += 1
        advice = ACTION_LOOP_ADVICE[min(rank, len(ACTION_LOOP_ADVICE) - 1)]
        return Verdict(
            NAME, Action.WARN, "failure_tracker.action_loop",
            f"You repeated a similar action {top} times in your last {len(window)} actions. {advice}",
            {"level": levels[rank], "count": top, "window": self.settings.action_loop_window},
        )

    # ---- guardrails --------------------------------------------------------------------------------
    def _guardrail_blocks(self, call: ToolCall) -> list[Verdict] | None:
        s = self.settings
        out: list[Verdict] | None = None  # a list only for a call that is blocked
        signature = call.fingerprint
        if s.exact_failure_block_at is not None:
            exact = self.exact_failures.get(signature, 0)
            if exact >= s.exact_failure_block_at:
                out = [Verdict(
                    NAME, Action.BLOCK, "failure_tracker.exact_failure",
                    f"Blocked: '{call.tool}' failed {exact} times with these exact arguments. Do not retry it "
                    "unchanged; change strategy or explain the blocker.",
                    {"count": exact, "block_at": s.exact_failure_block_at, "tool": call.tool},
                )]
        if s.no_progress_block_at is not None and call.tool in self._read_only:
            progress = self.no_progress.get(signature)
            if progress is not None and progress[1] >= s.no_progress_block_at:
                out = [*(out or ()), Verdict(
                    NAME, Action.BLOCK, "failure_tracker.no_progress",
                    f"Blocked: '{call.tool}' returned the same result {progress[1]} times. Use the result you "
                    "already have or change the query.",
                    {"count": progress[1], "block_at": s.no_progress_block_at, "tool": call.tool},
                )]
        return out

    def _guardrail_outcome(self, call: ToolCall, result: ToolResult | None, failed: bool) -> Verdict | None:
        s = self.settings
        signature, tool = call.fingerprint, call.tool
        if failed:
            exact = increment(self.exact_failures, signature)
            same = increment(self.tool_failures, tool)
            self.no_progress.pop(signature, None)
            if s.same_tool_failure_stop_at is not None and same >= s.same_tool_failure_stop_at:
                return Verdict(
                    NAME, Action.STOP, "failure_tracker.same_tool_failure",
                    f"Stopped: '{tool}' failed {same} times in this prompt.",
                    {"count": same, "stop_at": s.same_tool_failure_stop_at, "tool": tool},
                )
            if exact >= s.exact_failure_warn_at:
                return Verdict(
                    NAME, Action.WARN, "failure_tracker.exact_failure",
                    f"'{tool}' failed {exact} times with identical arguments. This looks like a loop: read the "
                    "error and change strategy instead of retrying it unchanged.",
                    {"count": exact, "warn_at": s.exact_failure_warn_at, "tool": tool},
                )
            if same >= s.same_tool_failure_warn_at:
                return Verdict(
                    NAME, Action.WARN, "failure_tracker.same_tool_failure",
                    f"'{tool}' failed {same} times in this prompt. This looks like a loop: change approach "
                    "before retrying.",
                    {"count": same, "warn_at": s.same_tool_failure_warn_at, "tool": tool},
                )
            return None
        self.exact_failures.pop(signature, None)
        self.tool_failures.pop(tool, None)
        if tool not in self._read_only:
            return None
        # a result without text compares as empty text, as Hermes compares `result or ""`
        text = (result.result_text if result is not None else None) or ""
        previous = self.no_progress.get(signature)
        chain = previous[1] + 1 if previous is not None and previous[0] == text else 1
        self.no_progress[signature] = (text, chain)
        if chain >= s.no_progress_warn_at:
            return Verdict(
                NAME, Action.WARN, "failure_tracker.no_progress",
                f"'{tool}' returned the same result {chain} times. Use the result you already have or change "
                "the query instead of repeating it.",
                {"count": chain, "warn_at": s.no_progress_warn_at, "tool": tool},
            )
        return None


ENGINE = FailureTracker
