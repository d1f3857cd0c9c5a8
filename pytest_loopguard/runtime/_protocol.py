"""The run protocol: the one state machine that feeds a run's events to the Guard in order and decides how it ends.

Every driver of a run is a thin adapter over `Run`: replay and the streaming replay feed recorded steps
(`Run.feed`), the live `Session` and the simulator's agent loop feed events as they happen (the methods
below), so a run gives the same verdicts and outcome whoever drives it. Each method is one step's part of
the run and calls the Guard in the protocol's order (the `op` names are those of docs PROTOCOL, version 1):

    model call      model_call(llm)                  turn_end · before_llm
                      (the agent calls the model)
                    model_result(llm, calls, i)      llm_result · turn_start(calls, llm)  unless the model
                                                     call failed or a verdict so far is `fail`
                    model_refused(llm, refused, i)   llm_result · rejected      (a refused answer)
    refused turn    rejected(refused, i)             rejected   (the Guard ends the turn first)
    tool call       before_call(call, changed,       [turn_end · turn_start([calls])  when the call opens
                                opens, i)             a turn: a trace or session without model calls]
                                                     before_call      — a turn start that stops or
                                                                        fails the run skips the call
                      (the call runs only when allowed or warned)
                    after_call(call, result, i)      after_call(result, or null when it did not run)
    message         message(msg, i)                  message
    phase           phase(p, i)                      phase
    final answer    done(done, i)                    done
    end of events   finish(max_turns)                turn_end   (unless the run already ended)

Verdicts land on the step `i` whose events drew them. A step whose combined action is `stop` or `fail`
ends the run there (`stopped` — `exhausted` when the verdict says so — or `failed`; `stopped_at`,
`stopped_by`); a `done` step, or a call of kind `done` that ran, completes it unless a verdict on it
ended the run first; a run whose events run out is `exhausted` when it used every turn of its limit,
else `incomplete`. Once it has ended nothing more is fed: later steps are not reached.

A recorded trace groups its calls into turns by `turn_plan`: a model call's turn holds the tool steps up
to the next one; a trace without model calls has one turn per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, final

from ..core._model import (
    OK,
    Done,
    LLMCall,
    Message,
    Outcome,
    Rejected,
    Step,
    ToolCall,
    ToolResult,
    Verdict,
    combine,
    run_end,
)
from ._guard import Decision, Guard

__all__ = ["Run", "turn_plan"]

_CHANGED: Final = ToolResult(changed=True)


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
        kind = step.kind  # tool steps first: they are most of a trace
        if kind == "tool":
            call = step.call
            assert call is not None
            if current is None or not has_llm:
                current = plan[step.index] = []
            current.append(call)
        elif kind == "llm":
            assert step.llm is not None
            if step.llm.error is None:
                current = plan[step.index] = []
            else:
                current = None
        elif kind == "rejected":
            current = None
    return {k: tuple(v) for k, v in plan.items()}


@final
class Run:
    """One run in progress over a Guard: its events in the protocol's order, and how it ended.

    `outcome` is None while the run goes on; `stopped_at` / `stopped_by` name the step and engine that
    stopped or failed it. `before` is the before-call decision of the call in flight (None when the turn
    its call opened ended the run, so the call never reached the engines).
    """

    __slots__ = ("_clock", "_kind_of", "_opened", "before", "guard", "outcome", "stopped_at", "stopped_by")

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self._clock = guard.run.clock
        self._kind_of = guard.run.kind
        self.outcome: Outcome | None = None
        self.stopped_at: int | None = None
        self.stopped_by: str | None = None
        self.before: Decision | None = None
        self._opened: tuple[Verdict, ...] = ()  # verdicts of the turn the call in flight opened

    # ---- model calls ----------------------------------------------------------------------------------
    def model_call(self, llm: LLMCall) -> tuple[Verdict, ...]:
        """Before a model call: the last turn ends, and the policy may compact the prompt view."""
        guard = self.guard
        guard.end_turn()
        return guard.before_llm(llm).verdicts

    def model_result(self, llm: LLMCall, calls: Sequence[ToolCall], index: int | None,
                     asked: tuple[Verdict, ...] = ()) -> tuple[Verdict, ...]:
        """The model's answer and the calls it asks for: they start a turn unless the model call failed or
        a verdict on it (`asked`: those of `model_call`) fails the run. The step's verdicts."""
        guard = self.guard
        verdicts = asked + guard.llm_result(llm).verdicts if asked else guard.llm_result(llm).verdicts
        if llm.error is None and combine(verdicts) != "fail":
            verdicts += guard.start_turn(calls, llm).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    def model_refused(self, llm: LLMCall, refused: Rejected, index: int | None,
                      asked: tuple[Verdict, ...] = ()) -> tuple[Verdict, ...]:
        """The model's answer (`llm`, after `model_call`) was refused by the harness: a turn with no call."""
        guard = self.guard
        verdicts = asked + guard.llm_result(llm).verdicts + guard.rejected(refused).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    def rejected(self, refused: Rejected, index: int | None) -> tuple[Verdict, ...]:
        """A refused model answer reported on its own (its usage, if any, counts as a model call's)."""
        verdicts = self.guard.rejected(refused).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    # ---- tool calls -----------------------------------------------------------------------------------
    def before_call(self, call: ToolCall, changed: bool, opens: Sequence[ToolCall] | None,
                    index: int | None) -> Decision:
        """Before a call runs (it runs when the decision is allow or warn). `changed`: its file changed outside
        the agent; `opens`: the calls of the turn this call starts (None: it is in the current turn)."""
        guard = self.guard
        opened: tuple[Verdict, ...] = ()
        if opens is not None:
            guard.end_turn()
            opened = guard.start_turn(opens).verdicts
            if opened and combine(opened) in ("stop", "fail"):
                self._opened = self._ends(opened, index)
                self.before = None  # the run ended before the call: it never reaches the engines
                return Decision(combine(opened), opened)
        self._opened = opened
        before = self.before = guard.before_call(call, _CHANGED if changed else None)
        if opened:
            verdicts = opened + before.verdicts
            return Decision(combine(verdicts), verdicts)
        return before

    def after_call(self, call: ToolCall, result: ToolResult | None, index: int | None) -> tuple[Verdict, ...]:
        """What the call gave: fed to the engines only if the call ran (else it was blocked). A call of kind
        `done` that ran completes the run. The step's verdicts."""
        before = self.before
        if before is None:  # the turn's start ended the run: the call never ran
            return self._opened
        action = before.action
        ran = action == "allow" or action == "warn"
        verdicts = self.guard.after_call(call, (result or OK) if ran else None, before).verdicts
        opened = self._opened
        if opened:
            verdicts = opened + verdicts
        if verdicts:
            self._ends(verdicts, index)
        if ran and self.outcome is None and self._kind_of(call) == "done":
            self.outcome = "completed"
        return verdicts

    # ---- other events ---------------------------------------------------------------------------------
    def message(self, message: Message, index: int | None) -> tuple[Verdict, ...]:
        verdicts = self.guard.message(message).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    def phase(self, phase: str, index: int | None) -> tuple[Verdict, ...]:
        verdicts = self.guard.phase(phase).verdicts
        return self._ends(verdicts, index) if verdicts else verdicts

    def done(self, done: Done, index: int | None) -> tuple[Verdict, ...]:
        """The agent's final answer: the run is completed unless a verdict on it ends it otherwise."""
        verdicts = self.guard.done(done).verdicts
        if verdicts:
            self._ends(verdicts, index)
        if self.outcome is None:
            self.outcome = "completed"
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
        kind = step.kind
        if kind == "tool":
            call = step.call
            assert call is not None
            recorded = step.result
            index = step.index
            # engines learn only what is known before a call runs: whether the file changed outside
            self.before_call(call, recorded is not None and recorded.changed, calls, index)
            return self.after_call(call, recorded, index)
        if kind == "llm":
            llm = step.llm
            assert llm is not None
            return self.model_result(llm, calls or (), step.index, self.model_call(llm))
        if kind == "phase":
            assert step.phase is not None
            return self.phase(step.phase, step.index)
        if kind == "message":
            assert step.message is not None
            return self.message(step.message, step.index)
        if kind == "rejected":
            assert step.rejected is not None
            return self.rejected(step.rejected, step.index)
        assert step.done is not None
        return self.done(step.done, step.index)

    # ---- the end --------------------------------------------------------------------------------------
    def give_up(self) -> None:
        """The driver ends the run here without a verdict (an error nothing recovers): incomplete."""
        if self.outcome is None:
            self.outcome = "incomplete"

    def close(self) -> None:
        """No more events: the last turn ends (unless the run already ended)."""
        if self.outcome is None:
            self.guard.end_turn()

    def final(self, max_turns: int | None) -> Outcome:
        """The outcome of a closed run: how it ended, else `exhausted` when it used every turn of
        `max_turns`, else `incomplete`."""
        if self.outcome is not None:
            return self.outcome
        return "exhausted" if max_turns is not None and self.guard.run.turns >= max_turns else "incomplete"

    def finish(self, max_turns: int | None) -> Outcome:
        """`close`, then the run's `final` outcome, kept as `outcome`."""
        self.close()
        outcome = self.outcome = self.final(max_turns)
        return outcome

    def _ends(self, verdicts: tuple[Verdict, ...], index: int | None) -> tuple[Verdict, ...]:
        """`verdicts` (not empty), ending the run at step `index` when they stop or fail it."""
        action = combine(verdicts)
        if action == "stop" or action == "fail":
            self.outcome, self.stopped_by = run_end(action, verdicts)
            self.stopped_at = index
        return verdicts
