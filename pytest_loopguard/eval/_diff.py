"""What changes when a trace replays under another policy: interventions moved, appeared, vanished or changed.

An intervention is a step whose combined action is not `allow` (nor `not_reached`), named by its deciding
reason code. Two replays of one trace are matched step by step: the same step with the same action and
reason is unchanged; the same step with another action or reason is `changed`; the same action and reason
on another step `moved` (the k-th such intervention before pairs with the k-th after); the rest `vanished`
(before only) or `appeared` (after only). Steps and tokens count what the agent spent before the run ended.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal, final

from ..core._model import ReplayResult, Step, StepResult, plain

__all__ = ["Change", "Intervention", "TraceDiff", "diff_results", "interventions", "spent"]

ChangeKind = Literal["moved", "appeared", "vanished", "changed"]
_QUIET: Final = ("allow", "not_reached")
_NOT_RUN: Final = ("block", "stop")  # a call with these actions did not run: its result's tokens were not spent


@final
@dataclass(frozen=True, slots=True)
class Intervention:
    """A step the policy intervened on: its index, combined action (its plain name) and the deciding verdict's
    reason."""

    step: int
    action: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "action": self.action, "reason": self.reason}


@final
@dataclass(frozen=True, slots=True)
class Change:
    kind: ChangeKind
    before: Intervention | None
    after: Intervention | None

    @property
    def shift(self) -> int | None:
        """For a moved intervention, how many steps later (positive) or earlier (negative) it comes."""
        if self.before is None or self.after is None:
            return None
        return self.after.step - self.before.step

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "before": self.before.to_dict() if self.before else None,
            "after": self.after.to_dict() if self.after else None,
        }


@final
@dataclass(frozen=True, slots=True)
class TraceDiff:
    """One trace under two policies."""

    trace: str
    file: str | None
    before: ReplayResult
    after: ReplayResult
    changes: tuple[Change, ...] = field(default=())

    @property
    def steps(self) -> tuple[int, int]:
        return spent(self.before)[0], spent(self.after)[0]

    @property
    def tokens(self) -> tuple[int, int]:
        return spent(self.before)[1], spent(self.after)[1]

    @property
    def moved(self) -> bool:
        """Anything a CI gate should see: an intervention changed, or the run ended differently."""
        b, a = self.before, self.after
        return bool(self.changes) or (b.outcome, b.stopped_at, b.stopped_by) != (a.outcome, a.stopped_at, a.stopped_by)

    def to_dict(self) -> dict[str, Any]:
        (steps_b, steps_a), (tokens_b, tokens_a) = self.steps, self.tokens
        return {
            "trace": self.trace,
            "file": self.file,
            "moved": self.moved,
            "before": _run(self.before, steps_b, tokens_b),
            "after": _run(self.after, steps_a, tokens_a),
            "steps_saved": steps_b - steps_a,
            "tokens_saved": tokens_b - tokens_a,
            "changes": [c.to_dict() for c in self.changes],
        }


def _run(result: ReplayResult, steps: int, tokens: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "policy": result.policy,
        "outcome": plain(result.outcome),
        "stopped_at": result.stopped_at,
        "stopped_by": result.stopped_by,
        "steps": steps,
        "tokens": tokens,
    }
    if result.unknown_results:  # a what-if replay: calls the recording's policy blocked ran, their results unknown
        out["result_unknown"] = list(result.unknown_results)
    return out


def interventions(result: ReplayResult) -> list[Intervention]:
    """Every step whose combined action is not allow or not_reached, with its deciding reason."""
    out: list[Intervention] = []
    for step in result.steps:
        if step.action in _QUIET:
            continue
        decider = next((v for v in step.verdicts if v.action == step.action), None)
        out.append(Intervention(step.index, plain(step.action), decider.reason if decider is not None else ""))
    return out


def _tokens(step: Step, got: StepResult) -> int:
    if step.llm is not None:
        prompt = step.llm.input_tokens
        if prompt is None:  # a session given no count of its own keeps the provider's as `x-input_tokens`
            kept = step.extensions.get("x-input_tokens")
            prompt = kept if isinstance(kept, int) and not isinstance(kept, bool) else 0
        return prompt + (step.llm.output_tokens or 0)
    if step.rejected is not None and step.rejected.llm is not None:
        return (step.rejected.llm.input_tokens or 0) + (step.rejected.llm.output_tokens or 0)
    if step.result is not None and got.action not in _NOT_RUN:
        return step.result.tokens or 0
    return 0


def spent(result: ReplayResult) -> tuple[int, int]:
    """Steps reached and tokens spent (model input and output, results of calls that ran) in one replay."""
    steps = tokens = 0
    for step, got in zip(result.trace.steps, result.steps, strict=True):
        if got.action == "not_reached":
            continue
        steps += 1
        tokens += _tokens(step, got)
    return steps, tokens


def _first_step(change: Change) -> int:
    steps = [i.step for i in (change.before, change.after) if i is not None]
    return min(steps)


def diff_results(before: ReplayResult, after: ReplayResult) -> TraceDiff:
    """Match the interventions of two replays of one trace (see the module docstring)."""
    old = interventions(before)
    new = interventions(after)
    same = set(old) & set(new)
    old = [i for i in old if i not in same]
    new = [i for i in new if i not in same]
    changes: list[Change] = []
    new_at = {i.step: i for i in new}
    for i in list(old):
        j = new_at.get(i.step)
        if j is not None:
            changes.append(Change("changed", i, j))
            old.remove(i)
            new.remove(j)
    for i in list(old):
        j = next((j for j in new if (j.action, j.reason) == (i.action, i.reason)), None)
        if j is not None:
            changes.append(Change("moved", i, j))
            old.remove(i)
            new.remove(j)
    changes += [Change("vanished", i, None) for i in old]
    changes += [Change("appeared", None, j) for j in new]
    changes.sort(key=_first_step)
    return TraceDiff(before.trace.name, before.trace.path, before, after, tuple(changes))
