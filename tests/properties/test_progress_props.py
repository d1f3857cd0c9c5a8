"""Properties of `default`'s judgement of repeated calls by what they achieved (issue 23, docs/presets.md):
a polling run whose results keep changing stays quiet up to its poll budget, and a run repeating one call with
an identical result is warned at the documented count. Every engine of `default` runs."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard import replay, resolve_policy
from pytest_loopguard.io._format import trace_from_mapping

DEFAULT = resolve_policy("default")
LOOP_GUARD = DEFAULT.settings("loop_guard")
POLL = {"tool": "process", "when": {"action": "log"}, "repeat": "poll"}
DECLARED = resolve_policy({"preset": "default", "tools": [POLL]})


def actions(steps: list[dict[str, Any]], policy: Any = DEFAULT) -> list[str]:
    trace = trace_from_mapping({"loopguard": 1, "name": "p", "steps": steps})
    return [str(s.action) for s in replay(trace, policy).steps]


def poll(text: str, t: int | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": "process", "args": {"action": "log", "sessionId": "job-1"},
                            "result": {"text": text}}
    if t is not None:
        step["t"] = t
    return step


def texts_changing_every(runs: list[int]) -> list[str]:
    """Result texts in runs of identical texts of the given lengths, each run's text unlike the one before."""
    return [f"log line {i}" for i, length in enumerate(runs) for _ in range(length)]


@given(n=st.integers(1, LOOP_GUARD.progress_warn_at - 1))
def test_a_poll_whose_result_changes_every_call_is_quiet_up_to_the_progress_budget(n: int) -> None:
    assert actions([poll(f"line {i}") for i in range(n)]) == ["allow"] * n


@given(n=st.integers(LOOP_GUARD.progress_warn_at, 40))
def test_an_undeclared_poll_is_warned_once_at_the_progress_budget(n: int) -> None:
    got = actions([poll(f"line {i}") for i in range(n)])
    warn_at = LOOP_GUARD.progress_warn_at
    assert got == ["allow"] * (warn_at - 1) + ["warn"] + ["allow"] * (n - warn_at)


@given(runs=st.lists(st.integers(1, LOOP_GUARD.poll_idle_warn_at - 2), min_size=1, max_size=40)
       .filter(lambda r: sum(r) < LOOP_GUARD.poll_warn_at))
def test_a_declared_poll_changing_at_least_every_n_calls_is_quiet_up_to_its_budget(runs: list[int]) -> None:
    # N = poll_idle_warn_at - 2 (8): a call is counted before its result is known, so the call that brings the
    # change after 8 identical results is the 9th unchanged one; fewer than poll_warn_at calls in all
    texts = texts_changing_every(runs)
    assert actions([poll(t) for t in texts], DECLARED) == ["allow"] * len(texts)


@given(gaps=st.lists(st.integers(LOOP_GUARD.poll_gap_ms, 5 * 60_000), min_size=1, max_size=20)
       .filter(lambda g: sum(g) < LOOP_GUARD.poll_warn_ms))
def test_identical_results_a_wait_apart_are_quiet_up_to_the_time_budget(gaps: list[int]) -> None:
    times = [0]
    for gap in gaps:
        times.append(times[-1] + gap)
    assert actions([poll("still running", t) for t in times]) == ["allow"] * len(times)


@given(n=st.integers(LOOP_GUARD.warn_at, LOOP_GUARD.block_at - 1), text=st.text(min_size=1, max_size=40))
def test_one_call_with_an_identical_result_is_warned_at_the_documented_count(n: int, text: str) -> None:
    warn_at = LOOP_GUARD.warn_at
    assert actions([poll(text)] * n) == ["allow"] * (warn_at - 1) + ["warn"] * (n - warn_at + 1)


@given(n=st.integers(LOOP_GUARD.poll_idle_warn_at, LOOP_GUARD.poll_idle_block_at - 1),
       text=st.text(min_size=1, max_size=40))
def test_a_declared_poll_with_an_identical_result_is_warned_at_its_documented_count(n: int, text: str) -> None:
    warn_at = LOOP_GUARD.poll_idle_warn_at
    assert actions([poll(text)] * n, DECLARED) == ["allow"] * (warn_at - 1) + ["warn"] + ["allow"] * (n - warn_at)
