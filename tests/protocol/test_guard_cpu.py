"""`LOOPGUARD_GUARD_CPU=same`: the thread that starts a guard process and the guard share one CPU (a request and its
reply never overlap, and a guard woken on its caller's CPU answers sooner than one woken on an idle CPU). The
`loopguard` command turns it on for its own processes; a program that embeds the Guard keeps the system's choice.
Real processes over real pipes; the affinity is the kernel's, read back from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_loopguard.bench._suite import write_corpus
from pytest_loopguard.core._machine import GUARD_CPU_ENV, LOCKS_ENV, claim_cpu, current_cpu, release_cpu
from pytest_loopguard.engines import _pipe
from pytest_loopguard.engines._pipe import GuardProcess

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux's")

REPO = Path(__file__).resolve().parents[2]
# answers every request with no verdict; on hello, writes its own CPUs and its parent's to the file it is given
GUARD = """\
import json, os, sys
out = sys.argv[1]
for line in sys.stdin:
    if '"hello"' in line:
        with open(out, "a") as f:
            f.write(json.dumps({"guard": sorted(os.sched_getaffinity(0)),
                                "caller": sorted(os.sched_getaffinity(os.getppid()))}) + "\\n")
        sys.stdout.write('{"protocol":1,"guard":{"name":"cpus"}}\\n')
    else:
        sys.stdout.write('{"verdicts":[]}\\n')
    sys.stdout.flush()
"""


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No CPU chosen yet in this process, claims kept apart from other processes'; afterwards this thread may use
    its CPUs again and holds no claim."""
    mine = os.sched_getaffinity(0)
    monkeypatch.setenv(LOCKS_ENV, str(tmp_path / "locks"))
    _pipe.SHARED.reset()
    yield
    _pipe.SHARED.reset()
    assert os.sched_getaffinity(0) == mine  # reset gave the thread its CPUs back


def start(tmp_path: Path, name: str = "cpus.jsonl") -> tuple[GuardProcess, Path]:
    out = tmp_path / name
    script = tmp_path / "guard.py"
    script.write_text(GUARD, encoding="utf-8")
    return GuardProcess([sys.executable, str(script), str(out)], timeout_s=10), out


def test_same_puts_the_thread_and_its_guards_on_one_cpu(tmp_path: Path, fresh: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GUARD_CPU_ENV, "same")
    everywhere = os.sched_getaffinity(0)
    proc, out = start(tmp_path)
    try:
        assert proc.cpu in everywhere
        assert os.sched_getaffinity(0) == os.sched_getaffinity(proc._proc.pid) == {proc.cpu}
        for i in range(50):  # requests and replies go on as ever (no poll: the guard runs on this CPU)
            assert proc.request({"op": "turn_end", "index": i}, f"step {i}") == {"verdicts": []}
        second, _ = start(tmp_path, "second.jsonl")  # a second guard of the same thread: the same CPU
        assert second.cpu == proc.cpu and os.sched_getaffinity(second._proc.pid) == {proc.cpu}
        second.close()
    finally:
        proc.close()
    # what the guard saw of itself while it ran
    assert json.loads(out.read_text(encoding="utf-8")) == {"guard": [proc.cpu], "caller": [proc.cpu]}


def test_without_it_the_guard_runs_where_the_system_puts_it(tmp_path: Path, fresh: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GUARD_CPU_ENV, raising=False)
    everywhere = os.sched_getaffinity(0)
    proc, _ = start(tmp_path)
    try:
        assert proc.cpu is None
        assert os.sched_getaffinity(proc._proc.pid) == everywhere == os.sched_getaffinity(0)
    finally:
        proc.close()


def test_only_the_thread_that_was_moved_shares_its_cpu(tmp_path: Path, fresh: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GUARD_CPU_ENV, "same")
    first, _ = start(tmp_path)
    started: list[GuardProcess] = []
    seen: list[set[int]] = []

    def other_thread() -> None:  # a thread that was not moved: its guard may run anywhere it may
        seen.append(os.sched_getaffinity(0))
        started.append(start(tmp_path, "other.jsonl")[0])

    try:
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        (other,) = started
        assert other.cpu is None and os.sched_getaffinity(other._proc.pid) == seen[0]
        # this process's first guard keeps its CPU, and the other thread may still use it over the pipe
        assert other.request({"op": "turn_end", "index": 0}, "step 0") == {"verdicts": []}
        other.close()
    finally:
        first.close()


def command_guard_cpus(tmp_path: Path, env_value: str | None, *args: str) -> list[dict[str, list[int]]]:
    """Run `loopguard ARGS` (default: replay one trace) as its own process under a policy whose engine is GUARD; what
    each guard it started saw."""
    out = tmp_path / f"cpus-{env_value}.jsonl"
    (tmp_path / "guard.py").write_text(GUARD, encoding="utf-8")
    policy = tmp_path / "policy.yaml"
    command = json.dumps([sys.executable, str(tmp_path / "guard.py"), str(out)])  # JSON is YAML
    policy.write_text(f"name: cpus\nexternal:\n  command: {command}\n  instead: true\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != GUARD_CPU_ENV}
    env[LOCKS_ENV] = str(tmp_path / "locks")  # claims apart from other processes' on this machine
    if env_value is not None:
        env[GUARD_CPU_ENV] = env_value
    command = list(args) or ["replay", str(REPO / "traces/loop_guard/branch_consecutive.yaml")]
    done = subprocess.run([sys.executable, "-m", "pytest_loopguard.cli", *command, "--policy", str(policy)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr  # a verdict mismatch is not the point here
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_the_command_shares_one_cpu_unless_told_otherwise(tmp_path: Path) -> None:
    everywhere = sorted(os.sched_getaffinity(0))
    (shared,) = command_guard_cpus(tmp_path, None)
    assert shared["guard"] == shared["caller"] and len(shared["guard"]) == 1 and shared["guard"][0] in everywhere
    assert command_guard_cpus(tmp_path, "any") == [{"guard": everywhere, "caller": everywhere}]


def test_workers_that_run_at_once_never_share_a_cpu(tmp_path: Path) -> None:
    everywhere = sorted(os.sched_getaffinity(0))
    corpus = write_corpus(tmp_path, 2 * 128, seed=0)  # two batches of MIN_BATCH files: a worker each
    seen = command_guard_cpus(tmp_path, None, "run", "-j", "2", str(corpus))
    assert len(seen) == 2  # a guard per worker
    assert all(s["guard"] == s["caller"] and len(s["guard"]) == 1 for s in seen)
    assert len({s["guard"][0] for s in seen}) == min(2, len(everywhere))


def test_the_cpu_is_the_one_the_thread_runs_on() -> None:
    # read from the kernel: the thread's CPU is one it may run on, and a thread moved to one CPU runs there
    mine = os.sched_getaffinity(0)
    assert current_cpu() in mine
    for cpu in sorted(mine):
        os.sched_setaffinity(0, {cpu})
        try:
            assert current_cpu() == cpu
        finally:
            os.sched_setaffinity(0, mine)


CLAIM = "import sys; from pytest_loopguard.core._machine import claim_cpu; print(claim_cpu())"


def test_a_claimed_cpu_is_no_other_processs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCKS_ENV, str(tmp_path))
    mine = sorted(os.sched_getaffinity(0))

    def elsewhere() -> str:  # another process's claim, on the same folder
        return subprocess.run([sys.executable, "-c", CLAIM], capture_output=True, text=True, check=True,
                              env={**os.environ, LOCKS_ENV: str(tmp_path)}).stdout.strip()

    held = []
    try:
        os.sched_setaffinity(0, {mine[-1]})
        try:  # the thread's own CPU first
            held.append(claim_cpu())
        finally:
            os.sched_setaffinity(0, set(mine))
        assert held == [mine[-1]]
        while len(held) < len(mine):
            held.append(claim_cpu())
        assert sorted(held) == mine  # one claim per CPU, each a different one
        assert claim_cpu() is None and elsewhere() == "None"  # every CPU is this process's
        release_cpu(mine[0])
        held.remove(mine[0])
        assert elsewhere() == str(mine[0])  # given up: another process takes it (and its claim ends with it)
    finally:
        for cpu in held:
            release_cpu(cpu)
    assert int(elsewhere()) in mine  # all free again
