"""Property: an expectation edit spliced into any dumped trace reads back as exactly that change."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard.core._model import Trace
from pytest_loopguard.io._format import dumps, loads, trace_to_mapping
from pytest_loopguard.io._yamlsplice import REMOVE, Edit, apply_edits
from pytest_loopguard.pytest import _strategies as lgst

ACTIONS = st.sampled_from(["allow", "warn", "block", "stop", "compact", "retry", "fail", "not_reached"])
EXPECTS = ACTIONS | st.fixed_dictionaries(
    {"action": ACTIONS}, optional={"engine": st.sampled_from(["loop_guard", "context"]),
                                  "reason": st.sampled_from(["loop_guard.x", "context.y"])})


@given(lgst.traces(min_steps=1, max_steps=8), st.data())
def test_a_step_expectation_edit_changes_that_expectation_only(trace: Trace, data: st.DataObject) -> None:
    text = dumps(trace)
    index = data.draw(st.integers(min_value=0, max_value=len(trace.steps) - 1))
    value: Any = data.draw(EXPECTS | st.just(REMOVE))
    [again] = loads(apply_edits(text, [Edit(0, ("steps", index, "expect"), value)]))
    want = trace_to_mapping(trace)
    want["steps"][index].pop("expect", None)
    if value is not REMOVE:
        want["steps"][index]["expect"] = value
    got = trace_to_mapping(again)
    assert got["steps"][index] == want["steps"][index]
    assert {**got, "steps": None} == {**want, "steps": None}
    assert [s for i, s in enumerate(got["steps"]) if i != index] == [
        s for i, s in enumerate(want["steps"]) if i != index]


@given(lgst.traces(max_steps=5), st.sampled_from(["completed", "stopped", "failed", "exhausted", "incomplete"]),
       st.dictionaries(ACTIONS, st.integers(min_value=0, max_value=9), max_size=3))
def test_a_run_expectation_edit_changes_that_field_only(trace: Trace, outcome: str, counts: dict[str, int]) -> None:
    edits = [Edit(0, ("expect", "outcome"), outcome)]
    edits += [Edit(0, ("expect", "counts", action), n) for action, n in counts.items()]
    [again] = loads(apply_edits(dumps(trace), edits))
    want = trace_to_mapping(trace)
    expect = want.setdefault("expect", {})
    expect["outcome"] = outcome
    if counts:
        expect["counts"] = {**expect.get("counts", {}), **counts}
    assert trace_to_mapping(again) == want
