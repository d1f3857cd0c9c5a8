"""Properties of the loop guard over generated traces: consecutive vs interleaved, thresholds, monotonicity,
isolation and determinism. Expectations are computed from the rules in DESIGN.md §7 and PRESETS.md."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from pytest_loopguard import Policy, ReplayResult, Trace, replay, resolve_policy
from pytest_loopguard.core._model import SEVERITY, ToolCall
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.io._format import dumps
from pytest_loopguard.pytest import _strategies as lgst

# Presets whose loop guard counts consecutive calls, with their differing identity and warn action.
LOOP_PRESETS = ("default", "spacebot-worker", "spacebot-branch", "spacebot-channel")


def loop_guard_verdicts(result: ReplayResult) -> list[list[tuple[str, str]]]:
    return [[(v.action, v.reason) for v in s.verdicts if v.engine == "loop_guard"] for s in result.steps]


def expected_identical_run(n: int, settings: Any, poll: bool) -> list[tuple[str, str] | None]:
    """The loop guard's verdict at each position of a run of n identical calls, from the rules:
    count = stop (default) → stop, later calls not reached; count ≥ block → block; count ≥ warn → the
    call's warning count +1, past max_warnings_per_call →
    block (warnings_exhausted), else consecutive_warning with `warn_action`; below warn → no verdict."""
    mult = settings.poll_multiplier if poll else 1
    warn_at, block_at = settings.warn_at * mult, settings.block_at * mult
    stop_at = settings.stop_at * mult if settings.stop_at is not None else None
    out: list[tuple[str, str] | None] = []
    warnings = 0
    for count in range(1, n + 1):
        if stop_at is not None and count > stop_at:
            out.append(None)  # not reached: the run ended
        elif stop_at is not None and count == stop_at:
            out.append(("stop", "loop_guard.consecutive_stop"))
        elif count >= block_at:
            out.append(("block", "loop_guard.consecutive_block"))
        elif count >= warn_at:
            warnings += 1
            if warnings > settings.max_warnings_per_call:
                out.append(("block", "loop_guard.warnings_exhausted"))
            else:
                out.append((settings.warn_action, "loop_guard.consecutive_warning"))
        else:
            out.append(None)
    return out


def is_poll(policy: Policy, call: ToolCall) -> bool:
    settings = policy.settings("loop_guard")
    if policy.classifier.is_observation(call):
        return True
    text = call.ordered
    return (
        call.tool in settings.poll_shell_tools
        and len(text) < settings.poll_max_chars
        and any(word in text.lower() for word in settings.poll_words)
    )


def show(trace: Trace) -> None:
    note(dumps(trace))


# ---- consecutive vs interleaved --------------------------------------------------------------------------
@given(lgst.interleaved_traces(), st.sampled_from(LOOP_PRESETS) | lgst.policies())
def test_interleaved_trace_never_gets_a_consecutive_verdict(trace: Trace, policy: str | Policy) -> None:
    show(trace)
    for step in replay(trace, policy).steps:
        reasons = [v.reason for v in step.verdicts]
        assert not any(r.startswith("loop_guard.consecutive_") for r in reasons), (step.index, reasons)


def test_interleaved_traces_never_put_identical_calls_side_by_side() -> None:
    @given(lgst.interleaved_traces(max_size=40))
    def check(trace: Trace) -> None:
        calls = [s.call for s in trace.steps]
        assert len(calls) >= 2
        for a, b in itertools.pairwise(calls):
            assert a is not None and b is not None
            assert a.fingerprint != b.fingerprint and a.ordered_fingerprint != b.ordered_fingerprint

    check()


# ---- an identical run gets exactly what the thresholds say ------------------------------------------------
@given(lgst.policies(max_threshold=7) | st.sampled_from(LOOP_PRESETS).map(resolve_policy),
       lgst.identical_runs(max_size=25))
def test_identical_run_gets_the_verdicts_the_thresholds_say(policy: Policy, trace: Trace) -> None:
    show(trace)
    call = trace.steps[0].call
    assert call is not None
    expected = expected_identical_run(len(trace.steps), policy.settings("loop_guard"), is_poll(policy, call))
    result = replay(trace, policy)
    got = loop_guard_verdicts(result)
    assert got == [[e] if e is not None else [] for e in expected]
    # nothing else speaks about a plain action or observation call that succeeds: the step is the guard's
    stop = next((i for i, e in enumerate(expected) if e is not None and e[0] == "stop"), len(expected))
    actions = [e[0] if e is not None else "allow" for e in expected[: stop + 1]]
    assert [s.action for s in result.steps] == actions + ["not_reached"] * (len(expected) - len(actions))
    assert result.outcome == ("stopped" if stop < len(expected) else "incomplete")


def test_expected_identical_run_follows_the_spacebot_worker_example() -> None:
    # PRESETS.md: worker, identical call ×7 → allow ×3, block (warning) ×3, block on the 7th;
    # browser_snapshot ×12 → allow ×11, block (warning) on the 12th.
    worker = resolve_policy("spacebot").settings("loop_guard")
    plain = expected_identical_run(7, worker, poll=False)
    assert [e and e[0] for e in plain] == [None] * 3 + ["block"] * 4
    assert [e and e[1] for e in plain][3:] == ["loop_guard.consecutive_warning"] * 3 + ["loop_guard.consecutive_block"]
    snapshot = expected_identical_run(12, worker, poll=True)
    assert snapshot[:11] == [None] * 11 and snapshot[11] == ("block", "loop_guard.consecutive_warning")


# ---- monotonicity -------------------------------------------------------------------------------------------
def severities(result: ReplayResult) -> list[int]:
    # a step after the run ended is as severe as what ended it
    ended = SEVERITY["stop"]
    return [ended if s.action == "not_reached" else SEVERITY[s.action] for s in result.steps]


@given(lgst.tool_calls(), st.integers(1, 20), st.integers(1, 10),
       st.sampled_from(LOOP_PRESETS) | lgst.policies())
def test_longer_identical_run_is_never_less_severe(call: ToolCall, n: int, extra: int, policy: str | Policy) -> None:
    short = replay(lgst.build_trace([call] * n), policy)
    longer = replay(lgst.build_trace([call] * (n + extra)), policy)
    assert all(b >= a for a, b in zip(severities(short), severities(longer), strict=False))
    along = severities(longer)
    assert along == sorted(along), "severity along an identical run went down"


# ---- isolation -----------------------------------------------------------------------------------------------
class Interleaver:
    """Runs several replays in threads but lets exactly one advance at a time, switching at every engine
    event in the order a drawn schedule says: a deterministic interleaving of runs in one process."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.running: int | None = None
        self.alive: set[int] = set()

    def plugin(self, run: int) -> object:
        pause = self.pause

        class Pause:
            @hookimpl
            def loopguard_before_call(self) -> None:
                pause(run)

            @hookimpl
            def loopguard_after_call(self) -> None:
                pause(run)

            @hookimpl
            def loopguard_turn_start(self) -> None:
                pause(run)

            @hookimpl
            def loopguard_before_llm(self) -> None:
                pause(run)

            @hookimpl
            def loopguard_message(self) -> None:
                pause(run)

        return Pause()

    def pause(self, run: int) -> None:
        with self.cond:
            self.running = None
            self.cond.notify_all()
            if not self.cond.wait_for(lambda: self.running == run, timeout=60):
                raise RuntimeError("interleaver lost its turn")

    def run_all(self, jobs: list[Callable[[object], ReplayResult]], schedule: list[int]) -> list[ReplayResult]:
        results: list[ReplayResult | BaseException | None] = [None] * len(jobs)

        def body(i: int) -> None:
            try:
                self.pause(i)
                results[i] = jobs[i](self.plugin(i))
            except BaseException as exc:
                results[i] = exc
            finally:
                with self.cond:
                    self.alive.discard(i)
                    self.running = None
                    self.cond.notify_all()

        threads = [threading.Thread(target=body, args=(i,)) for i in range(len(jobs))]
        with self.cond:
            self.alive = set(range(len(jobs)))
        for t in threads:
            t.start()
        step = 0
        while True:
            with self.cond:
                # every live thread is parked before the next one is chosen
                self.cond.wait_for(lambda: self.running is None, timeout=60)
                live = sorted(self.alive)
                if not live:
                    break
                choice = schedule[step] if step < len(schedule) else step
                self.running = live[choice % len(live)]
                self.cond.notify_all()
            step += 1
        for t in threads:
            t.join()
        out: list[ReplayResult] = []
        for r in results:
            if isinstance(r, BaseException):
                raise r
            assert r is not None
            out.append(r)
        return out


@given(
    lgst.identical_runs(max_size=12) | lgst.interleaved_traces(max_size=12),
    lgst.identical_runs(max_size=12) | lgst.failure_streaks() | lgst.overflow_sessions(max_turns=4),
    st.sampled_from(LOOP_PRESETS),
    st.sampled_from(LOOP_PRESETS),
    st.lists(st.integers(0, 1), max_size=60),
)
def test_interleaved_replays_give_the_results_they_give_alone(
    a: Trace, b: Trace, policy_a: str, policy_b: str, schedule: list[int]
) -> None:
    alone = [replay(a, policy_a).to_dict(), replay(b, policy_b).to_dict()]
    together = Interleaver().run_all(
        [lambda p: replay(a, policy_a, plugins=[p]), lambda p: replay(b, policy_b, plugins=[p])], schedule
    )
    assert [r.to_dict() for r in together] == alone


def test_interleaver_really_interleaves() -> None:
    order: list[int] = []
    inter = Interleaver()

    def job(i: int) -> Callable[[object], ReplayResult]:
        class Record:
            @hookimpl
            def loopguard_before_call(self) -> None:
                order.append(i)

        return lambda p: replay(lgst.build_trace([ToolCall.of("browser_click")] * 3), plugins=[p, Record()])

    inter.run_all([job(0), job(1)], [0, 1] * 40)
    assert order != sorted(order), order
    assert sorted(order) == [0, 0, 0, 1, 1, 1]


# ---- determinism ---------------------------------------------------------------------------------------------
@given(lgst.traces(kinds=("tool", "llm", "message", "phase", "done"), unicode=False),
       st.sampled_from(["default", "spacebot", "hermes-current", "qa-agent", "browser-use", "openchrome"]))
def test_same_trace_same_result(trace: Trace, policy: str) -> None:
    assert replay(trace, policy).to_dict() == replay(trace, policy).to_dict()
