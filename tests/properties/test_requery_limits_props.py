"""Properties of failure_tracker's second-wave reset rules over generated runs, each against a model written from
PRESETS.md's words (not from the engine): the rejected-reply count under its three resets (consecutive versus
interleaved accepted turns, blocked calls, user messages), Pydantic AI's per-tool retries with other tools
interleaved and `per_prompt_usage`, and LangChain's run versus thread call limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import example, given, note
from hypothesis import strategies as st

from pytest_loopguard import ReplayResult, replay
from pytest_loopguard.io._format import trace_from_mapping

Event = tuple[str, Any]


def run(policy: Mapping[str, Any], steps: Sequence[Mapping[str, Any]]) -> ReplayResult:
    return replay(trace_from_mapping({"loopguard": 1, "name": "second-wave-props", "policy": dict(policy),
                                      "steps": list(steps)}))


def actions(result: ReplayResult) -> list[str]:
    return [str(s.action) for s in result.steps]


# ---- rejected replies: rejected_stop_at under `turn`, `call` and `never` ---------------------------------

# a run's events: a rejected reply, an accepted response whose command runs (ok or failing), one whose
# command is blocklisted, a response with no command, a person's message
REQUERY_EVENTS = st.lists(st.sampled_from(["rejected", "ran", "failed", "blocked", "empty", "user"]), max_size=14)


def requery_steps(events: Sequence[str]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for e in events:
        if e == "rejected":
            steps.append({"rejected": {"reason": "format error"}})
        elif e == "user":
            steps.append({"message": {"role": "user", "text": "go on"}})
        else:
            steps.append({"llm": {"output_tokens": 5}})
            if e != "empty":
                command = "vim x.py" if e == "blocked" else "ls"
                steps.append({"tool": "bash", "args": {"command": command},
                              "result": {"ok": e != "failed", "text": "out"}})
    return steps


def requery_model(events: Sequence[str], stop_at: int, reset: str, per_prompt: bool) -> int | None:
    """The event index whose requery stops the run (PRESETS.md: mini-swe-agent, swe-agent, pydantic-ai)."""
    count = 0
    for i, e in enumerate(events):
        if e == "user":
            if per_prompt and reset == "never":
                count = 0
            continue
        if e == "rejected":
            count += 1
        else:  # an accepted response: a turn starts
            if reset == "turn":
                count = 0
            if e == "blocked":
                count += 1  # a blocklisted command is a requery, and ran nothing
            elif e in ("ran", "failed") and reset == "call":
                count = 0
        if count >= stop_at:
            return i
    return None


@given(REQUERY_EVENTS, st.integers(1, 4), st.sampled_from(["turn", "call", "never"]), st.booleans())
@example(["blocked", "ran", "blocked"], 2, "call", False)  # a command that ran ends SWE-agent's streak
@example(["blocked", "empty", "blocked"], 2, "call", False)  # an accepted response alone does not
@example(["rejected", "failed", "rejected"], 2, "turn", False)  # any accepted response ends mini-swe-agent's
@example(["rejected", "user", "rejected"], 2, "never", True)  # a new Pydantic AI run
@example(["rejected", "user", "rejected"], 2, "turn", True)  # per_prompt_usage resets only `never`
@example(["rejected", "user", "rejected"], 2, "never", False)  # and `never` without it: nothing does
def test_rejected_count_stops_where_its_reset_says(events: list[str], stop_at: int, reset: str,
                                                   per_prompt: bool) -> None:
    note(repr(events))
    policy = {"preset": "swe-agent", "failure_tracker": {
        "rejected_stop_at": stop_at, "rejected_stop_reset": reset, "per_prompt_usage": per_prompt,
        "timeout_stop_at": None}}
    result = run(policy, requery_steps(events))
    want = requery_model(events, stop_at, reset, per_prompt)
    stops = [i for i, s in enumerate(result.steps) if any(v.reason == "failure_tracker.rejected_limit"
                                                           for v in s.verdicts)]
    if want is None:
        assert stops == [] and result.outcome != "stopped"
    else:
        # the stop lands on the event's last step: the rejected step, or the blocked call
        stop_step = len(requery_steps(events[: want + 1])) - 1
        assert stops == [stop_step] and result.stopped_at == stop_step


# ---- Pydantic AI's tool retries: per tool, settled at each turn's end, interleaving does not reset ------

# a turn: the (tool, ok) of each of its calls; or a person's message
RETRY_EVENTS = st.lists(
    st.one_of(st.just(("user", None)),
              st.tuples(st.just("turn"), st.lists(st.tuples(st.sampled_from("AB"), st.booleans()), max_size=3))),
    max_size=10)


def retry_model(events: Sequence[Event], retries: int, per_prompt: bool) -> tuple[int, int] | None:
    """(event, call) of the failed call that stops the run: its tool's count at its turn's start is >= retries."""
    counts: dict[str, int] = {}
    for i, (kind, calls) in enumerate(events):
        if kind == "user":
            if per_prompt:
                counts = {}
            continue
        for j, (tool, ok) in enumerate(calls):
            if not ok and counts.get(tool, 0) >= retries:
                return i, j
        failed = {t for t, ok in calls if not ok}
        for tool in failed:
            counts[tool] = counts.get(tool, 0) + 1
        for tool in {t for t, ok in calls if ok} - failed:
            counts[tool] = 0
    return None


def retry_steps(events: Sequence[Event]) -> tuple[list[dict[str, Any]], dict[tuple[int, int], int]]:
    steps: list[dict[str, Any]] = []
    where: dict[tuple[int, int], int] = {}
    for i, (kind, calls) in enumerate(events):
        if kind == "user":
            steps.append({"message": {"role": "user", "text": "next"}})
            continue
        steps.append({"llm": {"output_tokens": 5}})
        for j, (tool, ok) in enumerate(calls):
            where[i, j] = len(steps)
            steps.append({"tool": tool, "args": {"n": j},
                          "result": {"ok": True, "text": "fine"} if ok else {"error": "Please retry"}})
    return steps, where


@given(RETRY_EVENTS, st.integers(0, 2), st.booleans())
@example([("turn", [("A", False)]), ("turn", [("B", True)]), ("turn", [("A", False)])], 1, True)  # interleaved
@example([("turn", [("A", False), ("A", False)]), ("turn", [("A", True)]), ("turn", [("A", False)])], 1, True)
@example([("turn", [("A", False)]), ("user", None), ("turn", [("A", False)])], 1, True)
@example([("turn", [("A", False), ("A", False)])], 1, False)  # checked against the count at the turn's start
def test_tool_retries_count_per_tool_across_interleaved_turns(events: list[Event], retries: int,
                                                               per_prompt: bool) -> None:
    note(repr(events))
    steps, where = retry_steps(events)
    policy = {"preset": "pydantic-ai", "failure_tracker": {"tool_retries": retries, "per_prompt_usage": per_prompt,
                                                            "max_steps": None}}
    result = run(policy, steps)
    want = retry_model(events, retries, per_prompt)
    stops = [i for i, s in enumerate(result.steps)
             if any(v.reason == "failure_tracker.tool_retries" for v in s.verdicts)]
    assert stops == ([] if want is None else [where[want]])


# ---- max_steps per prompt: a person's message starts the request count again ---------------------------

@given(st.lists(st.sampled_from(["turn", "rejected", "user"]), max_size=16), st.integers(1, 5), st.booleans())
@example(["turn", "rejected", "user", "turn", "turn"], 2, True)
def test_request_limit_counts_per_prompt_when_asked(events: list[str], limit: int, per_prompt: bool) -> None:
    steps = [{"llm": {"output_tokens": 5}} if e == "turn" else {"rejected": {"reason": "empty"}} if e == "rejected"
             else {"message": {"role": "user", "text": "next"}} for e in events]
    policy = {"preset": "pydantic-ai", "failure_tracker": {
        "max_steps": limit, "per_prompt_usage": per_prompt, "rejected_stop_at": None, "tool_retries": None}}
    result = run(policy, steps)
    queries, want = 0, None
    for i, e in enumerate(events):
        if e == "user":
            queries = 0 if per_prompt else queries
            continue
        if queries >= limit:
            want = i
            break
        queries += 1
    assert result.stopped_at == want
    assert result.outcome == ("exhausted" if want is not None else "incomplete")


# ---- LangChain's call limits: thread (whole trace) versus run (since the last user message) ------------

LIMIT_EVENTS = st.lists(st.one_of(st.just(("user", None)),
                                  st.tuples(st.just("turn"), st.lists(st.sampled_from("XY"), max_size=4))),
                        max_size=10)
LIMITS = st.tuples(st.sampled_from([None, "X"]), st.integers(0, 6) | st.none(), st.integers(0, 6) | st.none()).filter(
    lambda e: e[1:] != (None, None) and (e[1] is None or e[2] is None or e[2] <= e[1]))


def limit_model(events: Sequence[Event], entries: Sequence[tuple[str | None, int | None, int | None]]
                ) -> list[list[bool]]:
    """Per turn, per call: blocked? Each entry counts the calls of its tool on its own."""
    threads, runs = [0] * len(entries), [0] * len(entries)
    out: list[list[bool]] = []
    for kind, calls in events:
        if kind == "user":
            runs = [0] * len(entries)
            continue
        blocked = [False] * len(calls)
        for e, (tool, thread_limit, run_limit) in enumerate(entries):
            attempted = 0
            for j, name in enumerate(calls):
                if tool is not None and name != tool:
                    continue
                over = ((thread_limit is not None and threads[e] + 1 > thread_limit)
                        or (run_limit is not None and runs[e] + 1 > run_limit))
                if over:
                    blocked[j] = True
                    attempted += 1
                else:
                    threads[e] += 1
                    runs[e] += 1
            runs[e] += attempted
        out.append(blocked)
    return out


@given(LIMIT_EVENTS, st.lists(LIMITS, min_size=1, max_size=2, unique_by=lambda e: e[0]))
@example([("turn", ["X", "X", "X"]), ("user", None), ("turn", ["X"]), ("turn", ["Y"])], [(None, 3, 2)])
def test_call_limits_block_by_run_and_thread_counts(events: list[Event],
                                                    entries: list[tuple[str | None, int | None, int | None]]) -> None:
    note(repr((events, entries)))
    steps: list[dict[str, Any]] = []
    for kind, calls in events:
        if kind == "user":
            steps.append({"message": {"role": "user", "text": "next"}})
            continue
        steps.append({"llm": {"output_tokens": 5}})
        steps += [{"tool": name, "args": {"n": j}, "result": {"ok": j % 2 == 0, "text": "r"}}
                  for j, name in enumerate(calls)]
    policy = {"preset": "langchain-tool-call-limit", "failure_tracker": {"call_limits": [
        {"tool": t, "thread_limit": th, "run_limit": r, "exit_behavior": "continue"} for t, th, r in entries]}}
    result = run(policy, steps)
    want = [b for blocked in limit_model(events, entries) for b in blocked]
    got = [s.action == "block" for s in result.steps if s.kind == "tool"]
    assert got == want
    assert all(v.reason == "failure_tracker.call_limit" for s in result.steps for v in s.verdicts)
