"""Call/result pairing of the SDK-log importers: any interleaving pairs by id in order, and loses nothing silently."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard.importers.run_builder import RunBuilder

IDS = st.sampled_from(["a", "b", "c", None])
EVENTS = st.lists(st.tuples(st.sampled_from(["call", "result"]), IDS), max_size=30)


@given(EVENTS)
def test_results_pair_with_the_oldest_waiting_call_of_their_id(events: list[tuple[str, str | None]]) -> None:
    builder = RunBuilder("log.json", "run", fmt="test")
    waiting: dict[str | None, list[int]] = {}
    expected: dict[int, int] = {}  # call number -> result number
    orphans = calls = 0
    for number, (kind, call_id) in enumerate(events):
        if kind == "call":
            builder.call(call_id, "tool", {"n": number})
            waiting.setdefault(call_id, []).append(number)
            calls += 1
        elif builder.result(call_id, {"text": str(number)}):
            expected[waiting[call_id].pop(0)] = number
        else:
            assert not waiting.get(call_id)
            orphans += 1
    run = builder.build()
    steps = run.trace["steps"]
    assert [s["args"]["n"] for s in steps] == [n for n, (k, _) in enumerate(events) if k == "call"]
    for step in steps:
        n = step["args"]["n"]
        if n in expected:
            assert step["result"] == {"text": str(expected[n])}
        else:
            assert "result" not in step and step["x-result-missing"] is True
    unanswered = calls - len(expected)
    assert sum("orphan result" in w for w in run.warnings) == orphans
    assert sum("has no result" in w for w in run.warnings) == unanswered
    assert run.counts["calls"] == calls
