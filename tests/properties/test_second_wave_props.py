"""Properties of the second-wave presets' loop and mistake rules (cline, cline-sdk, opencode, kilo, crewai):
consecutive against interleaved calls, the per-response count, the last-success rule and the mistake counts,
each against a small model of the rule as PRESETS.md states it, over drawn runs."""

from __future__ import annotations

from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from pytest_loopguard import ReplayResult, replay
from pytest_loopguard.io._format import trace_from_mapping

LOOP_PRESETS = ("cline", "cline-sdk")  # warn at the 3rd identical call in a row, stop at the 5th
PER_RESPONSE = ("opencode", "kilo")  # stop at the 3rd identical call of one response


def run(policy: Any, steps: list[dict[str, Any]]) -> ReplayResult:
    return replay(trace_from_mapping({"loopguard": 1, "name": "p", "steps": steps}), policy)


def actions(result: ReplayResult) -> list[str]:
    return [str(s.action) for s in result.steps]


def call(i: int, **result: Any) -> dict[str, Any]:
    return {"tool": "read_file", "args": {"path": f"src/{i}.ts"}, "result": result or {"text": f"file {i}"}}


# ---- cline, cline-sdk: the consecutive count ---------------------------------------------------------------
@given(preset=st.sampled_from(LOOP_PRESETS), n=st.integers(1, 12))
def test_identical_calls_warn_once_at_three_and_stop_at_five(preset: str, n: int) -> None:
    got = actions(run(preset, [call(1)] * n))
    want = ["allow"] * n
    if n >= 3:
        want[2] = "warn"  # only the 3rd: Cline's `=== 3`
    if n >= 5:
        want[4:] = ["stop"] + ["not_reached"] * (n - 5)
    assert got == want


@given(preset=st.sampled_from((*LOOP_PRESETS, "crewai")), n=st.integers(1, 20), period=st.integers(2, 3))
def test_interleaved_identical_calls_are_never_judged(preset: str, n: int, period: int) -> None:
    # the same calls over and over, but never the same one twice in a row
    assert set(actions(run(preset, [call(i % period) for i in range(n)]))) == {"allow"}


@given(preset=st.sampled_from((*LOOP_PRESETS, "crewai")), before=st.integers(0, 6), after=st.integers(0, 6))
def test_a_user_message_resets_nothing(preset: str, before: int, after: int) -> None:
    message = {"message": {"role": "user", "text": "continue"}}
    without = actions(run(preset, [call(1)] * (before + after)))
    got = actions(run(preset, [call(1)] * before + [message] + [call(1)] * after))
    assert got[:before] + got[before + 1:] == without


# ---- opencode, kilo: the count lives within one response ---------------------------------------------------
@given(preset=st.sampled_from(PER_RESPONSE), sizes=st.lists(st.integers(0, 5), min_size=1, max_size=6),
       same_across=st.booleans())
def test_doom_loop_needs_three_identical_calls_in_one_response(preset: str, sizes: list[int],
                                                               same_across: bool) -> None:
    steps: list[dict[str, Any]] = []
    want: list[str] = []
    stopped = False
    for r, size in enumerate(sizes):
        steps.append({"llm": {"output_tokens": 10}})
        want.append("not_reached" if stopped else "allow")
        for k in range(size):
            # every response repeats one call (the same one across responses, or its own)
            steps.append(call(0 if same_across else r))
            if stopped:
                want.append("not_reached")
            elif k == 2:
                want.append("stop")
                stopped = True
            else:
                want.append("allow")
    note(repr(sizes))
    assert actions(run(preset, steps)) == want


# ---- crewai: a call identical to the last one that ran and did not fail is refused -------------------------
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["ok", "fail", "none"])), min_size=1, max_size=25))
def test_crewai_refuses_a_repeat_of_the_last_success(calls: list[tuple[int, str]]) -> None:
    steps: list[dict[str, Any]] = []
    want: list[str] = []
    last: int | None = None
    for i, outcome in calls:
        step: dict[str, Any] = {"tool": "search", "args": {"q": f"q{i}"}}
        if outcome == "ok":
            step["result"] = {"text": "results"}
        elif outcome == "fail":
            step["result"] = {"error": "timed out"}
        steps.append(step)
        if i == last:
            want.append("block")  # refused: it did not run, so the last used call stays
            continue
        want.append("allow")
        if outcome != "fail":  # a call with no recorded result ran and returned
            last = i
    assert actions(run("crewai", steps)) == want


# ---- cline: consecutive mistakes, each call counted, compared after a response's last call ------------------
OUTCOMES = st.sampled_from(["ok", "fail", "exit"])


def mistake_steps(turns: list[list[str] | None]) -> tuple[list[dict[str, Any]], list[int]]:
    """Steps for the turns (a list of call outcomes, or None for a rejected step), each call with its own
    arguments so no loop rule speaks; and the index of each turn's last step."""
    steps: list[dict[str, Any]] = []
    ends: list[int] = []
    for t, outcomes in enumerate(turns):
        if outcomes is None:
            steps.append({"rejected": {"reason": "no tool use"}})
        else:
            steps.append({"llm": {"output_tokens": 10}})
            for k, outcome in enumerate(outcomes):
                result = ({"text": "ok"} if outcome == "ok" else {"error": "not found"} if outcome == "fail"
                          else {"ok": False, "exit_code": 1, "error": "1 failing"})
                steps.append(call(100 * t + k, **result))
        ends.append(len(steps) - 1)
    return steps, ends


TURNS = st.lists(st.none() | st.lists(OUTCOMES, max_size=4), min_size=1, max_size=10)


@given(TURNS)
def test_cline_stops_at_three_consecutive_mistakes(turns: list[list[str] | None]) -> None:
    steps, ends = mistake_steps(turns)
    count, stop = 0, None
    for outcomes, end in zip(turns, ends, strict=True):
        if not outcomes:  # rejected, or a response without a tool use: one mistake
            count += 1
        for outcome in outcomes or ():
            count = count + 1 if outcome == "fail" else 0  # a command's exit status is no mistake
        if count >= 3:
            stop = end
            break
    note(repr(turns))
    result = run("cline", steps)
    assert (result.stopped_at, result.stopped_by) == ((stop, "failure_tracker") if stop is not None else (None, None))


@given(TURNS)
def test_cline_sdk_stops_at_six_failed_turns(turns: list[list[str] | None]) -> None:
    steps, ends = mistake_steps(turns)
    count, stop = 0, None
    for outcomes, end in zip(turns, ends, strict=True):
        if not outcomes:
            continue  # rejected steps and turns without calls record nothing (empty_turns: keep)
        count = count + 1 if all(o == "fail" for o in outcomes) else 0  # any productive call resets
        if count == 6:
            stop = end
            break
    note(repr(turns))
    result = run("cline-sdk", steps)
    assert (result.stopped_at, result.stopped_by) == ((stop, "failure_tracker") if stop is not None else (None, None))
