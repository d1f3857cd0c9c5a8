"""The import/eval fuzz worker: each case folder's input through `loopguard import` (+ `validate` on what it
wrote) and `loopguard eval`, in this process, under the harness's memory limit and per-case CPU budget.

Speaks the harness's protocol (tests/fuzz/harness.py): one case folder per line on stdin (the input's own
name may hold a newline, the folder's never does), one JSON line per case on stdout. Outcomes: `accepted`
(every command exited 0 or 1), `refused` (exit 2 with our one-line error), and the defects: `cli` (a
traceback, exit 3 or another status, an error over several lines or not naming the input), `outside` (a
file written outside the output folder), `invalid` (`validate` refuses a trace the import wrote),
`exception`, `hang`, `memory`.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import signal
import sys
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import CPU_SECONDS, MEMORY_BYTES, _on_timer, _OverBudget

DEFECTS = ("cli", "outside", "invalid", "exception", "hang", "memory", "crash")
OUT = "out"


def _main(argv: list[str]) -> tuple[int, str]:
    from pytest_loopguard.cli._main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = main(argv)
    return status, err.getvalue()


def _judged(argv: list[str], name: str) -> tuple[str, str]:
    """(kind, detail) of one command on the input named `name` (as our errors show it: on one line)."""
    status, text = _main(argv)
    lines = text.splitlines()
    shown = name.replace("\n", "\\n").replace("\t", "\\t")
    if "Traceback" in text or status not in (0, 1, 2):
        return "cli", f"{argv[0]}: exit {status}: {text[-300:]}"
    if any(not line.startswith("loopguard:") for line in lines):
        return "cli", f"{argv[0]}: a stderr line that is not our error: {text[:300]!r}"
    if status == 2 and (not lines or not all(shown in line or "<redacted:" in line for line in lines)):
        return "cli", f"{argv[0]}: exit 2 without an error line naming {shown!r}: {text[:300]!r}"
    return ("refused" if status == 2 else "accepted"), ""


def scan_command(path: Path) -> list[str] | None:
    """The `loopguard scan` command line to fuzz with the same input, once `scan` is on main (issue 20):
    return e.g. `["scan", str(path)]` here and every case goes through it too. None: not wired yet."""
    return None


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def check(case: Path) -> tuple[str, str]:
    """Run the case folder's one input through import (+ validate), eval and (once wired) scan."""
    inputs = [p for p in case.iterdir() if p.name != OUT]
    if len(inputs) != 1:
        return "exception", f"expected one input in {case}, found {len(inputs)}"
    path = inputs[0]
    out = case / OUT
    before = _files(case)
    commands: list[tuple[list[str], Callable[[], tuple[str, str] | None] | None]] = [
        (["import", str(path), "-o", str(out)], lambda: _after_import(case, out, before)),
        (["eval", str(path)], None),
    ]
    if (scan := scan_command(path)) is not None:
        commands.append((scan, None))
    kinds = []
    for argv, after in commands:
        kind, detail = _judged(argv, path.name)
        if kind not in ("accepted", "refused"):
            return kind, detail
        if after is not None and (problem := after()) is not None:
            return problem
        kinds.append(kind)
    return ("accepted" if "accepted" in kinds else "refused"), ""


def _after_import(case: Path, out: Path, before: set[str]) -> tuple[str, str] | None:
    outside = {f for f in _files(case) - before if not f.startswith(OUT)}
    if outside:
        return "outside", f"written outside the output folder: {sorted(outside)[:3]}"
    if out.is_dir() and any(out.iterdir()):
        status, text = _main(["validate", str(out)])
        if status != 0:
            return "invalid", f"validate refuses the import's output: {text[-300:]}"
    return None


def _check(case: Path) -> tuple[str, str]:
    try:
        signal.setitimer(signal.ITIMER_PROF, CPU_SECONDS)
        try:
            return check(case)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
    except _OverBudget:
        return "hang", f"over {CPU_SECONDS:g} s of CPU"
    except MemoryError:
        return "memory", "MemoryError"
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno} {frames[-1].name}" if frames else "-"
        return "exception", f"{type(exc).__name__}: {str(exc)[:200]} at {where}"


def worker() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    signal.signal(signal.SIGPROF, _on_timer)
    sys.setrecursionlimit(10_000)
    answer: Any = sys.stdout
    for line in sys.stdin:
        case = Path(line.rstrip("\n"))
        kind, detail = _check(case)
        answer.write(json.dumps({"path": str(case), "kind": kind, "detail": detail}) + "\n")
        answer.flush()


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    worker()
