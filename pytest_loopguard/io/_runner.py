"""Run one trace file whatever its mode: replay a recorded trace, or simulate a scenario (`mode: simulate`).

This is the one layer above both the core (`replay`) and the simulators: the CLI, the plugin and the
fixtures call it, so the core never imports the simulators and the simulators never import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core._model import ReplayResult, Trace
from ..errors import NotATraceError, ScenarioError, TraceError
from ..runtime._replay import replay
from . import _format as traceio

if TYPE_CHECKING:
    from loopguard_simulators.loop import Simulation

__all__ = ["Simulation", "check_scenario", "execute", "load_runnable", "simulate", "validate_runnable"]

# The simulators (and what they import: faker for fake files and pages) load on the first scenario, not
# with this module: the pytest plugin imports it, and a corpus of recorded traces never needs them.


def __getattr__(name: str) -> Any:
    if name == "Simulation":
        from loopguard_simulators.loop import Simulation

        return Simulation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def simulate(trace: Trace, policy: Any = None) -> Simulation:
    """Run the scenario `trace` (under `policy`, default: the scenario's own) and record it."""
    from loopguard_simulators.scenario import simulate as run

    return run(trace, policy)


def execute(trace: Trace, policy: Any = None) -> ReplayResult:
    """Replay a recorded trace, or run a scenario through the simulators.

    For a scenario the result's `trace` is the recorded trace of the simulated run (it carries the
    scenario's run expectations), so `expect.check` applies to both alike.
    """
    if trace.mode == "simulate":
        return simulate(trace, policy).result
    return replay(trace, policy)


def check_scenario(trace: Trace) -> None:
    """Raise ScenarioError (naming the file and field) when `trace` is a malformed scenario.

    A scenario's environment and agent are only read by the simulators, so the loader cannot judge them;
    building the agent loop (nothing runs) does, and makes a bad scenario bad input like a malformed trace.
    """
    if trace.mode != "simulate":
        return
    from loopguard_simulators.scenario import build

    try:
        build(trace)
    except ScenarioError as exc:
        raise exc.located(file=trace.path) from None


def load_runnable(path: str | Path) -> list[Trace]:
    """The file's traces, each ready to run: `traceio.load_file`, with every scenario in the file checked."""
    traces = traceio.load_file(path)
    for trace in traces:
        check_scenario(trace)
    return traces


def validate_runnable(
    paths: Iterable[str | Path], *, skipped: list[NotATraceError] | None = None
) -> tuple[list[Trace], list[TraceError]]:
    """`traceio.validate_paths` keeping only traces ready to run: a malformed scenario is an error, not a trace."""
    loaded, errors = traceio.validate_paths(paths, skipped=skipped)
    traces: list[Trace] = []
    for trace in loaded:
        try:
            check_scenario(trace)
        except ScenarioError as exc:
            errors.append(exc)
            continue
        traces.append(trace)
    return traces, errors
