"""Run `loopguard import`, `eval` and `validate` on hostile input in a bounded child process, and judge the end.

A command runs as `python -m pytest_loopguard.cli ...` with an address-space limit of 1 GiB and a CPU limit
of 10 s (a wall-clock bound on top catches a process blocked without using CPU: a FIFO). `judge` says what
is wrong with how it ended, or nothing: exit 0 (or 1, an expectation failing), or exit 2 with every stderr
line our one-line `loopguard:` error; never a traceback, a signal or exit 3. Shared by the regression suite
over ../shared/fuzz-repros/import/ and the import/eval fuzz profile.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MEMORY_BYTES = 1 << 30
CPU_SECONDS = 10
WALL_SECONDS = 60.0  # the machine is shared: CPU time is the bound, wall time only catches a blocked process


@dataclass(frozen=True)
class Ended:
    argv: tuple[str, ...]
    status: int | None  # None: killed after WALL_SECONDS (blocked)
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return f"loopguard {' '.join(self.argv)} -> {self.status}: {self.stderr[-400:]!r}"


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1))


def loopguard(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None) -> Ended:
    """`loopguard ARGV` in `cwd` under the memory and CPU limits."""
    args = tuple(str(a) for a in argv)
    environment = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "0", **(env or {})}
    try:
        done = subprocess.run([sys.executable, "-m", "pytest_loopguard.cli", *args], cwd=cwd, env=environment,
                              capture_output=True, timeout=WALL_SECONDS, preexec_fn=_limits, check=False)
    except subprocess.TimeoutExpired as exc:
        return Ended(args, None, _text(exc.stdout), _text(exc.stderr))
    return Ended(args, done.returncode, _text(done.stdout), _text(done.stderr))


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "backslashreplace")


def judge(ended: Ended) -> str | None:
    """What is wrong with how the command ended (None: accepted, or refused in our one-line form)."""
    if ended.status is None:
        return f"hang: no end in {WALL_SECONDS:g} s"
    if ended.status < 0 or ended.status in (-9, 137, 152):
        return f"killed by signal {-ended.status} (memory or CPU limit)"
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
