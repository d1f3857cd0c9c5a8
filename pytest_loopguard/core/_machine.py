"""What this process may use of the machine it runs on: its CPUs (`run -j`, whether the guard protocol polls for a
reply while the guard process works on another CPU, and the one CPU a caller may share with its guards)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final

__all__ = ["GUARD_CPU_ENV", "LOCKS_ENV", "claim_cpu", "current_cpu", "release_cpu", "set_cpu", "usable_cpus"]

# `same`: a thread and the guard processes it starts share one CPU (engines/_pipe.py); the `loopguard` command
# sets it for its own processes unless it is set already
GUARD_CPU_ENV: Final = "LOOPGUARD_GUARD_CPU"
LOCKS_ENV: Final = "LOOPGUARD_CPU_LOCKS"  # where the claims on CPUs are kept (`claim_cpu`)
_CLAIMS: dict[int, int] = {}  # this process's claims: cpu -> the descriptor holding its lock


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    count: Callable[[], int | None] | None = getattr(os, "process_cpu_count", None)  # Python 3.13+
    if count is not None:
        return count() or 1
    if hasattr(os, "sched_getaffinity"):  # Linux; not macOS or Windows
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def claim_cpu() -> int | None:
    """A CPU of this process's that no other process on the machine has claimed this way, claimed until this
    process ends (an exclusive lock on the CPU's file in `LOOPGUARD_CPU_LOCKS`, by default a folder of the user's
    in the temporary folder): the one the calling thread runs on now if it is free, else the first free one. So
    processes that work at the same time (`run -j N`'s workers, a Dask cluster's, two commands) never share one.
    None when every CPU is claimed, or where CPUs cannot be chosen (not Linux)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    import fcntl
    import tempfile

    cpus = sorted(os.sched_getaffinity(0))
    now = current_cpu()
    order = ([now] if now in cpus else []) + [c for c in cpus if c != now]
    folder = os.environ.get(LOCKS_ENV) or os.path.join(tempfile.gettempdir(), f"loopguard-cpus-{os.getuid()}")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return None
    for cpu in order:
        try:
            fd = os.open(os.path.join(folder, f"{cpu}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process holds it
            os.close(fd)
            continue
        _CLAIMS[cpu] = fd  # open as long as the claim lasts (not inheritable: a program it starts does not hold it)
        return cpu
    return None


def release_cpu(cpu: int) -> None:
    """Give up this process's claim on `cpu` (no claim: nothing to do)."""
    fd = _CLAIMS.pop(cpu, None)
    if fd is not None:
        os.close(fd)


def current_cpu() -> int | None:
    """The CPU the calling thread is running on (Linux's /proc), or None."""
    try:
        with open("/proc/thread-self/stat", "rb") as f:
            stat = f.read()
        # after "pid (name) ", whose name may hold spaces and parentheses: field 39, the processor, is the 37th
        return int(stat[stat.rindex(b")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def set_cpu(pid: int, cpu: int) -> bool:
    """Let `pid` (0: the calling thread) run on `cpu` alone; whether that was done."""
    try:
        os.sched_setaffinity(pid, {cpu})
    except (OSError, AttributeError):  # gone, not permitted, or a platform without affinity
        return False
    return True
