"""`loopguard bench`'s guard-protocol rows: events through a pipe to a guard process, per event actually sent.

The same synthetic traces as the replay rows are replayed under a policy whose only engine is a guard process;
the rows divide by the requests that went over the pipe (each one request and one reply), not by the traces'
steps: with a trivial guard (it answers every request with no verdict) the row is the protocol's own cost
(our side's encoding, the pipe, the guard's JSON), and with `loopguard serve --policy default` it is what an
agent in another language pays for our Guard. Each twice: with the guard on whichever CPU the system gives it
(what a Python program that embeds the Guard gets), and sharing the replaying thread's CPU
(`LOOPGUARD_GUARD_CPU=same`, what the `loopguard` command does).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from typing import Final

from ..core._machine import GUARD_CPU_ENV
from ..core._model import Trace
from ..engines import _pipe
from ..engines.external import Settings as ExternalSettings
from ..runtime._policy import resolve_policy
from ..runtime._replay import replay
from ._rows import SuiteRow

__all__ = ["TRIVIAL_GUARD", "pipe_rows"]

# a guard that answers every request with no verdict: the least a guard can do
TRIVIAL_GUARD: Final = (
    "import sys\n"
    "w = sys.stdout.write\n"
    "for line in sys.stdin:\n"
    "    w('{\"protocol\":1,\"guard\":{\"name\":\"trivial\"}}\\n' if '\"hello\"' in line else '{\"verdicts\":[]}\\n')\n"
    "    sys.stdout.flush()\n"
)


def _timed(traces: Sequence[Trace], command: Sequence[str], repeat: int, cpu: str) -> tuple[list[float], int]:
    """Seconds per repeat of replaying `traces` through the guard started with `LOOPGUARD_GUARD_CPU=cpu`, and
    the requests one repeat sends."""
    _pipe.shutdown_all()  # a process started before runs where it was started
    _pipe.SHARED.reset()
    os.environ[GUARD_CPU_ENV] = cpu
    settings = ExternalSettings(command=tuple(command), timeout_s=30.0, instead=True)
    policy = dataclasses.replace(resolve_policy("default"), engines={"external": settings})
    replay(traces[0], policy)  # the process starts (and answers hello) outside the timing
    seconds: list[float] = []
    sent = 0
    for _ in range(repeat):
        before = _pipe.REQUESTS.count
        start = time.perf_counter()
        for trace in traces:
            replay(trace, policy)
        seconds.append(time.perf_counter() - start)
        sent = _pipe.REQUESTS.count - before
    return seconds, sent


def pipe_rows(traces: Sequence[Trace], repeat: int) -> list[SuiteRow]:
    rows: list[SuiteRow] = []
    was = os.environ.get(GUARD_CPU_ENV)
    try:
        for item, command, goal in (
            ("guard protocol, trivial guard (python)", [sys.executable, "-c", TRIVIAL_GUARD], "≥ 20,000 events/s"),
            ("guard protocol, loopguard serve --policy default",
             [sys.executable, "-m", "pytest_loopguard.cli", "serve", "--policy", "default"], "—"),
        ):
            for cpu, where in (("any", "any CPU"), ("same", "the caller's CPU")):
                seconds, sent = _timed(traces, command, repeat, cpu)
                per = [s / sent * 1e6 for s in seconds]
                rate = sent / min(seconds)
                met = rate >= 20_000 if goal != "—" else None
                rows.append(SuiteRow(f"{item}, on {where}", "event", sent, min(per), sorted(per)[len(per) // 2],
                                     goal=goal, met=met, extra={"events_per_s": round(rate), "requests": sent,
                                                                "guard_cpu": cpu}))
    finally:
        _pipe.shutdown_all()
        _pipe.SHARED.reset()
        if was is None:
            os.environ.pop(GUARD_CPU_ENV, None)
        else:
            os.environ[GUARD_CPU_ENV] = was
    return rows
