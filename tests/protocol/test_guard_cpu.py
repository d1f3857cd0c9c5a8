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

from pytest_loopguard.core._machine import GUARD_CPU_ENV, one_cpu
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
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No CPU chosen yet in this process; afterwards this thread may use its CPUs again."""
    mine = os.sched_getaffinity(0)
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
        assert proc.cpu == one_cpu() and proc.cpu in everywhere
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


def command_guard_cpus(tmp_path: Path, env_value: str | None) -> dict[str, list[int]]:
    """Run `loopguard replay` as its own process on a trace under a policy whose engine is GUARD."""
    out = tmp_path / f"cpus-{env_value}.jsonl"
    (tmp_path / "guard.py").write_text(GUARD, encoding="utf-8")
    policy = tmp_path / "policy.yaml"
    command = json.dumps([sys.executable, str(tmp_path / "guard.py"), str(out)])  # JSON is YAML
    policy.write_text(f"name: cpus\nexternal:\n  command: {command}\n  instead: true\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != GUARD_CPU_ENV}
    if env_value is not None:
        env[GUARD_CPU_ENV] = env_value
    done = subprocess.run([sys.executable, "-m", "pytest_loopguard.cli", "replay",
                           str(REPO / "traces/loop_guard/branch_consecutive.yaml"), "--policy", str(policy)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr  # a verdict mismatch is not the point here
    (line,) = out.read_text(encoding="utf-8").splitlines()
    return dict(json.loads(line))


def test_the_command_shares_one_cpu_unless_told_otherwise(tmp_path: Path) -> None:
    everywhere = sorted(os.sched_getaffinity(0))
    shared = command_guard_cpus(tmp_path, None)
    assert shared["guard"] == shared["caller"] and len(shared["guard"]) == 1 and shared["guard"][0] in everywhere
    assert command_guard_cpus(tmp_path, "any") == {"guard": everywhere, "caller": everywhere}
