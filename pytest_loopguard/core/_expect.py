"""Expectations: compare a replay result with what the trace (or a test) expects, and say why not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, final

from ._model import ReplayResult, RunExpect, Step, StepExpect, StepResult, Verdict, plain

__all__ = ["HEEDABLE", "Mismatch", "check", "check_heeded", "check_reached", "check_run", "check_step",
           "describe_expect", "repeated_within"]

# the actions an agent is told about and can heed (a stop ends the run: nothing left to heed)
HEEDABLE: Final = frozenset({"warn", "block"})


@final
@dataclass(frozen=True, slots=True)
class Mismatch:
    """One expectation that did not hold. `step` is None for run-level expectations. Plain data: an action or
    outcome got is its plain name, as the trace writes the expected one."""

    step: int | None
    field: str
    expected: Any
    got: Any
    detail: str = ""

    def __str__(self) -> str:
        where = f"step {self.step}" if self.step is not None else "run"
        text = f"{where}: {self.field}: expected {self.expected!r}, got {self.got!r}"
        return f"{text} ({self.detail})" if self.detail else text


def describe_expect(expect: StepExpect) -> str:
    """How an expectation reads in a table: `block loop_guard.consecutive_block`."""
    parts = [expect.action]
    if expect.reason:
        parts.append(expect.reason)
    elif expect.engine:
        parts.append(f"({expect.engine})")
    if expect.message:
        parts.append(f"message~{expect.message!r}")
    return " ".join(parts)


def _verdict_matches(v: Verdict, e: StepExpect) -> bool:
    if e.engine is not None and v.engine != e.engine:
        return False
    if e.reason is not None and v.reason != e.reason:
        return False
    if e.message is not None and e.message not in v.message:
        return False
    return not (e.data is not None and not _subset(e.data, v.data))


def _subset(expected: Mapping[str, Any], got: Mapping[str, Any]) -> bool:
    for k, v in expected.items():
        if k not in got:
            return False
        g = got[k]
        if isinstance(v, Mapping) and isinstance(g, Mapping):
            if not _subset(v, g):
                return False
        elif g != v:
            return False
    return True


def check_step(expect: StepExpect, got: StepResult) -> Mismatch | None:
    """None when the step meets the expectation, else what differs."""
    if got.action != expect.action:
        detail = "; ".join(f"{v.engine}: {v.action} {v.reason}" for v in got.verdicts)
        return Mismatch(got.index, "action", expect.action, plain(got.action), detail)
    needs_verdict = any(x is not None for x in (expect.engine, expect.reason, expect.message, expect.data))
    if needs_verdict and not any(_verdict_matches(v, expect) for v in got.verdicts):
        seen = "; ".join(f"{v.engine}: {v.action} {v.reason}" for v in got.verdicts) or "no verdicts"
        return Mismatch(got.index, "verdict", describe_expect(expect), seen, "no verdict matches")
    return None


def check_reached(step: Step, got: StepResult, strict: bool) -> Mismatch | None:
    """One step against its expectation; with `strict`, a step without one must combine to allow."""
    if step.expect is not None:
        return check_step(step.expect, got)
    if strict and got.action not in ("allow", "not_reached"):
        detail = "; ".join(f"{v.engine}: {v.action} {v.reason}" for v in got.verdicts)
        return Mismatch(got.index, "action", "allow", plain(got.action), f"strict: {detail}")
    return None


def repeated_within(steps: Sequence[Step], got: Sequence[StepResult], at: int, within: int) -> int | None:
    """Whether the agent repeated the call of step `at` (position) within its next `within` calls: the index
    of the step that did (the same tool with the same arguments, key order aside), or None: it changed course.
    Calls the run never reached do not count; a run that ended sooner changed course."""
    step = steps[at]
    if step.kind != "tool":
        return None
    fingerprint = step.call.fingerprint
    seen = 0
    for later, result in zip(steps[at + 1:], got[at + 1:], strict=True):
        if seen >= within or result.action == "not_reached":
            break
        if later.kind == "tool":
            seen += 1
            if later.call.fingerprint == fingerprint:
                return later.index
    return None


def check_heeded(steps: Sequence[Step], got: Sequence[StepResult], at: int, within: int) -> Mismatch | None:
    """`heeded_within` on the step at position `at`: it drew a warning or block and no call soon repeats it."""
    result = got[at]
    if steps[at].kind != "tool" or plain(result.action) not in HEEDABLE:
        return Mismatch(result.index, "heeded_within", within, plain(result.action),
                        "no warning or block on a call to heed")
    repeat = repeated_within(steps, got, at, within)
    if repeat is not None:
        return Mismatch(result.index, "heeded_within", within, f"repeated at step {repeat}",
                        "the agent made the same call again")
    return None


def check_run(expect: RunExpect, result: ReplayResult) -> list[Mismatch]:
    out: list[Mismatch] = []
    if expect.outcome is not None and expect.outcome != result.outcome:
        out.append(Mismatch(None, "outcome", expect.outcome, plain(result.outcome)))
    if (expect.stopped_by is not None or expect.has_stopped_by) and expect.stopped_by != result.stopped_by:
        out.append(Mismatch(None, "stopped_by", expect.stopped_by, result.stopped_by))
    if (expect.stopped_at is not None or expect.has_stopped_at) and expect.stopped_at != result.stopped_at:
        out.append(Mismatch(None, "stopped_at", expect.stopped_at, result.stopped_at))
    if expect.counts is not None:
        counts = result.counts()
        for action, n in expect.counts.items():
            if counts.get(action, 0) != n:
                out.append(Mismatch(None, f"counts.{action}", n, counts.get(action, 0)))
    return out


def check(result: ReplayResult, *, strict: bool | None = None) -> list[Mismatch]:
    """Every mismatch between `result` and its trace's expectations, steps first, then the run's.

    With `strict` (default: the trace's own flag) a reached step without `expect` must combine to allow.
    """
    trace = result.trace
    strict = trace.strict if strict is None else strict
    out: list[Mismatch] = []
    # Without `strict`, only steps with an expectation can mismatch; where there is none, the result's step
    # timeline (built on first read) is not needed at all.
    if strict or any(step.expect is not None for step in trace.steps):
        for at, (step, got) in enumerate(zip(trace.steps, result.steps, strict=True)):
            m = check_reached(step, got, strict)
            if m is not None:
                out.append(m)
            elif step.expect is not None and step.expect.heeded_within is not None:
                m = check_heeded(trace.steps, result.steps, at, step.expect.heeded_within)
                if m is not None:
                    out.append(m)
    if trace.expect is not None:
        out.extend(check_run(trace.expect, result))
    return out
