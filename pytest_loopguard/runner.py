"""Run one trace file whatever its mode: replay a recorded trace, or simulate a scenario (`mode: simulate`).

This is the one layer above both the core (`replay`) and the simulators: the CLI, the plugin and the
fixtures call it, so the core never imports the simulators and the simulators never import it.
"""

from __future__ import annotations

from typing import Any

from loopguard_simulators.loop import Simulation
from loopguard_simulators.scenario import simulate

from .model import ReplayResult, Trace
from .replay import replay

__all__ = ["Simulation", "execute", "simulate"]


def execute(trace: Trace, policy: Any = None) -> ReplayResult:
    """Replay a recorded trace, or run a scenario through the simulators.

    For a scenario the result's `trace` is the recorded trace of the simulated run (it carries the
    scenario's run expectations), so `expect.check` applies to both alike.
    """
    if trace.mode == "simulate":
        return simulate(trace, policy).result
    return replay(trace, policy)
