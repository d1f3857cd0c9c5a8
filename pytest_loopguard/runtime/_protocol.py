"""The run protocol: the one state machine that feeds a run's events to the Guard in order and decides how it ends.

Every driver of a run is a thin adapter over `Run`: replay (`feed_all`) and the streaming replay (`feed`) give
it recorded steps, the live `Session` and the simulator's agent loop give it events as they happen, in two
stages where the agent acts in between (the model answers; the call runs). So a run gets the same verdicts
and outcome whoever drives it. The Guard is called in this order (the names on the right are the `op`s of
the guard protocol over a pipe, version 1; one `Run` method per step kind):

    step kind    Run method (stage)                 Guard calls, in order
    ---------    ------------------                 ---------------------
    llm          model(llm, calls, i)    ASK        turn_end · before_llm
                    (the agent calls the model)
                                         ANSWER     llm_result · turn_start(calls, llm) — unless the model call
                                                    failed or a verdict so far is `fail`
    rejected     model_refused(...)   after ASK     llm_result · rejected
                 rejected(refused, i)               rejected (the Guard ends the turn, and feeds the usage
                                                    as before_llm · llm_result, first)
    tool         call(call, changed, opens, ..)
                                         BEFORE     [turn_end · turn_start([calls]) — when the call opens a
                                                    turn: no model calls reported] · before_call — a turn
                                                    start that stops or fails the run skips the rest
                    (the call runs only when allowed or warned)
                                         AFTER      after_call(result; null and blocked when it did not run)
                                                    — none for a call the engines allowed that never ran
                                                    (denied or cancelled: `not_run`)
    message      message(msg, i)                    message
    phase        phase(p, i)                        phase
    done         done(done, i)                      done
    compacted    (none)                             none: the log's own compaction event reaches no engine
    (the end)    finish(max_turns) / close()        turn_end — unless the run already ended

A recorded step is fed WHOLE (both stages at once). Verdicts land on the step `i` whose events drew them. A
step whose combined action is `stop` or `fail` ends the run there: `stopped` (`exhausted` when the verdict
says so) or `failed`, with `stopped_at` / `stopped_by`; a `done` step, or a call of kind `done` that ran,
completes it unless a verdict on it ended the run first; a driver may give up (`incomplete`); a run whose
events run out is `exhausted` when it used every turn of its limit, else `incomplete`. Once the run has
ended nothing more is fed: later steps are not reached.

A recorded trace groups its calls into turns by `turn_plan`: a model call's turn holds the tool steps up
to the next one; a trace without model calls has one turn per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, final

from ..core._model import (
    NOT_REACHED,
    OK,
    Action,
    Done,
    LLMCall,
    Message,
    Outcome,
    Rejected,
    Step,
    StepAction,
    ToolCall,
    ToolResult,
    Verdict,
    combine,
    run_end,
)
from ._guard import RUNS, Decision, Guard

__all__ = ["AFTER", "ANSWER", "ASK", "BEFORE", "WHOLE", "Run", "turn_plan"]

_CHANGED: Final = ToolResult(changed=True)
# module globals: cheaper to read than the enums' attributes, on every step
_ALLOW: Final = Action.ALLOW
_FAIL: Final = Action.FAIL
_ENDS: Final = frozenset((Action.STOP, Action.FAIL))  # the actions that end the run

# The stages of a model call and of a tool call: a live driver feeds the first, lets the model answer or the
# call run, then feeds the second; a recorded step is fed whole. One method per event keeps its order in one
# place, and a recorded step costs one call.
ASK: Final = 1
ANSWER: Final = 2
BEFORE: Final = 1
AFTER: Final = 2
WHOLE: Final = 3


def turn_plan(steps: Sequence[Step], *, has_llm: bool | None = None) -> dict[int, tuple[ToolCall, ...]]:
    """Where each turn starts (step index) and its calls.

    A successful `llm` step starts a turn whose calls are the tool steps up to the next `llm` step; tool
    steps before the first `llm` step (or after a failed one) form a turn starting at the first of them;
    a trace without `llm` steps has one turn per tool call. A `rejected` step is a turn of its own with
    no calls: tool steps after it (before the next `llm` step) start a new turn.

    `has_llm` says whether the whole trace has `llm` steps when `steps` is only a stretch of it (the
    streaming replay plans one stretch, from an `llm` step to the next, at a time).
    """
    if has_llm is None:
        has_llm = any(s.kind == "llm" for s in steps)
    plan: dict[int, list[ToolCall]] = {}
    current: list[ToolCall] | None = None  # the calls of the turn being planned; None: the next call starts one
    for step in steps:
        if step.kind == "tool":  # tool steps first: they are most of a trace
            if current is None or not has_llm:
                current = plan[step.index] = []
            current.append(step.call)
        elif step.kind == "llm":
            if step.llm.error is None:
                current = plan[step.index] = []
            else:
                current = None
        elif step.kind == "rejected":
            current = None
    return {k: tuple(v) for k, v in plan.items()}


@final
class Run:
    """One run in progress over a Guard: its events in the protocol's order, and how it ended.

    `outcome` is None while the run goes on; `stopped_at` / `stopped_by` name the step and engine that
    stopped or failed it. `before` is the before-call decision of the call in flight (None when the turn
    its call opened ended the run, so the call never reached the engines).
    """

    __slots__ = ("_clock", "_ctx", "_kind_of", "_opened", "before", "guard", "outcome", "stopped_at", "stopped_by")

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self._clock = guard.run.clock
        self._ctx = guard.run  # its `step` names the step being fed, for what reports on a run from outside
        self._kind_of = guard.run.kind
        self.outcome: Outcome | None = None
        self.stopped_at: int | None = None
        self.stopped_by: str | None = None
        self.before: Decision | None = None
        self._opened: tuple[Verdict, ...] = ()  # verdicts of the turn the call in flight opened

    # ---- model calls ----------------------------------------------------------------------------------
    def model(self, llm: LLMCall, calls: Sequence[ToolCall], index: int | None, stage: int = WHOLE,
              asked: tuple[Verdict, ...] = ()) -> tuple[Verdict, ...]:
        """A model call's events. ASK: the last turn ends and the policy may compact the prompt view (before the
        call; its verdicts). ANSWER: the model's answer and the calls it asks for, which start a turn unless
        the call failed or a verdict on it (`asked`: ASK's) fails the run (the step's verdicts). WHOLE: both,
        for a recorded model call."""
        self._ctx.step = index
        guard = self.guard
        if stage != ANSWER:  # ASK or WHOLE (a comparison of small ints: cheaper than a bit test, every step)
            guard.end_turn()
            asked = guard.before_llm(llm).verdicts
            if stage == ASK:
                return asked
        verdicts = asked + guard.llm_result(llm).verdicts if asked else guard.llm_result(llm).verdicts
        if llm.error is None and combine(verdicts) != _FAIL:
            verdicts += guard.start_turn(calls, llm).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    def model_refused(self, llm: LLMCall, refused: Rejected, index: int | None,
                      asked: tuple[Verdict, ...] = ()) -> tuple[Verdict, ...]:
        """The model's answer (`llm`, after `model(..., ASK)`) was refused by the harness: a turn with no call."""
        self._ctx.step = index
        guard = self.guard
        verdicts = asked + guard.llm_result(llm).verdicts + guard.rejected(refused).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    def rejected(self, refused: Rejected, index: int | None) -> tuple[Verdict, ...]:
        """A refused model answer reported on its own (its usage, if any, counts as a model call's)."""
        self._ctx.step = index
        verdicts = self.guard.rejected(refused).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    # ---- tool calls -----------------------------------------------------------------------------------
    def call(self, call: ToolCall, changed: bool, opens: Sequence[ToolCall] | None, result: ToolResult | None,
             index: int | None, stage: int = WHOLE, not_run: bool = False) -> tuple[Verdict, ...]:
        """A tool call's events. BEFORE: up to the decision whether it runs (allow or warn: see `before`);
        `changed`: its file changed outside the agent; `opens`: the calls of the turn it starts (None: it is
        in the current turn). AFTER: what it gave (`result`), fed only if it ran; a call of kind `done` that
        ran completes the run. WHOLE: both, for a recorded call. The verdicts so far (the step's after AFTER).

        `not_run`: the call never ran although the engines may have allowed it (a person or a permission rule
        denied it, or its batch was cancelled). The engines counted it before the call, as any call the agent
        made; if they blocked it, it is a blocked call; otherwise no engine hears of it after the call (no
        result, not a failure, nothing in the prompt view) and the step's verdicts are those before it."""
        self._ctx.step = index
        guard = self.guard
        if stage != AFTER:  # BEFORE or WHOLE
            opened: tuple[Verdict, ...] = ()
            if opens is not None:
                guard.end_turn()
                opened = guard.start_turn(opens).verdicts
                if opened and combine(opened) in _ENDS:
                    self.before = None  # the run ended before the call: it never reaches the engines
                    self._opened = opened
                    return self._ends(opened, index)
            before = guard.before_call(call, _CHANGED if changed else None)
            if stage == BEFORE:
                self.before = before
                self._opened = opened
                return opened + before.verdicts if opened else before.verdicts
        else:
            opened = self._opened
            maybe = self.before
            if maybe is None:  # the turn's start ended the run: the call never ran
                return opened
            before = maybe
        action = before.action
        ran = action in RUNS
        if not_run and ran:
            guard.not_run(call)
            verdicts = before.verdicts
            ran = False
        else:
            verdicts = guard.after_call(call, (result or OK) if ran else None, before).verdicts
        if opened:
            verdicts = opened + verdicts
        if verdicts:
            self._ends(verdicts, index)
        if ran and self.outcome is None and self._kind_of(call) == "done":
            self.outcome = Outcome.COMPLETED
        return verdicts

    def before_call(self, call: ToolCall, changed: bool, opens: Sequence[ToolCall] | None,
                    index: int | None) -> Decision:
        """`call`'s BEFORE stage as a decision (what a live agent is told before it runs the call)."""
        verdicts = self.call(call, changed, opens, None, index, BEFORE)
        before = self.before
        if before is not None and not self._opened:
            return before
        return Decision(combine(verdicts), verdicts)

    def after_call(self, call: ToolCall, result: ToolResult | None, index: int | None) -> tuple[Verdict, ...]:
        """`call`'s AFTER stage: the step's verdicts."""
        return self.call(call, False, None, result, index, AFTER)

    def not_run(self, call: ToolCall, index: int | None) -> tuple[Verdict, ...]:
        """`call`'s AFTER stage for a call that never ran (denied or cancelled): the step's verdicts."""
        return self.call(call, False, None, None, index, AFTER, True)

    # ---- other events ---------------------------------------------------------------------------------
    def message(self, message: Message, index: int | None) -> tuple[Verdict, ...]:
        self._ctx.step = index
        verdicts = self.guard.message(message).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    def phase(self, phase: str, index: int | None) -> tuple[Verdict, ...]:
        self._ctx.step = index
        verdicts = self.guard.phase(phase).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    def done(self, done: Done, index: int | None) -> tuple[Verdict, ...]:
        """The agent's final answer: the run is completed unless a verdict on it ends it otherwise."""
        self._ctx.step = index
        verdicts = self.guard.done(done).verdicts
        if verdicts:
            self._ends(verdicts, index)
        if self.outcome is None:
            self.outcome = Outcome.COMPLETED
        return verdicts

    # ---- a recorded step ------------------------------------------------------------------------------
    def feed(self, step: Step, calls: tuple[ToolCall, ...] | None) -> tuple[Verdict, ...]:
        """The verdicts on one recorded step of a run that has not ended: its events, in order. `calls`: those
        of the turn the step starts (`turn_plan`; None: it starts none). The step's `t` sets the clock."""
        t = step.t
        if t is not None:
            clock = self._clock
            if t > clock.now_ms:  # Clock.set, inlined: this runs for every step
                clock.now_ms = t
        if step.kind == "tool":
            recorded = step.result
            # engines learn only what is known before a call runs: whether the file changed outside
            return self.call(step.call, recorded is not None and recorded.changed, calls, recorded, step.index,
                             WHOLE, step.not_run is not None)
        if step.kind == "llm":
            return self.model(step.llm, calls or (), step.index)
        if step.kind == "phase":
            return self.phase(step.phase, step.index)
        if step.kind == "message":
            return self.message(step.message, step.index)
        if step.kind == "rejected":
            return self.rejected(step.rejected, step.index)
        if step.kind == "compacted":
            return ()  # the real agent's own compaction: recorded for reports, heard by no engine
        return self.done(step.done, step.index)

    def feed_all(self, steps: Sequence[Step]) -> tuple[list[StepAction], dict[int, tuple[Verdict, ...]]]:
        """Feed a loaded trace's steps until the run ends: each step's action (`not_reached` once it has ended)
        and, by position, the verdicts of the steps that have any. Each step is `feed`'s, with its two
        commonest kinds dispatched here, so that a replay costs no call per step beyond the protocol's."""
        planned = turn_plan(steps).get
        actions: list[StepAction] = []
        record = actions.append
        verdicts: dict[int, tuple[Verdict, ...]] = {}
        clock = self._clock
        tool_call, model_call, feed, allow = self.call, self.model, self.feed, _ALLOW
        for i, step in enumerate(steps):
            if step.kind == "tool":
                t = step.t
                if t is not None and t > clock.now_ms:
                    clock.now_ms = t
                index = step.index
                recorded = step.result
                if step.not_run is None:
                    got = tool_call(step.call, recorded is not None and recorded.changed, planned(index), recorded,
                                    index)
                else:  # a call that never ran; one blocked live may hold what was known before it (`changed`)
                    got = tool_call(step.call, recorded is not None and recorded.changed, planned(index), None,
                                    index, WHOLE, True)
            elif step.kind == "llm":
                t = step.t
                if t is not None and t > clock.now_ms:
                    clock.now_ms = t
                index = step.index
                got = model_call(step.llm, planned(index) or (), index)
            else:
                got = feed(step, planned(step.index))
            if got:
                verdicts[i] = got
                record(combine(got))
            else:
                record(allow)
            if self.outcome is not None:
                break
        actions += [NOT_REACHED] * (len(steps) - len(actions))
        return actions, verdicts

    # ---- the end --------------------------------------------------------------------------------------
    def give_up(self) -> None:
        """The driver ends the run here without a verdict (an error nothing recovers): incomplete."""
        if self.outcome is None:
            self.outcome = Outcome.INCOMPLETE

    def close(self) -> None:
        """No more events: the last turn ends (unless the run already ended), and the Guard hears the run is over."""
        if self.outcome is None:
            self.guard.end_turn()
        self.guard.end_run(self.outcome)

    def final(self, max_turns: int | None) -> Outcome:
        """The outcome of a closed run: how it ended, else `exhausted` when it used every turn of
        `max_turns`, else `incomplete`."""
        if self.outcome is not None:
            return self.outcome
        ran_out = max_turns is not None and self.guard.run.turns >= max_turns
        return Outcome.EXHAUSTED if ran_out else Outcome.INCOMPLETE

    def finish(self, max_turns: int | None) -> Outcome:
        """The last turn ends (unless the run already ended); the run's `final` outcome, kept as `outcome`; then
        the Guard hears the run is over."""
        if self.outcome is None:
            self.guard.end_turn()
        outcome = self.outcome = self.final(max_turns)
        self.guard.end_run(outcome)
        return outcome

    def _ends(self, verdicts: tuple[Verdict, ...], index: int | None) -> tuple[Verdict, ...]:
        """`verdicts` (not empty), ending the run at step `index` when they stop or fail it."""
        action = combine(verdicts)
        if action in _ENDS:
            self.outcome, self.stopped_by = run_end(action, verdicts)
            self.stopped_at = index
        return verdicts
