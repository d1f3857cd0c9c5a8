"""Properties of loop_guard as Roo Code and Goose use it (no warning stage, block at `block_at`, Roo's reset
after a block): the verdict lands exactly where the rule says for drawn thresholds. From PRESETS.md."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard import ReplayResult, replay
from pytest_loopguard.io._format import trace_from_mapping


def run(policy: Any, steps: list[dict[str, Any]]) -> list[str]:
    result: ReplayResult = replay(trace_from_mapping({"loopguard": 1, "name": "p", "steps": steps}), policy)
    return [s.action for s in result.steps]


def call(i: int) -> dict[str, Any]:
    return {"tool": "fetch_user", "args": {"id": i}}


@given(block_at=st.integers(1, 8), n=st.integers(1, 30))
def test_roo_blocks_every_block_at_th_call_in_a_row(block_at: int, n: int) -> None:
    policy = {"preset": "roo", "loop_guard": {"block_at": block_at}}
    # after a block the count starts again: blocks at block_at, 2 * block_at, ...
    assert run(policy, [call(1)] * n) == ["block" if (i + 1) % block_at == 0 else "allow" for i in range(n)]


@given(block_at=st.integers(1, 8), n=st.integers(1, 30))
def test_goose_blocks_from_the_block_at_th_call_on(block_at: int, n: int) -> None:
    policy = {"preset": "goose", "loop_guard": {"block_at": block_at}}
    assert run(policy, [call(1)] * n) == ["block" if i + 1 >= block_at else "allow" for i in range(n)]


@given(block_at=st.integers(2, 8), n=st.integers(1, 30), preset=st.sampled_from(["roo", "goose"]))
def test_interleaved_identical_calls_are_never_blocked(block_at: int, n: int, preset: str) -> None:
    policy = {"preset": preset, "loop_guard": {"block_at": block_at}}
    steps: list[dict[str, Any]] = []
    for i in range(n):
        steps += [call(1), call(100 + i % 2)]  # the other call alternates too: only consecutive runs count
    assert run(policy, steps) == ["allow"] * (2 * n)


@given(block_at=st.integers(2, 8), same=st.booleans())
def test_roo_forgets_after_a_block_whatever_comes_next(block_at: int, same: bool) -> None:
    policy = {"preset": "roo", "loop_guard": {"block_at": block_at}}
    nxt = call(1) if same else call(2)
    # the next call counts 1 whether or not it is the same: block_at - 1 of them run, the block_at-th is blocked
    got = run(policy, [call(1)] * block_at + [nxt] * block_at)
    assert got == ["allow"] * (block_at - 1) + ["block"] + ["allow"] * (block_at - 1) + ["block"]


@given(before=st.integers(0, 6), after=st.integers(0, 6), preset=st.sampled_from(["roo", "goose"]))
def test_a_user_message_does_not_reset_roo_or_goose(before: int, after: int, preset: str) -> None:
    block_at = 4 if preset == "roo" else 3
    steps = [call(1)] * before + [{"message": {"role": "user", "text": "go on"}}] + [call(1)] * after
    without = run(preset, [call(1)] * (before + after))
    got = run(preset, steps)
    assert got[:before] + got[before + 1:] == without  # the message changes nothing ...
    assert (before + after >= block_at) == ("block" in got)  # ... and counting goes on across it
