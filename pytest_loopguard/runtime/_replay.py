"""Verdict replay: one pass of a recorded trace through a fresh Guard.

Replay is a counterfactual: a call that the engines block is treated as not executed (its recorded
result is not fed to them; they are told it was blocked) and the recorded sequence goes on. The run
ends at a `stop` (outcome stopped, or exhausted when the verdict says so), a `fail` (failed) or a
`done` (completed); later steps are `not_reached`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core._model import (
    OK,
    Outcome,
    ReplayResult,
    Step,
    StepResult,
    ToolCall,
    ToolResult,
    Trace,
    Verdict,
    combine,
    run_end,
)
from ._guard import Clock, Guard
from ._policy import Policy, resolve_policy

__all__ = ["Replayer", "policy_for", "replay", "turn_plan"]

_CHANGED = ToolResult(changed=True)


def policy_for(trace: Trace, policy: Any = None) -> tuple[Policy, str]:
    """The policy a trace replays under (the argument, else the trace's own), and its name as given."""
    spec = policy if policy is not None else trace.policy
    # a policy file the trace names is found beside it (then under its corpus root); one the caller passes
    # (a command-line option, an argument) is taken as given
    base_dir = Path(trace.path).parent if trace.path and policy is None else None
    resolved = resolve_policy(spec, base_dir=base_dir)
    return resolved, spec if isinstance(spec, str) else resolved.name


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


def replay(trace: Trace, policy: Any = None, *, plugins: Sequence[object] = ()) -> ReplayResult:
    """Replay `trace` under `policy` (default: the trace's own policy, else `default`)."""
    resolved, policy_name = policy_for(trace, policy)
    replayer = Replayer(trace, resolved, trace.objective, plugins=plugins)
    steps = trace.steps
    planned = turn_plan(steps).get
    advance = replayer.advance
    # per step only its action, and verdicts where there are any: the result builds StepResults on demand
    actions: list[str] = []
    record = actions.append
    verdicts: dict[int, tuple[Verdict, ...]] = {}
    for i, step in enumerate(steps):
        got = advance(step, planned(step.index))
        if got:
            verdicts[i] = got
            record(combine(got))
        else:
            record("allow")
        if replayer.outcome is not None:
            break
    actions += ["not_reached"] * (len(steps) - len(actions))
    outcome = replayer.finish()
    return ReplayResult.of_actions(trace, policy_name, outcome, replayer.stopped_at, replayer.stopped_by, actions,
                                   verdicts)


class Replayer:
    """One replay in progress: feed it the steps in order (with the calls of the turn each starts), then
    `finish`. `replay` feeds a loaded trace; the streaming replay feeds steps as it reads them."""

    __slots__ = ("_clock", "_kind_of", "guard", "outcome", "stopped_at", "stopped_by", "trace")

    def __init__(self, trace: Trace, policy: Policy, objective: str, *, plugins: Sequence[object] = ()) -> None:
        self.trace = trace
        self._clock = Clock()
        self.guard = Guard(policy, task=trace.task, objective=objective, context=trace.context, clock=self._clock,
                           plugins=plugins)
        self._kind_of = self.guard.run.kind
        self.outcome: Outcome | None = None
        self.stopped_at: int | None = None
        self.stopped_by: str | None = None

    def step(self, step: Step, calls: tuple[ToolCall, ...] | None) -> StepResult:
        """The result of one step; `calls` are the calls of the turn the step starts (None: it starts none)."""
        if self.outcome is not None:
            call = step.call
            return StepResult(step.index, step.kind, call.tool if call is not None else None, "not_reached")
        return self.result_of(step, self.advance(step, calls))

    @staticmethod
    def result_of(step: Step, verdicts: tuple[Verdict, ...]) -> StepResult:
        """The result of a reached step given its verdicts."""
        call = step.call
        return StepResult(step.index, step.kind, call.tool if call is not None else None,
                          combine(verdicts) if verdicts else "allow", verdicts)

    def advance(self, step: Step, calls: tuple[ToolCall, ...] | None) -> tuple[Verdict, ...]:
        """The verdicts on one step of a run that has not ended; sets `outcome` when the step ends it."""
        guard = self.guard
        kind = step.kind
        t = step.t
        if t is not None and t > self._clock.now_ms:  # Clock.set, inlined: this runs for every step
            self._clock.now_ms = t
        verdicts: tuple[Verdict, ...] = ()
        if kind == "tool":
            call = step.call
            assert call is not None
            if calls is not None:
                guard.end_turn()
                verdicts = guard.start_turn(calls).verdicts
                if verdicts and _ends(verdicts):
                    return self._ended(step, verdicts)
            # engines learn only what is known before a call runs: whether the file changed outside
            recorded = step.result
            before = guard.before_call(call, _CHANGED if recorded is not None and recorded.changed else None)
            ran = before.action == "allow" or before.action == "warn"
            after = guard.after_call(call, (recorded or OK) if ran else None, before)
            if after.verdicts:
                verdicts += after.verdicts
            if ran and self._kind_of(call) == "done" and not (verdicts and _ends(verdicts)):
                self.outcome = "completed"
        elif kind == "llm":
            llm = step.llm
            assert llm is not None
            guard.end_turn()
            verdicts = guard.before_llm(llm).verdicts + guard.llm_result(llm).verdicts
            if calls is not None and combine(verdicts) != "fail":
                verdicts += guard.start_turn(calls, llm).verdicts
        elif kind == "phase":
            assert step.phase is not None
            verdicts = guard.phase(step.phase).verdicts
        elif kind == "message":
            assert step.message is not None
            verdicts = guard.message(step.message).verdicts
        elif kind == "rejected":
            assert step.rejected is not None
            verdicts = guard.rejected(step.rejected).verdicts
        else:
            assert step.done is not None
            verdicts = guard.done(step.done).verdicts
            if not _ends(verdicts):
                self.outcome = "completed"
        return self._ended(step, verdicts) if verdicts else verdicts

    def _ended(self, step: Step, verdicts: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
        """`verdicts`, noting where the run ends when they stop or fail it."""
        action = combine(verdicts)
        if action in ("stop", "fail"):
            self.outcome, self.stopped_by = run_end(action, verdicts)
            self.stopped_at = step.index
        return verdicts

    def finish(self) -> Outcome:
        """The run's outcome once every step was fed."""
        if self.outcome is None:
            self.guard.end_turn()
            # a run recorded with a turn limit (a simulation) that used every turn was cut off there
            limit = self.trace.max_turns
            self.outcome = "exhausted" if limit is not None and self.guard.run.turns >= limit else "incomplete"
        return self.outcome


def _ends(verdicts: tuple[Verdict, ...]) -> bool:
    return any(v.action in ("stop", "fail") for v in verdicts)
