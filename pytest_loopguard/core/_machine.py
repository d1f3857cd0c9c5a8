"""What this process may use of the machine it runs on: its CPUs (`run -j`, whether the guard protocol polls for a
reply while the guard process works on another CPU, and the one CPU a caller may share with its guards)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final

__all__ = ["GUARD_CPU_ENV", "one_cpu", "set_cpu", "usable_cpus"]

# `same`: a thread and the guard processes it starts share one CPU (engines/_pipe.py); the `loopguard` command
# sets it for its own processes unless it is set already
GUARD_CPU_ENV: Final = "LOOPGUARD_GUARD_CPU"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    count: Callable[[], int | None] | None = getattr(os, "process_cpu_count", None)  # Python 3.13+
    if count is not None:
        return count() or 1
    if hasattr(os, "sched_getaffinity"):  # Linux; not macOS or Windows
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def one_cpu() -> int | None:
    """One of the CPUs this process may use, picked by its process id, so that processes started one after another
    (the workers of `run -j N`) spread over them; None where a CPU cannot be chosen (not Linux)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[os.getpid() % len(cpus)] if cpus else None


def set_cpu(pid: int, cpu: int) -> bool:
    """Let `pid` (0: the calling thread) run on `cpu` alone; whether that was done."""
    try:
        os.sched_setaffinity(pid, {cpu})
    except (OSError, AttributeError):  # gone, not permitted, or a platform without affinity
        return False
    return True
