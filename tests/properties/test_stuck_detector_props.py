"""Properties of stuck_detector's rule sets for drawn thresholds and runs: the verdict lands exactly where the
rule says, identical calls interleaved with fresh ones never trip it. Expectations come from PRESETS.md."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from pytest_loopguard import ReplayResult, replay
from pytest_loopguard.io._format import trace_from_mapping


def run(policy: Any, steps: list[dict[str, Any]]) -> ReplayResult:
    return replay(trace_from_mapping({"loopguard": 1, "name": "p", "steps": steps}), policy)


def verdicts(result: ReplayResult) -> list[tuple[int, str, str]]:
    return [(s.index, v.action, v.reason) for s in result.steps for v in s.verdicts if v.engine == "stuck_detector"]


def key(i: int) -> dict[str, Any]:
    return {"tool": "read_file", "args": {"absolute_path": f"/repo/f{i}.py"}}


def fresh(i: int) -> dict[str, Any]:
    return {"tool": "run_shell_command", "args": {"command": f"echo {i}"}, "result": {"text": str(i)}}


# ---- gemini: a k-cycle repeated `cycle_repeats` times ------------------------------------------------------
@given(k=st.integers(1, 5), repeats=st.integers(2, 6), prefix=st.integers(0, 8), preset=st.sampled_from(
    ["gemini-cli", "gemini-cli-2026-06"]))
def test_gemini_detects_the_k_cycle_on_its_repeats_times_kth_call(k: int, repeats: int, prefix: int,
                                                                  preset: str) -> None:
    policy = {"preset": preset, "stuck_detector": {"cycle_repeats": repeats, "tool_history": max(25, 5 * repeats)}}
    steps = [fresh(i) for i in range(prefix)] + [key(i % k) for i in range(k * repeats + 1)]
    got = verdicts(run(policy, steps))
    if preset == "gemini-cli-2026-06" and k > 1:  # before #28429 only a call repeated in a row counted
        assert got == []
        return
    first = prefix + k * repeats - 1  # the (repeats * k)-th call of the cycle: 5k with the defaults
    assert got == [(first, "block", "stuck_detector.tool_loop"), (first + 1, "stop", "stuck_detector.tool_loop")]


@given(n=st.integers(1, 40), gap=st.integers(1, 3))
def test_gemini_never_detects_a_call_interleaved_with_fresh_ones(n: int, gap: int) -> None:
    steps: list[dict[str, Any]] = []
    for i in range(n):
        steps.append(key(0))
        steps.extend(fresh(i * gap + j) for j in range(gap))
    assert verdicts(run("gemini-cli", steps)) == []


@given(before=st.integers(0, 4), after=st.integers(1, 6))
def test_gemini_a_user_message_starts_the_count_again(before: int, after: int) -> None:
    steps = [key(0)] * before + [{"message": {"role": "user", "text": "again"}}] + [key(0)] * after
    expected = [(before + 5, "block", "stuck_detector.tool_loop")] if after >= 5 else []
    if after >= 6:
        expected.append((before + 6, "stop", "stuck_detector.tool_loop"))
    assert verdicts(run("gemini-cli", steps)) == expected


# ---- openhands-sdk: the n-th identical failing call is the nudge, the next one stops -----------------------
def failing(i: int) -> dict[str, Any]:
    # the same call, a new error text each time: only the error streak can hold, not rule (a) or (d)
    return {"tool": "execute_bash", "args": {"command": "make"}, "result": {"ok": False, "error": f"error #{i}"}}


# n + 1 calls, their results and the nudge must fit the 20-event window: n <= 8 (at 9 the oldest call has
# left the window when the 10th comes, its streak is 9 again, and that is a second nudge, not a stop)
@given(n=st.integers(1, 8), extra=st.integers(0, 3))
def test_sdk_nudges_on_the_nth_failing_call_and_stops_on_the_next(n: int, extra: int) -> None:
    policy = {"preset": "openhands-sdk", "stuck_detector": {"action_error": n}}
    result = run(policy, [failing(i) for i in range(n + 1 + extra)])
    assert verdicts(result) == [(n - 1, "warn", "stuck_detector.action_error_nudge"),
                                (n, "stop", "stuck_detector.repeating_action_error")]


@given(n=st.integers(2, 9), calls=st.integers(1, 30))
def test_sdk_never_nudges_failures_interleaved_with_other_calls(n: int, calls: int) -> None:
    policy = {"preset": "openhands-sdk", "stuck_detector": {"action_error": n}}
    steps: list[dict[str, Any]] = []
    for i in range(calls):
        steps += [failing(i), fresh(i)]
    assert verdicts(run(policy, steps)) == []


# ---- openhands (V0): three identical errors stop; interleaved, never ---------------------------------------
@given(calls=st.integers(1, 30), same_error=st.booleans())
def test_openhands_stops_on_the_third_identical_error_and_never_when_interleaved(calls: int, same_error: bool) -> None:
    def fail(i: int) -> dict[str, Any]:
        return failing(0 if same_error else i)

    in_a_row = verdicts(run("openhands", [fail(i) for i in range(calls)]))
    assert in_a_row == ([] if calls < 3 else [(2, "stop", "stuck_detector.repeating_action_error")])
    interleaved: list[dict[str, Any]] = []
    for i in range(calls):
        interleaved += [fail(i), fresh(i)]
    assert verdicts(run("openhands", interleaved)) == []


# ---- gemini's content check against a literal per-position reading of PRESETS.md ---------------------------
class LiteralContent:
    """PRESETS.md's content check, steps 4 and 5, written out position by position (relative positions,
    every list shifted when the buffer's front is cut): the reference the engine's bulk scan must match."""

    def __init__(self, size: int, threshold: int, distance: int, periods: int, cap: int) -> None:
        self.size, self.threshold, self.distance, self.periods, self.cap = size, threshold, distance, periods, cap
        self.buffer, self.scan = "", 0
        self.positions: dict[str, list[int]] = {}

    def add(self, text: str) -> bool:
        self.buffer += text
        excess = len(self.buffer) - self.cap
        if excess > 0:
            self.buffer = self.buffer[excess:]
            self.scan = max(0, self.scan - excess)
            shifted = {c: [p - excess for p in ps if p - excess >= 0] for c, ps in self.positions.items()}
            self.positions = {c: ps for c, ps in shifted.items() if ps}
        while self.scan + self.size <= len(self.buffer):
            chunk = self.buffer[self.scan:self.scan + self.size]
            seen = self.positions.setdefault(chunk, [])
            seen.append(self.scan)
            if len(seen) >= self.threshold:
                last = seen[-self.threshold:]
                gaps = {self.buffer[p:q] for p, q in pairwise(last)}
                if (last[-1] - last[0]) / (self.threshold - 1) <= self.distance and len(gaps) <= self.periods:
                    return True
            self.scan += 1
        return False


@given(
    texts=st.lists(st.lists(st.sampled_from(["ab", "abc", "b", "ca", " ", "xy", "abab"]), min_size=1, max_size=8)
                   .map("".join), min_size=1, max_size=40),
    size=st.integers(2, 6), threshold=st.integers(2, 6), distance=st.integers(2, 40), periods=st.integers(1, 4),
    cap=st.integers(10, 120),
)
def test_gemini_content_scan_matches_the_literal_reading(texts: list[str], size: int, threshold: int, distance: int,
                                                         periods: int, cap: int) -> None:
    policy = {"preset": "gemini-cli", "stuck_detector": {
        "chunk_size": size, "content_threshold": threshold, "max_average_distance": distance,
        "max_distinct_periods": periods, "content_buffer": cap}}
    reference = LiteralContent(size, threshold, distance, periods, cap)
    expected: list[tuple[int, str, str]] = []
    for i, text in enumerate(texts):
        if reference.add(text):
            expected.append((i, "warn" if not expected else "stop", "stuck_detector.content_loop"))
            if len(expected) == 2:  # the second detection of a prompt stops the run
                break
    steps = [{"message": {"role": "assistant", "text": t}} for t in texts]
    event(f"{len(expected)} detections")
    assert verdicts(run(policy, steps)) == expected
