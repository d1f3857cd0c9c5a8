"""A failing example shrinks to a minimal trace: the smallest run that shows the behaviour, ready to save."""

from __future__ import annotations

from pathlib import Path

from hypothesis import find, settings

from pytest_loopguard import Trace, load, replay
from pytest_loopguard.io._format import trace_to_mapping
from pytest_loopguard.pytest import _strategies as lgst

QUICK = settings(database=None, max_examples=300, derandomize=True)


def blocked(trace: Trace, policy: str = "default") -> bool:
    return any(s.action == "block" for s in replay(trace, policy).steps)


def test_an_identical_run_shrinks_to_the_block_threshold() -> None:
    # default blocks the 5th identical call (PRESETS.md): the minimal blocked run is 5 plain calls
    trace = find(lgst.identical_runs(), blocked, settings=QUICK)
    assert len(trace.steps) == 5
    call = trace.steps[0].call
    assert call is not None and call.tool == lgst.ACTION_TOOLS[0] and call.args == {}


def test_an_interleaving_shrinks_to_the_shortest_ping_pong() -> None:
    # spacebot-channel: a period-2 ping-pong of two action calls (A B A B A B, 3 repeats) blocks on its
    # 6th call at ping_pong_min_repeats 3 (PRESETS.md); nothing shorter blocks an interleaving
    trace = find(lgst.interleaved_traces(), lambda t: blocked(t, "spacebot-channel"), settings=QUICK)
    calls = [s.call for s in trace.steps]
    assert len({c.fingerprint for c in calls if c is not None}) == 2
    assert len(calls) == 6
    reasons = [v.reason for v in replay(trace, "spacebot-channel").steps[-1].verdicts]
    assert reasons == ["loop_guard.ping_pong"]


def test_a_shrunk_trace_saves_and_replays_the_same(tmp_path: Path) -> None:
    trace = find(lgst.identical_runs(), blocked, settings=QUICK)
    path = lgst.save_trace(trace, tmp_path / "loop" / "shrunk.jsonl", name="props-shrunk",
                           description="Shrunk: the fifth identical call is blocked.")
    back = load(path)
    assert trace_to_mapping(back)["steps"] == trace_to_mapping(trace)["steps"]
    assert replay(back, "default").to_dict()["steps"] == replay(trace, "default").to_dict()["steps"]
