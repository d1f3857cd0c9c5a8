"""loop_guard's ping-pong against a rescan of the whole call list: the engine keeps per-period run counts
as calls arrive, and must judge exactly as looking back over the ring on every call would."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopguard import Guard, ToolCall, ToolResult, resolve_policy
from pytest_loopguard.core._model import Message

USER = "<user>"
OK = ToolResult(text="ok")


def expected(calls: list[str], ring_size: int, periods: tuple[int, ...], detect: int, block: int,
             max_warnings: int) -> list[tuple[str, int, int] | None]:
    """DESIGN.md's ping-pong rule, by rescanning: the last period × detect calls repeat with the period and
    are not one call over and over; repeats are the whole periods of the longest periodic tail in the ring."""
    ring: list[str] = []
    warned: dict[str, int] = {}
    out: list[tuple[str, int, int] | None] = []
    for x in calls:
        if x == USER:
            ring, warned = [], {}
            out.append(None)
            continue
        ring = [*ring, x][-ring_size:]
        n, got = len(ring), None
        for p in periods:
            window = p * detect
            if p < 2 or n < window or any(ring[i] != ring[i - p] for i in range(n - window + p, n)):
                continue
            if len(set(ring[n - p:])) == 1:
                continue
            length = window
            while length < n and ring[n - 1 - length] == ring[n - 1 - length + p]:
                length += 1
            if length // p >= block:
                got = ("loop_guard.ping_pong", p, length // p)
            else:
                warned[x] = warned.get(x, 0) + 1
                if warned[x] <= max_warnings:
                    got = ("loop_guard.ping_pong_warning", p, length // p)
            break
        out.append(got)
    return out


@settings(max_examples=300, deadline=None)
@given(
    calls=st.lists(st.sampled_from(["a", "b", "c", "a", "b", USER]), max_size=60),
    ring_size=st.integers(2, 14),
    periods=st.sampled_from([(2, 3), (3, 2), (2,), (3,), (1, 2)]),
    detect=st.integers(1, 4),
    block=st.integers(1, 6),
    max_warnings=st.integers(0, 3),
)
def test_ping_pong_matches_a_rescan(calls: list[str], ring_size: int, periods: tuple[int, ...], detect: int,
                                    block: int, max_warnings: int) -> None:
    engines: dict[str, Any] = {e: False for e in ("read_tracker", "failure_tracker", "budget", "dedup", "context")}
    policy = resolve_policy({"preset": "default", **engines, "loop_guard": {
        # only ping-pong speaks: the consecutive and outcome rules are off
        "warn_at": None, "block_at": None, "stop_at": None, "outcome_block_threshold": 0,
        "ring_size": ring_size, "ping_pong_periods": list(periods), "ping_pong_detect_repeats": detect,
        "ping_pong_min_repeats": block, "max_warnings_per_call": max_warnings,
    }})
    g = Guard(policy)
    got: list[tuple[str, int, int] | None] = []
    for x in calls:
        if x == USER:
            g.message(Message("user", "try again"))
            got.append(None)
            continue
        # an action tool (a click on one element) on both sides: no observation exemption applies
        c = ToolCall.of(f"click_{x}", {"index": 1})
        d = g.before_call(c, OK)
        g.after_call(c, OK if d.runs else None, d)
        found = [(v.reason, v.data["period"], v.data["repeats"]) for v in d.verdicts]
        assert len(found) <= 1
        got.append(found[0] if found else None)
    assert got == expected(calls, ring_size, periods, detect, block, max_warnings)
