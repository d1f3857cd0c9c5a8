"""Run `loopguard import`, `eval` and `validate` on hostile input in a bounded worker process, and judge the end.

Commands run in one long-lived worker (this file run with `--worker`: starting Python for each command
would cost most of the suite's time), in process, with an address-space limit of 1 GiB for the worker and a
CPU budget of 10 s per command; a wall-clock bound on top catches a command blocked without using CPU (a
FIFO), and the worker is replaced after one that did not end. `judge` says what is wrong with how a
command ended, or nothing: exit 0 (or 1, an expectation failing), or exit 2 with every stderr line our
one-line `loopguard:` error; never a traceback, exit 3, a kill, or the memory limit. Shared by the
regression suite over ../shared/fuzz-repros/import/ and usable for any hostile command line.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MEMORY_BYTES = 1 << 30
CPU_SECONDS = 10
WALL_SECONDS = 30.0  # the machine is shared: CPU time is the bound, wall time only catches a blocked process


@dataclass(frozen=True)
class Ended:
    argv: tuple[str, ...]
    status: int | None  # None: no end within WALL_SECONDS (blocked); -1: over the CPU or memory budget
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return f"loopguard {' '.join(self.argv)} -> {self.status}: {self.stderr[-400:]!r}"


class _OverBudget(BaseException):
    """Raised by the CPU timer: a BaseException, so that no `except Exception` under test eats it."""


def _on_timer(signum: int, frame: Any) -> None:
    raise _OverBudget


def _serve() -> None:
    """The worker: one JSON request per line ({argv, cwd}), one JSON answer per line."""
    from pytest_loopguard.cli._main import main

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    signal.signal(signal.SIGPROF, _on_timer)
    answer = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        os.chdir(request["cwd"])
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                signal.setitimer(signal.ITIMER_PROF, CPU_SECONDS)
                try:
                    status = main(request["argv"])
                finally:
                    signal.setitimer(signal.ITIMER_PROF, 0)
        except _OverBudget:
            status, err = -1, io.StringIO(f"over {CPU_SECONDS} s of CPU")
        except MemoryError:
            status, err = -1, io.StringIO("MemoryError")
        except BaseException:
            status = 99
            err.write("Traceback (from the worker)\n" + traceback.format_exc())
        answer.write(json.dumps({"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()}) + "\n")
        answer.flush()


_worker: subprocess.Popen[str] | None = None


def _spawn() -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "0"}
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO)


def loopguard(*argv: str | Path, cwd: Path) -> Ended:
    """`loopguard ARGV` in `cwd` in the bounded worker."""
    global _worker
    args = tuple(str(a) for a in argv)
    if _worker is None or _worker.poll() is not None:
        _worker = _spawn()
    proc = _worker
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps({"argv": list(args), "cwd": str(cwd)}) + "\n")
        proc.stdin.flush()
    except BrokenPipeError:
        _worker = None
        return Ended(args, -9, "", "the worker died")
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        line = proc.stdout.readline() if selector.select(WALL_SECONDS) else None
    if not line:  # blocked (None) or dead (""): a new worker for the next command
        proc.kill()
        proc.wait()
        _worker = None
        return Ended(args, None if line is None else -9, "", "no answer")
    data = json.loads(line)
    return Ended(args, data["status"], data["stdout"], data["stderr"])


def judge(ended: Ended) -> str | None:
    """What is wrong with how the command ended (None: accepted, or refused in our one-line form)."""
    if ended.status is None:
        return f"hang: no end in {WALL_SECONDS:g} s"
    if ended.status < 0:
        return f"over the CPU or memory budget, or the worker died: {ended.stderr[:100]}"
    if "Traceback" in ended.stderr or "MemoryError" in ended.stderr:
        return "a traceback or MemoryError"
    if ended.status not in (0, 1, 2):
        return f"exit {ended.status}"
    lines = ended.stderr.splitlines()
    if ended.status == 2 and not lines:
        return "exit 2 without an error line"
    strays = [line for line in lines if not line.startswith("loopguard:")]
    if strays:
        return f"stderr lines that are not our one-line error: {strays[:3]}"
    if any("<trace>" in line for line in lines):
        return "an error naming <trace> instead of the file"
    return None


def files_under(folder: Path) -> set[str]:
    """Every path under `folder` (links not followed), relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def traces_valid(out: Path, cwd: Path) -> str | None:
    """`loopguard validate OUT` on what an import wrote (None: valid, or nothing written)."""
    if not out.is_dir() or not any(out.iterdir()):
        return None
    ended = loopguard("validate", out, cwd=cwd)
    return None if ended.status == 0 else f"validate refuses the import's output: {ended}"


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    _serve()
