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

from .model import Outcome, ReplayResult, Step, StepResult, ToolCall, ToolResult, Trace, Verdict, combine
from .policy import Policy, resolve_policy
from .runtime import Clock, Guard

__all__ = ["policy_for", "replay", "turn_plan"]

_CHANGED = ToolResult(changed=True)


def policy_for(trace: Trace, policy: Any = None) -> tuple[Policy, str]:
    """The policy a trace replays under (the argument, else the trace's own), and its name as given."""
    spec = policy if policy is not None else trace.policy
    # a policy file the trace names is found beside it (then under its corpus root); one the caller passes
    # (a command-line option, an argument) is taken as given
    base_dir = Path(trace.path).parent if trace.path and policy is None else None
    resolved = resolve_policy(spec, base_dir=base_dir)
    return resolved, spec if isinstance(spec, str) else resolved.name


def turn_plan(steps: Sequence[Step]) -> dict[int, tuple[ToolCall, ...]]:
    """Where each turn starts (step index) and its calls.

    A successful `llm` step starts a turn whose calls are the tool steps up to the next `llm` step; tool
    steps before the first `llm` step (or after a failed one) form a turn starting at the first of them;
    a trace without `llm` steps has one turn per tool call. A `rejected` step is a turn of its own with
    no calls: tool steps after it (before the next `llm` step) start a new turn.
    """
    has_llm = any(s.kind == "llm" for s in steps)
    plan: dict[int, list[ToolCall]] = {}
    anchor: int | None = None
    for step in steps:
        if step.kind == "llm":
            assert step.llm is not None
            anchor = None if step.llm.failed else step.index
            if anchor is not None:
                plan[anchor] = []
        elif step.kind == "rejected":
            anchor = None
        elif step.kind == "tool":
            assert step.call is not None
            if not has_llm or anchor is None:
                anchor = step.index
                plan[anchor] = []
            plan[anchor].append(step.call)
    return {k: tuple(v) for k, v in plan.items()}


def replay(trace: Trace, policy: Any = None, *, plugins: Sequence[object] = ()) -> ReplayResult:
    """Replay `trace` under `policy` (default: the trace's own policy, else `default`)."""
    resolved, policy_name = policy_for(trace, policy)
    clock = Clock()
    guard = Guard(
        resolved, task=trace.task, objective=trace.objective, context=trace.context, clock=clock, plugins=plugins
    )
    plan = turn_plan(trace.steps)
    results: list[StepResult] = []
    outcome: Outcome | None = None
    stopped_at: int | None = None
    stopped_by: str | None = None

    for step in trace.steps:
        tool = step.call.tool if step.call is not None else None
        if outcome is not None:
            results.append(StepResult(step.index, step.kind, tool, "not_reached"))
            continue
        if step.t is not None:
            clock.set(step.t)
        verdicts: tuple[Verdict, ...] = ()
        kind = step.kind
        if kind == "tool":
            call = step.call
            assert call is not None
            calls = plan.get(step.index)
            if calls is not None:
                guard.end_turn()
                verdicts += guard.start_turn(calls).verdicts
            if _ends(verdicts):
                decision_verdicts = verdicts
            else:
                # engines learn only what is known before a call runs: whether the file changed outside
                before = guard.before_call(call, _CHANGED if step.result is not None and step.result.changed else None)
                ran = before.runs
                after = guard.after_call(call, step.outcome if ran else None, before)
                decision_verdicts = verdicts + after.verdicts
                if ran and guard.run.kind(call) == "done" and not _ends(decision_verdicts):
                    outcome = "completed"
            verdicts = decision_verdicts
        elif kind == "llm":
            llm = step.llm
            assert llm is not None
            guard.end_turn()
            verdicts += guard.before_llm(llm).verdicts
            verdicts += guard.llm_result(llm).verdicts
            calls = plan.get(step.index)
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
                outcome = "completed"

        action = combine(verdicts)
        results.append(StepResult(step.index, kind, tool, action, verdicts))
        if action in ("stop", "fail"):
            ender = next(v for v in verdicts if v.action == action)
            if action == "fail":
                outcome = "failed"
            else:
                outcome = "exhausted" if ender.data.get("outcome") == "exhausted" else "stopped"
            stopped_at, stopped_by = step.index, ender.engine

    if outcome is None:
        guard.end_turn()
        # a run recorded with a turn limit (a simulation) that used every turn was cut off there
        limit = trace.max_turns
        outcome = "exhausted" if limit is not None and guard.run.turns >= limit else "incomplete"
    return ReplayResult(trace, policy_name, outcome, stopped_at, stopped_by, tuple(results))


def _ends(verdicts: tuple[Verdict, ...]) -> bool:
    return any(v.action in ("stop", "fail") for v in verdicts)
