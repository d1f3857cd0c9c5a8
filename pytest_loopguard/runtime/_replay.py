"""Verdict replay: one pass of a recorded trace through a fresh Guard.

Replay is a counterfactual: a call that the engines block is treated as not executed (its recorded
result is not fed to them; they are told it was blocked) and the recorded sequence goes on. The run
ends at a `stop` (outcome stopped, or exhausted when the verdict says so), a `fail` (failed) or a
`done` (completed); later steps are `not_reached`. The Guard's calls and the outcome are the run
protocol's (`_protocol.Run`); replay feeds it the recorded steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core._model import (
    NOT_REACHED,
    Action,
    Outcome,
    ReplayResult,
    Step,
    StepResult,
    ToolCall,
    Trace,
    Verdict,
    combine,
)
from ..errors import PolicyError, TraceError
from ._guard import Clock, Guard
from ._policy import Policy, resolve_policy
from ._protocol import Run, turn_plan

__all__ = ["Replayer", "policy_for", "replay", "turn_plan"]


def policy_for(trace: Trace, policy: Any = None) -> tuple[Policy, str]:
    """The policy a trace replays under (the argument, else the trace's own), and its name.

    An explicit policy wins and the trace's own is then never read: a recording whose policy file did not
    travel with it replays under `--policy`. The trace's own policy file, read only here, is found beside
    the trace (then under its corpus root); one the caller passes (a command-line option, an argument) is
    taken as given. The name is the policy's own (a file's `name:` or stem, a preset's name as written), the
    one label every output gives it.
    """
    if policy is not None:
        resolved = resolve_policy(policy)
        return resolved, resolved.name
    try:
        resolved = resolve_policy(trace.policy, base_dir=Path(trace.path).parent if trace.path else None)
    except PolicyError as exc:
        # the loader leaves a header's policy file to the replay that uses it: its absence is the trace's error
        raise TraceError(str(exc) if exc.source or exc.field else exc.problem, file=trace.path,
                         field="policy") from None
    return resolved, resolved.name


def replay(trace: Trace, policy: Any = None, *, plugins: Sequence[object] = ()) -> ReplayResult:
    """Replay `trace` under `policy` (default: the trace's own policy, else `default`)."""
    resolved, policy_name = policy_for(trace, policy)
    replayer = Replayer(trace, resolved, trace.objective, plugins=plugins)
    run = replayer.run
    actions, verdicts = run.feed_all(trace.steps)
    outcome = replayer.finish()
    replayer.guard.close(build=False)  # its objects go with it, not at the collector's next pass
    return ReplayResult.of_actions(trace, policy_name, outcome, run.stopped_at, run.stopped_by, actions,
                                   verdicts)


class Replayer:
    """One replay in progress: feed it the steps in order (with the calls of the turn each starts), then
    `finish`. `replay` feeds a loaded trace; the streaming replay feeds steps as it reads them. The run
    protocol itself (the Guard's calls, the outcome) is `Run`'s: this only builds the Guard a trace asks for."""

    __slots__ = ("advance", "guard", "run", "trace")

    def __init__(self, trace: Trace, policy: Policy, objective: str, *, plugins: Sequence[object] = ()) -> None:
        self.trace = trace
        self.guard = Guard(policy, task=trace.task, objective=objective, context=trace.context, clock=Clock(),
                           plugins=plugins, name=trace.name)
        self.run = Run(self.guard)
        # the verdicts on one step of a run that has not ended; sets `outcome` when the step ends it
        self.advance = self.run.feed

    @property
    def outcome(self) -> Outcome | None:
        return self.run.outcome

    @property
    def stopped_at(self) -> int | None:
        return self.run.stopped_at

    @property
    def stopped_by(self) -> str | None:
        return self.run.stopped_by

    def step(self, step: Step, calls: tuple[ToolCall, ...] | None) -> StepResult:
        """The result of one step; `calls` are the calls of the turn the step starts (None: it starts none)."""
        if self.run.outcome is not None:
            call = step.call
            return StepResult(step.index, step.kind, call.tool if call is not None else None, NOT_REACHED)
        return self.result_of(step, self.run.feed(step, calls))

    @staticmethod
    def result_of(step: Step, verdicts: tuple[Verdict, ...]) -> StepResult:
        """The result of a reached step given its verdicts."""
        call = step.call
        return StepResult(step.index, step.kind, call.tool if call is not None else None,
                          combine(verdicts) if verdicts else Action.ALLOW, verdicts)

    def finish(self) -> Outcome:
        """The run's outcome once every step was fed: a run recorded with a turn limit (a simulation) that
        used every turn was cut off there."""
        return self.run.finish(self.trace.max_turns)
