"""The import/eval/scan fuzz worker: each case folder's input through `loopguard import` (+ `validate` on
what it wrote), `loopguard eval` and `loopguard scan` (named as a path, with `--save` (+ `validate`) and
`--report`; then found in every agent's place of a fake home), in this process, under the harness's memory
limit and per-case CPU budget.

Speaks the harness's protocol (tests/fuzz/harness.py): one case folder per line on stdin (the input's own
name may hold a newline, the folder's never does), one JSON line per case on stdout. Outcomes: `accepted`
(every command exited 0 or 1), `refused` (exit 2 with our one-line error), and the defects: `cli` (a
traceback, exit 3 or another status, an error over several lines or not naming the input), `outside` (a
file written outside the output folders), `invalid` (`validate` refuses a trace import or scan wrote),
`exception`, `hang`, `memory`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import shutil
import signal
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import CPU_SECONDS, MEMORY_BYTES, _on_timer, _OverBudget

# what our error lines say of our own bugs (with exit 3, in import, eval and scan alike)
BUG_MARKS = ("internal error",)
DEFECTS = ("cli", "outside", "invalid", "exception", "hang", "memory", "crash")
OUT = "out"  # import's output folder
SCAN_OUT = "scan-out"  # scan's --save folder and --report file
SCAN_HOME = "scan-home"  # the fake home scan finds the input in


def _main(argv: list[str]) -> tuple[int, str]:
    from pytest_loopguard.cli._main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = main(argv)
    return status, err.getvalue()


def _judged(argv: list[str], *names: str) -> tuple[str, str]:
    """(kind, detail) of one command on the input named by one of `names` (as our errors show it: on one
    line); every line on stderr must be ours, and an exit 2 must name the input in every error line."""
    status, text = _main(argv)
    lines = text.splitlines()
    shown = [name.replace("\n", "\\n").replace("\t", "\\t") for name in names]
    if "Traceback" in text or status not in (0, 1, 2):
        return "cli", f"{argv[0]}: exit {status}: {text[-300:]}"
    if any(not line.startswith("loopguard:") for line in lines):
        return "cli", f"{argv[0]}: a stderr line that is not our error: {text[:300]!r}"
    # an importer's exception: one line and the other logs go on, but exit 3 at the end, a bug
    if any(mark in text for mark in BUG_MARKS):
        return "cli", f"{argv[0]}: exit {status}: {text[-300:]}"
    if status == 2 and (not lines or not all(any(n in line for n in shown) or "<redacted:" in line
                                             for line in lines)):
        return "cli", f"{argv[0]}: exit 2 without an error line naming {shown[0]!r}: {text[:300]!r}"
    return ("refused" if status == 2 else "accepted"), ""


REPORTS = (".json", ".md", ".html")


def scan_command(path: Path) -> list[str] | None:
    """`loopguard scan` on the input named as a path, saving the sessions with loops and writing a report
    (its form drawn from the case folder's name) into the case's scan folder."""
    folder = path.parent / SCAN_OUT
    report = folder / f"scan{REPORTS[sum(map(ord, path.parent.name)) % len(REPORTS)]}"
    return ["scan", str(path), "--save", str(folder / "saved"), "--report", str(report)]


# the agents' own places under a home folder (scan/_discover.py): the input is laid out in each, so every
# agent's importer meets it as the log it would find there; aider's is the file AIDER_CHAT_HISTORY_FILE names
def _home_places(home: Path, path: Path) -> list[Path]:
    stem = path.name.split(".", 1)[0] or "session"
    return [home / ".claude" / "projects" / "proj" / f"{stem}.jsonl",
            home / ".codex" / "sessions" / "2026" / "01" / "02" / "rollout-2026-01-02T03-04-05.jsonl",
            home / ".gemini" / "tmp" / "abc" / "chats" / "session-2026-01-02T03-04-abcd.json",
            home / ".cline" / "data" / "tasks" / "1700000000000" / "api_conversation_history.json",
            home / "project" / ".aider.chat.history.md"]


_PLACE_SETTINGS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_CONFIG_HOME", "APPDATA",
                   "USERPROFILE", "AIDER_CHAT_HISTORY_FILE")


@contextlib.contextmanager
def _fake_home(case: Path, path: Path) -> Iterator[list[Path]]:
    """The input laid out in every agent's place under a home folder inside the case, `HOME` pointing there."""
    home = case / SCAN_HOME
    places = _home_places(home, path)
    for place in places:
        place.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file():
            shutil.copyfile(path, place)
    saved = {name: os.environ.get(name) for name in ("HOME", *_PLACE_SETTINGS)}
    for name in _PLACE_SETTINGS:
        os.environ.pop(name, None)
    os.environ["HOME"] = str(home)
    os.environ["AIDER_CHAT_HISTORY_FILE"] = str(places[-1])
    try:
        yield places
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def check(case: Path) -> tuple[str, str]:
    """Run the case folder's one input through import (+ validate), eval and scan (named, and found in a
    fake home's agent places)."""
    inputs = [p for p in case.iterdir() if p.name not in (OUT, SCAN_OUT, SCAN_HOME)]
    if len(inputs) != 1:
        return "exception", f"expected one input in {case}, found {len(inputs)}"
    path = inputs[0]
    out = case / OUT
    before = _files(case)
    commands: list[tuple[list[str], Callable[[], tuple[str, str] | None] | None]] = [
        (["import", str(path), "-o", str(out)], lambda: _after(case, before, out)),
        (["eval", str(path)], None),
    ]
    if (scan := scan_command(path)) is not None:
        commands.append((scan, lambda: _after(case, before, case / SCAN_OUT / "saved")))
    kinds = []
    for argv, after in commands:
        kind, detail = _judged(argv, path.name)
        if kind not in ("accepted", "refused"):
            return kind, detail
        if after is not None and (problem := after()) is not None:
            return problem
        kinds.append(kind)
    if scan is not None:
        with _fake_home(case, path) as places:
            before = _files(case)
            kind, detail = _judged(["scan"], *(p.name for p in places))
            if kind not in ("accepted", "refused"):
                return kind, f"in a fake home: {detail}"
            if (problem := _after(case, before, None)) is not None:
                return problem
            kinds.append(kind)
    return ("accepted" if "accepted" in kinds else "refused"), ""


def _after(case: Path, before: set[str], saved: Path | None) -> tuple[str, str] | None:
    """Nothing written outside the output folders; what was saved there (import's traces, scan's sessions
    with loops) passes `validate`."""
    outside = {f for f in _files(case) - before if not f.startswith((OUT, SCAN_OUT))}
    if outside:
        return "outside", f"written outside the output folder: {sorted(outside)[:3]}"
    if saved is not None and saved.is_dir() and any(saved.iterdir()):
        status, text = _main(["validate", str(saved)])
        if status != 0:
            return "invalid", f"validate refuses a trace written to {saved.name}: {text[-300:]}"
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
