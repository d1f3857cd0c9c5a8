"""The budget engine is opt-in (DESIGN.md §7, seed 002): without a task envelope it changes nothing."""

from __future__ import annotations

import dataclasses

from hypothesis import given, note
from hypothesis import strategies as st

from pytest_loopguard import Trace, replay
from pytest_loopguard.io._format import dumps
from pytest_loopguard.pytest import _strategies as lgst

WITHOUT_TASK = lgst.traces(kinds=("tool", "llm", "phase", "message"), unicode=False, expectations=False).map(
    lambda t: dataclasses.replace(t, task=None)
)


def timeline(trace: Trace, policy: object) -> tuple[object, ...]:
    r = replay(trace, policy)
    return r.outcome, r.stopped_at, r.stopped_by, [s.to_dict() for s in r.steps]


@given(WITHOUT_TASK | lgst.interleaved_traces() | lgst.identical_runs(), st.sampled_from(["default", "openchrome"]))
def test_without_an_envelope_the_budget_changes_nothing(trace: Trace, preset: str) -> None:
    note(dumps(trace))
    assert timeline(trace, preset) == timeline(trace, {"preset": preset, "budget": False})
    assert not any(v.engine == "budget" for s in replay(trace, preset).steps for v in s.verdicts)


def test_with_an_envelope_the_budget_speaks() -> None:
    # openchrome: the observation streak limit is 6, so the 7th observation in a row warns (PRESETS.md)
    from pytest_loopguard.core._model import Task, ToolCall

    snapshots = [ToolCall.of("read_page", {"n": i}) for i in range(7)]
    trace = lgst.build_trace(snapshots, policy="openchrome", task=Task("Buy the cheapest flight"))
    reasons = [[v.reason for v in s.verdicts if v.engine == "budget"] for s in replay(trace).steps]
    assert "budget.observation_streak" in reasons[6]
    assert not any("budget.observation_streak" in r for r in reasons[:6])
