"""What this process may use of the machine it runs on: its CPUs (`run -j`, and whether the guard protocol polls
for a reply while the guard process works on another CPU)."""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["usable_cpus"]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    count: Callable[[], int | None] | None = getattr(os, "process_cpu_count", None)  # Python 3.13+
    if count is not None:
        return count() or 1
    if hasattr(os, "sched_getaffinity"):  # Linux; not macOS or Windows
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
