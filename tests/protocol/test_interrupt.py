"""Ctrl-C while a guard process is working: the caller stops at once and the guard process is ended with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from guard_helpers import TRACES, assert_gone, external, flow, hostile, is_gone, pids, wait_for

from pytest_loopguard import replay
from pytest_loopguard.engines import _pipe
from pytest_loopguard.io._format import load
from pytest_loopguard.runtime._policy import resolve_policy


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Three recorded traces of the bundle, in a folder of their own."""
    folder = tmp_path / "traces"
    folder.mkdir()
    for name in ("default_consecutive_stop", "default_observation_cycle", "default_user_message_reset"):
        source = TRACES / "loop_guard" / f"{name}.yaml"
        (folder / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def test_ctrl_c_ends_loopguard_run_and_its_guard(corpus: Path, tmp_path: Path) -> None:
    reached = tmp_path / "reached"
    # replies to step 1's before_call after a minute, with a time limit of two: only Ctrl-C ends this run early
    slow = external(hostile("slow", "--at", "before_call@1", "--delay", "60", "--reached", reached), timeout_s=120)
    proc = subprocess.Popen([sys.executable, "-m", "pytest_loopguard.cli", "run", str(corpus), "--policy", flow(slow)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        (guard,) = wait_for(lambda: pids(reached), "the guard to be asked the slow request")
        os.kill(proc.pid, signal.SIGINT)  # to loopguard alone: the guard does not see the Ctrl-C itself
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "loopguard: interrupted", stderr
    assert "Traceback" not in stderr
    assert_gone(guard)


class Interrupted(BaseException):
    """What the test's SIGINT handler raises: an interruption, as KeyboardInterrupt is, but not pytest's own."""


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("sigint_raises")
def test_an_interrupted_request_ends_the_guard_process(tmp_path: Path) -> None:
    """The guard sends SIGINT to this process while it waits for a reply: the exception goes up, and the process,
    whose reply would otherwise be taken by the next request for its own, is ended at once, not returned to the
    pool."""
    trace = load(TRACES / "loop_guard" / "default_consecutive_stop.yaml")
    started = tmp_path / "pids"
    command = hostile("sigint-parent", "--at", "after_call@2", "--pids", started)
    policy = resolve_policy(external(command, timeout_s=30))
    with pytest.raises(Interrupted):
        replay(trace, policy)
    (pid,) = pids(started)
    assert is_gone(pid)
    assert not [p for p in (*_pipe._LIVE, *_pipe._POOL_FREE) if p.command == tuple(command)]


# ---- run -j N: each worker's guard processes end with the worker ------------------------------------------------
TINY = "loopguard: 1\nname: tiny-{n}\npolicy: default\nsteps:\n  - {{tool: read_file, args: {{path: f{n}.py}}}}\n"


@pytest.fixture
def many(tmp_path: Path) -> Path:
    """Enough trace files for `run -j 2` to start workers (it replays fewer than two batches itself)."""
    from pytest_loopguard.cli._jobs import MIN_BATCH

    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(2 * MIN_BATCH + 4):
        (folder / f"t{n:03}.yaml").write_text(TINY.format(n=n), encoding="utf-8")
    return folder


@pytest.mark.slow  # a forkserver and two workers: seconds
def test_ctrl_c_ends_run_jobs_workers_and_their_guards(many: Path, tmp_path: Path) -> None:
    reached = tmp_path / "reached"
    hung = external(hostile("silent", "--at", "before_call@0", "--reached", reached), timeout_s=120)
    proc = subprocess.Popen([sys.executable, "-m", "pytest_loopguard.cli", "run", "-j", "2", str(many),
                             "--policy", flow(hung)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        guards = wait_for(lambda: len(pids(reached)) == 2 and pids(reached), "a hung guard in each worker")
        os.kill(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert stderr.strip() == "loopguard: interrupted", stderr
    for guard in guards:
        assert_gone(guard)


@pytest.mark.slow
def test_run_jobs_workers_end_a_guard_that_ignores_end_of_input(many: Path, tmp_path: Path) -> None:
    hellos = tmp_path / "hellos"
    sticky = external(hostile("ok", "--sticky", "--hellos", hellos), timeout_s=5)
    done = subprocess.run([sys.executable, "-m", "pytest_loopguard.cli", "run", "-j", "2", str(many),
                           "--policy", flow(sticky)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"{2 * 128 + 4} traces replayed, 0 mismatched" in done.stdout
    started = pids(hellos)
    assert len(started) == 2  # one per worker, reused for its 130 files
    for guard in started:
        assert_gone(guard)
