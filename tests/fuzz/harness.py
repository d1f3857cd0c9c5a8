"""Run untrusted input files through loopguard in a bounded worker process and classify each outcome.

The parent sends paths to a worker (this file run as a script) that has a memory limit; the worker gives
each input a CPU-time budget, loads it, replays or simulates every trace in it, checks and renders the
result, and runs `loopguard run` on it, then reports one JSON line. A worker that dies (a crash, the memory
limit) or stops answering (a hang in C code) is replaced and the input it was on is classified by how it
ended; the rest of the batch goes on in the new worker.

Outcomes: `accepted` (replayed, the CLI exited 0 or 1), `refused` (our error, one line, naming the file;
the CLI exited 2), and the defects: `exception` (anything else raised), `unnamed` (our error without the
file name, or over several lines), `cli` (a traceback, another exit status, or an error line not naming the
file), `hang` (over the CPU budget), `memory` (over the memory limit), `crash` (the worker died).
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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CPU_SECONDS = 10.0  # per input, in the worker: the slowest bundled scenario takes well under a second
MEMORY_BYTES = 1 << 30  # the worker's address space
WALL_SECONDS = 120.0  # per input, from outside: only a hang inside C code gets this far
DEFECTS = ("exception", "unnamed", "cli", "hang", "memory", "crash")


@dataclass(frozen=True)
class Outcome:
    path: str
    kind: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.kind in ("accepted", "refused")


# ---- worker side ----------------------------------------------------------------------------------------
class _OverBudget(BaseException):
    """Raised by the CPU timer: a BaseException, so that no `except Exception` in the code under test eats it."""


def _on_timer(signum: int, frame: Any) -> None:
    raise _OverBudget


def _names_file(message: str, path: Path) -> bool:
    # the error may name the trace or a policy file beside it; either way a file of this input
    return path.name in message or path.parent.name in message


def _library(path: Path) -> tuple[str, str]:
    from pytest_loopguard.core._expect import check
    from pytest_loopguard.errors import LoopguardError
    from pytest_loopguard.io._format import load_file
    from pytest_loopguard.io._runner import execute
    from pytest_loopguard.report._tables import mismatch_table, timeline_table

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for trace in load_file(path):
                result = execute(trace)
                mismatches = check(result)
                timeline_table(result)
                if mismatches:
                    mismatch_table(result, mismatches)
                json.dumps(result.to_dict(), default=str)
    except LoopguardError as exc:
        message = str(exc)
        if "\n" in message.strip() or not _names_file(message, path):
            return "unnamed", f"{type(exc).__name__}: {message[:300]}"
        return "refused", message[:300]
    return "accepted", ""


def _cli(path: Path) -> tuple[str, str]:
    from pytest_loopguard.cli._main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = main(["run", str(path)])
    text = err.getvalue()
    lines = [line for line in text.splitlines() if line.startswith("loopguard: error:")]
    if "Traceback" in text or status not in (0, 1, 2):
        return "cli", f"exit {status}: {text[-300:]}"
    if status == 2 and (not lines or not all(_names_file(line, path) for line in lines)):
        return "cli", f"exit 2 without an error line naming the file: {text[:300]}"
    return ("refused" if status == 2 else "accepted"), ""


def _check(path: Path) -> tuple[str, str]:
    try:
        signal.setitimer(signal.ITIMER_PROF, CPU_SECONDS)
        try:
            kind, detail = _library(path)
            if kind in ("accepted", "refused"):
                cli_kind, cli_detail = _cli(path)
                if cli_kind == "cli" or cli_kind != kind:
                    kind, detail = "cli", cli_detail or f"the library says {kind}, `loopguard run` {cli_kind}"
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
    except _OverBudget:
        return "hang", f"over {CPU_SECONDS:g} s of CPU"
    except MemoryError:
        return "memory", "MemoryError"
    except RecursionError as exc:
        return "exception", f"RecursionError: {exc}"
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno} {frames[-1].name}" if frames else "-"
        return "exception", f"{type(exc).__name__}: {str(exc)[:200]} at {where}"
    return kind, detail


def worker() -> None:
    """Read one path per line on stdin; answer one JSON line per path on stdout."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    signal.signal(signal.SIGPROF, _on_timer)
    sys.setrecursionlimit(10_000)  # deep input must be refused by the checks, not by luck of the stack size
    answer = sys.stdout
    for line in sys.stdin:
        path = Path(line.rstrip("\n"))
        kind, detail = _check(path)
        answer.write(json.dumps({"path": str(path), "kind": kind, "detail": detail}) + "\n")
        answer.flush()


# ---- parent side ----------------------------------------------------------------------------------------
def _spawn(repo: Path, script: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONHASHSEED": "0"}
    return subprocess.Popen(
        [sys.executable, str(script or Path(__file__).resolve()), "--worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=repo,
    )


def _ended(proc: subprocess.Popen[str]) -> tuple[str, str]:
    code = proc.wait()
    if code < 0:
        name = signal.Signals(-code).name
        return ("memory" if -code == signal.SIGKILL else "crash"), f"worker died of {name}"
    return "crash", f"worker exited {code}"


def run_inputs(paths: Iterable[Path], repo: Path, script: Path | None = None) -> Iterator[Outcome]:
    """The outcome of every input, in order; a dead or stuck worker is replaced. `script`: another worker
    (tests/fuzz/import_worker.py) speaking the same one-line protocol."""
    pending = list(paths)
    while pending:
        proc = _spawn(repo, script)
        assert proc.stdin is not None and proc.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        try:
            while pending:
                path = pending[0]
                try:
                    proc.stdin.write(f"{path}\n")
                    proc.stdin.flush()
                except BrokenPipeError:
                    kind, detail = _ended(proc)
                    yield Outcome(str(path), kind, detail)
                    pending.pop(0)
                    break
                line = proc.stdout.readline() if selector.select(WALL_SECONDS) else None
                pending.pop(0)
                if line:
                    data = json.loads(line)
                    yield Outcome(str(path), data["kind"], data["detail"])
                    continue
                if line is None:  # stuck in C code past every CPU budget
                    proc.kill()
                    proc.wait()
                    yield Outcome(str(path), "hang", f"no answer in {WALL_SECONDS:g} s")
                else:
                    kind, detail = _ended(proc)
                    yield Outcome(str(path), kind, detail)
                break
        finally:
            selector.close()
            if proc.poll() is None:
                proc.stdin.close()
                proc.wait()


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    worker()
