"""External guards that break the guard protocol: each is one GuardProcessError line naming the guard, the run and
the step, within the time limit, and leaves no process behind; a guard process is reused run after run.

The guards are tests/protocol/guards/hostile.py, correct until the request a test names and then broken in one
way (its docstring lists them), and counting_guard.py, our own Guard behind the pipe that counts its hellos.
"""

from __future__ import annotations

import gc
import os
import signal
import time
from pathlib import Path

import pytest
from guard_helpers import (
    TRACES,
    assert_gone,
    counting,
    external,
    flow,
    hostile,
    is_gone,
    loopguard,
    pids,
)

from pytest_loopguard import Session, ToolCall, ToolResult, replay
from pytest_loopguard.core._model import Trace
from pytest_loopguard.engines import _pipe
from pytest_loopguard.errors import GuardProcessError
from pytest_loopguard.io._format import load_file, loads
from pytest_loopguard.runtime._policy import resolve_policy

TIMEOUT = 0.5  # the time limit where a test waits for it to pass: a guard that hangs
PATIENT = 5.0  # where it does not (the guard breaks at once): long, so that a loaded machine fails no test
SLACK = 3.0  # a loaded machine's start-up and kill, on top of the time limit: a bound against hangs, not a target

# Requests per step for this trace: hello (0), run_start (1), then per step turn_start, before_call, after_call,
# turn_end. Step 3 reads a file whose text is BIG; the hostile guard is told where to break by `OP@INDEX`.
PROBE = """\
loopguard: 1
name: hostile-probe
policy: default
steps:
  - {tool: read_file, args: {path: a.py}, result: {ok: true, text: "alpha"}}
  - {tool: read_file, args: {path: b.py}}
  - {tool: grep, args: {pattern: TODO}}
  - {tool: read_file, args: {path: big.log}, result: {ok: true, text: "BIG"}}
  - {tool: read_file, args: {path: c.py}}
  - {tool: read_file, args: {path: d.py}}
"""
BIG_TEXT = "0123456789abcdef" * (384 * 1024)  # 6 MB of tool result: far more than a pipe holds


@pytest.fixture(scope="module")
def probe() -> Trace:
    return loads(PROBE.replace('"BIG"', '"big"'))[0]


@pytest.fixture(scope="module")
def big_probe() -> Trace:
    return loads(PROBE.replace('"BIG"', f'"{BIG_TEXT}"'))[0]


def broken_run(trace: Trace, command: list[str], tmp_path: Path, *, timeout_s: float | None = None,
               start_timeout_s: float | None = None) -> str:
    """Replay `trace` through the guard; the one GuardProcessError line it must give, checked for what every
    such line holds (the guard's command, the run, one line), within the time limit, with the guard ended."""
    started = tmp_path / "pids"
    command = [*command, "--pids", str(started)]
    t0 = time.monotonic()
    with pytest.raises(GuardProcessError) as caught:
        replay(trace, resolve_policy(external(command, timeout_s=timeout_s or PATIENT,
                                              start_timeout_s=start_timeout_s)))
    elapsed = time.monotonic() - t0
    line = str(caught.value)
    assert "\n" not in line and "\r" not in line
    assert line.startswith(f"external guard `{' '.join(command[:2])}"), line
    assert f"hostile.py {command[4]}" in line, line
    assert f"run {trace.name!r}" in line, line
    limit = max(timeout_s or 0, start_timeout_s or 0)  # 0: it broke at once, nothing was waited for
    assert elapsed < limit + SLACK, f"{elapsed:.2f} s for a {limit} s time limit: {line}"
    (pid,) = pids(started)
    assert is_gone(pid), f"guard process {pid} is still running after: {line}"
    assert not [p for p in _pipe._LIVE if p.command == tuple(command)]  # nothing of it left to end at exit
    return line


# ---- one broken guard, one line --------------------------------------------------------------------------------
def test_a_guard_that_never_answers_hello(probe: Trace, tmp_path: Path) -> None:
    line = broken_run(probe, hostile("silent"), tmp_path, start_timeout_s=TIMEOUT)
    assert line.endswith("run 'hostile-probe', hello: did not reply within 0.5 s"), line


def test_a_guard_that_goes_silent_midway(probe: Trace, tmp_path: Path) -> None:
    line = broken_run(probe, hostile("silent", "--at", "before_call@2"), tmp_path, timeout_s=TIMEOUT)
    assert line.endswith("run 'hostile-probe', step 2 (before_call grep): did not reply within 0.5 s"), line


def test_a_slow_start_is_not_a_slow_reply(probe: Trace, tmp_path: Path) -> None:
    """The reply to hello waits for the guard's start (10 s unless start_timeout_s says otherwise), not timeout_s."""
    command = hostile("ok", "--start-delay", "0.8", "--pids", tmp_path / "pids")
    result = replay(probe, resolve_policy(external(command, timeout_s=TIMEOUT)))
    assert [s.action.value for s in result.steps] == ["allow"] * 6


@pytest.mark.parametrize(("mode", "args", "where", "problem"), [
    pytest.param("garbage", ("--at", "after_call@1"), "step 1 (after_call read_file)",
                 "replied with a line that is not JSON: '<html>502 Bad Gateway</html>'", id="garbage"),
    pytest.param("twice-joined", ("--at", "before_call@1"), "step 1 (before_call read_file)",
                 "wrote more than one line in reply", id="two-replies-at-once"),
    pytest.param("banner", (), "hello", "my-guard 1.0 listening on stdin", id="stdout-before-hello"),
    pytest.param("exit", ("--at", "after_call@2", "--code", "3"), "step 2 (after_call grep)",
                 "exited without a reply (exit code 3)", id="exits-midway"),
    pytest.param("exit", ("--at", "0", "--code", "7"), "hello", "(exit code 7)", id="exits-at-hello"),
    pytest.param("error", ("--at", "before_call@0"), "step 0 (before_call read_file)",
                 "the guard reported an error: rule table not loaded", id="error-reply"),
    pytest.param("reply", ("--at", "before_call@0", "--reply", '{"verdicts":[{"action":"explode","reason":"a.b"}]}'),
                 "step 0 (before_call read_file)", "verdicts[0].action: expected one of allow, warn, block",
                 id="bad-action"),
    pytest.param("reply", ("--at", "after_call@0", "--reply", '{"verdicts":[{"action":"warn","reason":"nodot"}]}'),
                 "step 0 (after_call read_file)", "verdicts[0].reason: expected a dotted code", id="reason-no-dot"),
    pytest.param("reply", ("--at", "before_call@1",
                           "--reply", '{"verdicts":[{"action":"warn","reason":"x.y","data":{"n":[1,NaN]}}]}'),
                 "step 1 (before_call read_file)", "verdicts[0].data.n[1]: NaN and Infinity are not allowed",
                 id="nan-in-data"),
    pytest.param("reply", ("--at", "turn_start@0", "--reply", '{"verdicts": {"action": "warn"}}'),
                 "step 0 (turn_start)", 'expected {"verdicts": [...]}', id="verdicts-not-a-list"),
    pytest.param("reply", ("--at", "0", "--reply", '{"protocol": 2}'), "hello", "in reply to hello",
                 id="wrong-protocol-version"),
])
def test_a_broken_guard_is_one_line_naming_guard_run_and_step(
    probe: Trace, tmp_path: Path, mode: str, args: tuple[str, ...], where: str, problem: str
) -> None:
    line = broken_run(probe, hostile(mode, *args), tmp_path)
    assert f"run 'hostile-probe', {where}: " in line, line
    assert problem in line, line


def test_a_second_reply_is_found_at_the_next_request(probe: Trace, tmp_path: Path) -> None:
    # The second reply to step 1's before_call comes with the reply to the next request (its after_call), in one
    # write: found there, whatever the timing. (A second reply that comes on its own after the next request went
    # out can be told from that request's reply only by its `seq`: see the next test.)
    line = broken_run(probe, hostile("twice", "--at", "before_call@1"), tmp_path)
    assert "run 'hostile-probe', step 1 (after_call read_file): wrote more than one line in reply" in line, line


def test_a_late_second_reply_is_caught_at_once_when_the_guard_echoes_seq(probe: Trace, tmp_path: Path) -> None:
    # the second reply to step 1's before_call arrives on its own, as the reply to the next request: its `seq`
    # names the request it answers, so the shift is caught there and then, not requests or runs later
    line = broken_run(probe, hostile("twice-late", "--at", "before_call@1", "--echo-seq"), tmp_path)
    assert "run 'hostile-probe', step 1 (after_call read_file): replied to request " in line, line
    assert "a reply came late or twice" in line, line


def test_stderr_tail_is_quoted_when_a_flooding_guard_goes_silent(probe: Trace, tmp_path: Path) -> None:
    line = broken_run(probe, hostile("flood-silent", "--at", "after_call@2"), tmp_path, timeout_s=TIMEOUT)
    assert "step 2 (after_call grep): did not reply within 0.5 s; its stderr ends: " in line, line
    assert line.endswith("'guard: waiting for the rules database'"), line


def test_a_guard_that_stops_reading_cannot_block_a_huge_request(big_probe: Trace, tmp_path: Path) -> None:
    # it answers before_call of step 3, then reads nothing: the 6 MB after_call fills the pipe and stays unsent
    line = broken_run(big_probe, hostile("deaf", "--at", "before_call@3"), tmp_path, timeout_s=TIMEOUT)
    assert "step 3 (after_call read_file): did not read the request within 0.5 s" in line, line


def test_a_reply_line_over_the_limit_ends_the_guard(probe: Trace, tmp_path: Path) -> None:
    # 20 MB on one line (over MAX_REPLY_BYTES, 16 MB): the length error comes as soon as the limit is passed
    size = 20 * 1024 * 1024
    assert size > _pipe.MAX_REPLY_BYTES
    line = broken_run(probe, hostile("huge", "--at", "before_call@0", "--size", str(size)), tmp_path)
    assert "step 0 (before_call read_file): a reply longer than 16777216 bytes" in line, line


def test_a_guard_that_cannot_start_is_one_line(probe: Trace, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-guard"
    with pytest.raises(GuardProcessError) as caught:
        replay(probe, resolve_policy(external([str(missing), "--flag"])))
    assert str(caught.value) == (f"external guard `{missing} --flag`, run 'hostile-probe': could not start: "
                                 "No such file or directory")


@pytest.mark.parametrize("at", ["0", "after_call@2"], ids=["before-hello", "midway"])
def test_a_guard_flooding_stderr_still_works(probe: Trace, tmp_path: Path, at: str) -> None:
    """10 MB on stderr (more than a pipe holds) while it answers: read away, the run is not failed or slowed."""
    started = tmp_path / "pids"
    command = hostile("flood", "--at", at, "--pids", started)
    t0 = time.monotonic()
    result = replay(probe, resolve_policy(external(command)))  # each reply within its limit, or this raises
    assert time.monotonic() - t0 < SLACK
    assert [s.action.value for s in result.steps] == ["allow"] * 6
    assert result.outcome == "incomplete"
    (pid,) = pids(started)
    assert not is_gone(pid)  # a working guard stays for the next run


def test_a_correct_guard_takes_a_huge_request(big_probe: Trace, tmp_path: Path) -> None:
    """The huge request of the deaf guard's test passes through a guard that reads it."""
    result = replay(big_probe, resolve_policy(external(hostile("ok", "--pids", tmp_path / "pids"))))
    assert [s.action.value for s in result.steps] == ["allow"] * 6


# ---- the command line: one line, exit 2, never a traceback -------------------------------------------------------
@pytest.fixture(scope="module")
def one_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("one-trace")
    trace = TRACES / "loop_guard" / "default_consecutive_stop.yaml"
    (folder / trace.name).write_text(trace.read_text(encoding="utf-8"), encoding="utf-8")
    return folder / trace.name


@pytest.mark.parametrize("command", ["replay", "run"])
def test_cli_reports_a_broken_guard_in_one_line(one_trace: Path, tmp_path: Path, command: str) -> None:
    started = tmp_path / "pids"
    policy = external(hostile("garbage", "--at", "before_call@2", "--pids", started))
    done = loopguard(command, one_trace, "--policy", flow(policy))
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if "external guard" in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("loopguard: error: "), lines[0]
    assert ("run 'loop_guard-default-consecutive-stop', step 2 (before_call browser_click): replied with a line "
            "that is not JSON") in lines[0]
    (pid,) = pids(started)
    assert_gone(pid)


def test_cli_run_a_guard_that_never_answers(one_trace: Path, tmp_path: Path) -> None:
    started = tmp_path / "pids"
    never = external(hostile("silent", "--pids", started), start_timeout_s=TIMEOUT)
    done = loopguard("run", one_trace, "--policy", flow(never))
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if "external guard" in x]
    assert "run 'loop_guard-default-consecutive-stop', hello: did not reply within 0.5 s" in line
    assert_gone(pids(started)[0])


# ---- one process, reused ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bundled() -> list[Trace]:
    """20 recorded traces of the bundle (scenarios are simulated, not replayed)."""
    traces = [t for path in sorted(TRACES.glob("*/*.yaml")) for t in load_file(path) if t.mode == "replay"]
    return traces[::max(1, len(traces) // 20)][:20]


def _actions(result: object) -> list[tuple[int, str, tuple[str, ...]]]:
    return [(s.index, s.action.value, tuple(v.reason for v in s.verdicts)) for s in result.steps]  # type: ignore[attr-defined]


def test_one_process_serves_every_run(bundled: list[Trace], tmp_path: Path) -> None:
    hellos = tmp_path / "hellos"
    policy = resolve_policy(external(counting(hellos), timeout_s=5))
    for trace in bundled:
        got = replay(trace, policy)
        assert _actions(got) == _actions(replay(trace, "default")), trace.name
        assert (got.outcome, got.stopped_at) == (replay(trace, "default").outcome, replay(trace, "default").stopped_at)
    assert len(bundled) == 20
    assert len(pids(hellos)) == 1


def test_two_live_sessions_interleaved_get_two_processes(tmp_path: Path) -> None:
    hellos = tmp_path / "hellos"
    policy = external(counting(hellos), timeout_s=5)
    looping, varied = Session(policy, now_ms=None, name="looping"), Session(policy, now_ms=None, name="varied")
    built_in = {"looping": Session("default", now_ms=None), "varied": Session("default", now_ms=None)}
    got: dict[str, list[str]] = {"looping": [], "varied": []}
    want: dict[str, list[str]] = {"looping": [], "varied": []}
    for i in range(9):
        for name, session in (("looping", looping), ("varied", varied)):
            call = ToolCall.of("browser_click", {"index": 7 if name == "looping" else i})
            for target, s in ((got, session), (want, built_in[name])):
                if s.ended:
                    continue
                decision = s.before_call(call)
                s.after_call(call, ToolResult(text="clicked") if decision.runs else None)
                target[name].append(f"{decision.action.value}:{','.join(v.reason for v in decision.verdicts)}")
    for s in (looping, varied, *built_in.values()):
        s.close()
    assert got == want
    assert "block:loop_guard.consecutive_block" in got["looping"]  # the verdicts are real ones, not all allow
    assert len(set(pids(hellos))) == 2


def test_a_process_that_died_is_replaced_for_the_next_run(bundled: list[Trace], tmp_path: Path) -> None:
    hellos = tmp_path / "hellos"
    policy = resolve_policy(external(counting(hellos), timeout_s=5))
    trace = next(t for t in bundled if replay(t, "default").first_intervention() is not None)
    expected = _actions(replay(trace, "default"))
    assert _actions(replay(trace, policy)) == expected
    (first,) = pids(hellos)
    os.kill(first, signal.SIGKILL)
    assert_gone(first)
    assert _actions(replay(trace, policy)) == expected
    assert len(pids(hellos)) == 2 and pids(hellos)[1] != first


def test_an_abandoned_live_run_is_ended_and_its_process_reused(tmp_path: Path) -> None:
    """A Session dropped without close: its process goes back to the pool (one process for both runs), and the
    next run on it, whose verdicts are a fresh run's, does not carry over the abandoned run's repetitions."""
    hellos = tmp_path / "hellos"
    policy = external(counting(hellos), timeout_s=5)
    call = ToolCall.of("browser_click", {"index": 7})
    abandoned = Session(policy, now_ms=None, name="abandoned")
    for _ in range(4):
        abandoned.after_call(call, ToolResult(text="clicked") if abandoned.before_call(call).runs else None)
    del abandoned
    gc.collect()
    fresh, built_in = Session(policy, now_ms=None, name="fresh"), Session("default", now_ms=None)
    for _ in range(4):
        for s in (fresh, built_in):
            s.after_call(call, ToolResult(text="clicked") if s.before_call(call).runs else None)
    assert [x.action for x in fresh.steps] == [x.action for x in built_in.steps] == ["allow", "allow", "warn", "warn"]
    fresh.close()
    built_in.close()
    assert len(pids(hellos)) == 1


def test_a_process_taken_by_another_thread_meanwhile_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    """lease looks at the free processes, then takes one: a run in another thread may have taken it in between
    (here: a free list whose view holds a process no longer in it), and a new process is started, no KeyError."""
    key = ("guard", 1.0, None)
    taken = object()

    class Raced(dict):  # type: ignore[type-arg]
        def items(self):  # type: ignore[no-untyped-def, override]
            return [(taken, key), *super().items()]

    monkeypatch.setattr(_pipe, "_POOL_FREE", Raced())
    started = object()
    assert _pipe.lease(key, lambda: started) is started
