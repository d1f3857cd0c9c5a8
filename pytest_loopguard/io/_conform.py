"""Conformance of an external guard: its verdicts on a trace, step by step, against a preset's or the trace's own.

The guard runs as the whole policy (`external` with `instead: true`) over the reference policy's tool table,
so a `done` call ends the run the same way for both. What is compared is what a team's port of a rule can
be held to: each reached step's action and how the run ended (outcome, stopped at); with `reasons`, the
reason codes of the verdicts too (only a port that reuses our codes can match them); with `messages`, the
message the agent is shown. The first difference per trace is reported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..core._expect import check
from ..core._model import ReplayResult, StepExpect, StepResult, Trace
from ..engines.external import Settings as ExternalSettings
from ..runtime._policy import Policy, preset_names, resolve_policy
from ..runtime._replay import policy_for, replay

__all__ = ["EXPECTATIONS", "Difference", "conform_trace", "guard_policy"]

EXPECTATIONS: Final = "expectations"


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place a guard's run differs: `step` (None: the run's end), what was expected and what it gave."""

    step: int | None
    what: str
    expected: str
    got: str

    def line(self) -> str:
        where = f"step {self.step}" if self.step is not None else "run"
        return f"{where}{' (' + self.what + ')' if self.what else ''}: expected {self.expected}, got {self.got}"


def guard_policy(base: Policy, command: Sequence[str], *, timeout_s: float = 5.0, cwd: str | None = None) -> Policy:
    """`base`'s tool table with the guard process as its only engine, which is told to follow `base` (by name
    when it is a preset, else whole)."""
    told: str | dict[str, Any] = base.name if base.name in preset_names() else base.to_dict()
    settings = ExternalSettings(command=tuple(command), timeout_s=timeout_s, cwd=cwd, instead=True, policy=told)
    return dataclasses.replace(base, engines={"external": settings})  # its name: what run_start tells the guard


def conform_trace(trace: Trace, command: Sequence[str], against: str, *, timeout_s: float = 5.0,
                  cwd: str | None = None, reasons: bool = False, messages: bool = False) -> Difference | None:
    """The first difference between the guard's run of `trace` and the reference (`against`: a preset's
    verdicts, or `expectations`: the trace's own), or None when they agree."""
    if against == EXPECTATIONS:
        base, _name = policy_for(trace, None)
        got = replay(trace, guard_policy(base, command, timeout_s=timeout_s, cwd=cwd))
        return _against_expectations(got, reasons, messages)
    reference_policy = resolve_policy(against)
    expected = replay(trace, reference_policy)
    got = replay(trace, guard_policy(reference_policy, command, timeout_s=timeout_s, cwd=cwd))
    return _against_result(expected, got, reasons, messages)


def _describe(s: StepResult, reasons: bool) -> str:
    codes = sorted({v.reason for v in s.verdicts if v.action == s.action}) if reasons else []
    return f"{s.action}" + (f" ({', '.join(codes)})" if codes else "")


def _what(s: StepResult, trace: Trace) -> str:
    step = trace.steps[s.index] if s.index < len(trace.steps) else None
    if step is not None and step.call is not None:
        return step.call.short(50)
    return s.kind


def _against_result(expected: ReplayResult, got: ReplayResult, reasons: bool, messages: bool) -> Difference | None:
    trace = expected.trace
    for e, g in zip(expected.steps, got.steps, strict=True):
        same = e.action == g.action
        if same and reasons:
            same = _codes(e) == _codes(g)
        if same and messages:
            same = _shown(e) == _shown(g)
        if not same:
            exp, gets = _describe(e, reasons), _describe(g, reasons)
            if messages and exp == gets:
                exp, gets = repr(_shown(e)), repr(_shown(g))
            return Difference(e.index, _what(e, trace), exp, gets)
    if (expected.outcome, expected.stopped_at) != (got.outcome, got.stopped_at):
        return Difference(None, "", _end(expected), _end(got))
    return None


def _codes(s: StepResult) -> list[str]:
    return sorted(v.reason for v in s.verdicts if v.action == s.action)


def _shown(s: StepResult) -> str:
    return next((v.message for v in s.verdicts if v.action == s.action), "")


def _end(r: ReplayResult) -> str:
    return f"{r.outcome}" + (f" at step {r.stopped_at}" if r.stopped_at is not None else "")


def _against_expectations(got: ReplayResult, reasons: bool, messages: bool) -> Difference | None:
    """The trace's expectations, held to what a port can match: actions and the run's end, and the reason codes
    and messages only when asked (`stopped_by` names one of our engines: never compared)."""
    trace = got.trace
    if not reasons or not messages:
        steps = tuple(s if s.expect is None else dataclasses.replace(s, expect=_portable(s.expect, reasons, messages))
                      for s in trace.steps)
        run_expect = trace.expect
        if run_expect is not None:
            run_expect = dataclasses.replace(run_expect, stopped_by=None, has_stopped_by=False)
        trace = dataclasses.replace(trace, steps=steps, expect=run_expect)
        got = ReplayResult.of_actions(trace, got.policy, got.outcome, got.stopped_at, got.stopped_by,
                                      [s.action for s in got.steps], _verdicts_of(got))
    for m in check(got):
        step = trace.steps[m.step] if m.step is not None and m.step < len(trace.steps) else None
        what = m.field if m.step is None else ""
        if step is not None and step.call is not None:
            what = step.call.short(50)
        return Difference(m.step, what, str(m.expected), str(m.got))
    return None


def _portable(e: StepExpect, reasons: bool, messages: bool) -> StepExpect:
    return dataclasses.replace(e, engine=None, reason=e.reason if reasons else None,
                               message=e.message if messages else None, data=None)


def _verdicts_of(r: ReplayResult) -> dict[int, Any]:
    return {i: s.verdicts for i, s in enumerate(r.steps) if s.verdicts}
