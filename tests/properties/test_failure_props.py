"""Properties of the failure tracker over generated failure streaks: the forced done lands on the failed
turn that reaches `max_failures`, the next non-done call stops the run, shorter streaks are forgiven."""

from __future__ import annotations

from hypothesis import example, given, note
from hypothesis import strategies as st

from pytest_loopguard import Policy, ToolCall, ToolResult, Trace, replay, resolve_policy
from pytest_loopguard.io._format import dumps
from pytest_loopguard.pytest import _strategies as lgst

REASONS = ("failure_tracker.force_done", "failure_tracker.max_failures")
seen: set[tuple[bool, bool]] = set()  # (forced done?, stopped?) across examples


def expected(trace: Trace, max_failures: int) -> tuple[int | None, int | None]:
    """(step of the forced done, step of the stop): every step is a single-call turn, so a failed call is
    a failed turn; a success resets the count; the first non-done call after the forced done stops."""
    failures = 0
    for step in trace.steps:
        if step.outcome.ok:
            failures = 0
            continue
        failures += 1
        if failures == max_failures:
            stop = step.index + 1 if step.index + 1 < len(trace.steps) else None
            return step.index, stop
    return None, None


@given(lgst.policies(engines=("failure_tracker",), max_threshold=6) | st.sampled_from(["default", "qa-agent"]),
       lgst.failure_streaks(max_streak=7))
@example("default", lgst.build_trace([(ToolCall.of("browser_click", {"index": 0}), ToolResult(ok=True))]))
@example("default", lgst.build_trace(
    [*((ToolCall.of("browser_click", {"index": i}), ToolResult.failure("Element not found")) for i in range(3)),
     (ToolCall.of("browser_click", {"index": 3}), ToolResult(ok=True))]))
def test_forced_done_then_stop_where_the_streaks_say(policy: Policy | str, trace: Trace) -> None:
    note(dumps(trace))
    max_failures = resolve_policy(policy).settings("failure_tracker").max_failures
    forced_at, stop_at = expected(trace, max_failures)
    result = replay(trace, policy)
    got = {
        s.index: "not_reached" if s.action == "not_reached" else [v.reason for v in s.verdicts if v.reason in REASONS]
        for s in result.steps
    }
    want: dict[int, str | list[str]] = {s.index: [] for s in trace.steps}
    if forced_at is not None:
        want[forced_at] = ["failure_tracker.force_done"]
    if stop_at is not None:
        want[stop_at] = ["failure_tracker.max_failures"]
        want.update({i: "not_reached" for i in range(stop_at + 1, len(trace.steps))})
    assert got == want
    seen.add((forced_at is not None, stop_at is not None))
    if stop_at is None:
        assert result.outcome == "incomplete"
    else:
        assert (result.outcome, result.stopped_at, result.stopped_by) == ("stopped", stop_at, "failure_tracker")


def test_the_property_saw_forced_dones_stops_and_forgiven_streaks() -> None:
    # (every streak ends with a success, so a forced done is always followed by a call that stops)
    test_forced_done_then_stop_where_the_streaks_say()
    assert seen == {(False, False), (True, True)}


def test_failure_streaks_record_their_lengths() -> None:
    @given(lgst.failure_streaks(max_streak=4, max_streaks=3))
    def check(trace: Trace) -> None:
        lengths = trace.extensions["x-streaks"]
        assert len(trace.steps) == sum(lengths) + len(lengths)
        oks = [s.outcome.ok for s in trace.steps]
        assert oks.count(True) == len(lengths) and oks[-1]
        assert len({s.call.fingerprint for s in trace.steps if s.call is not None}) == len(trace.steps)

    check()
