"""What the external-guard tests share: the guard scripts' command lines, policies naming them, a process's end."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

GUARDS = Path(__file__).resolve().parent / "guards"
REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "traces"
HOSTILE = GUARDS / "hostile.py"
COUNTING = GUARDS / "counting_guard.py"
# `loopguard serve --policy default` as an external guard: our own Guard behind the pipe
SERVE_DEFAULT = [sys.executable, "-m", "pytest_loopguard.cli", "serve", "--policy", "default"]


def hostile(mode: str, *args: str | Path) -> list[str]:
    """The hostile guard's command (`-I -S`: it starts in tens of milliseconds)."""
    return [sys.executable, "-I", "-S", str(HOSTILE), mode, *(str(a) for a in args)]


def counting(hellos: Path, policy: str = "default") -> list[str]:
    """Our Guard behind the pipe, appending its process id to `hellos` per hello."""
    return [sys.executable, str(COUNTING), str(hellos), policy]


def external(command: Sequence[str], *, timeout_s: float = 5.0, start_timeout_s: float | None = None,
             extends: str = "default") -> dict[str, Any]:
    """A policy whose verdicts are the guard process's alone, over `extends`' tool table. The limits are long
    unless a test is about them (a loaded machine's slow start or reply fails no test); the guard's start (the
    reply to hello) has a limit of its own, 10 s by default."""
    settings = {"command": list(command), "timeout_s": timeout_s, "instead": True}
    if start_timeout_s is not None:
        settings["start_timeout_s"] = start_timeout_s
    return {"extends": extends, "external": settings}


def flow(policy: dict[str, Any]) -> str:
    """`policy` as an inline YAML mapping for `--policy` / `--loopguard-policy` (JSON is flow YAML)."""
    import json

    return json.dumps(policy)


def pids(path: Path) -> list[int]:
    """The process ids a guard wrote to `path`, one a line (none when it has not written it yet)."""
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        return []
    return [int(line) for line in text.split()]


def is_gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie no one has reaped yet has ended too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def assert_gone(pid: int, deadline_s: float = 10.0) -> None:
    """Process `pid` ends within `deadline_s`; one that does not is killed (no test leaves one behind) and fails."""
    try:
        wait_for(lambda: is_gone(pid), f"guard process {pid} to end", deadline_s)
    except AssertionError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        raise


def wait_for(condition: Callable[[], Any], what: str, deadline_s: float = 20.0) -> Any:
    """Poll `condition` until it is true (its value), failing after `deadline_s`: a bound, not a delay."""
    end = time.monotonic() + deadline_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {deadline_s:g} s waiting for {what}")
        time.sleep(0.01)


def loopguard(*args: str | Path, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The `loopguard` command in a process of its own."""
    return subprocess.run([sys.executable, "-m", "pytest_loopguard.cli", *(str(a) for a in args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)
