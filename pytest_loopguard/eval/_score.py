"""Score policies against labelled real runs: loops caught and how late, false stops, noise, outcome shares.

A run's verdicts are placed on the labels' call index (tool steps and rejected turns; a verdict on any
other step counts at the next call). For each policy:
- a loop labelled `flag` is caught when a warn, block or stop lands inside its range; its lag is the
  number of calls from the loop's start to the first such verdict;
- a false stop is a stop, forced done or block on a resolved run, inside a `tolerate` loop, or a stop
  (or forced done) inside a `recovered` loop of a run that did not fail;
- noise is any verdict on a run labelled healthy;
- runs with a known outcome (labels, or a tarball's `resolved.json`) give the share of resolved and of
  failed runs that got a warning, a block, a stop.
Where the log holds the real agent's own compactions (`compacted` steps), each run's score keeps their call
positions next to the calls where the policy answered `compact` or `compact_retry` (`compaction_rows`).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, final

from ..core._model import ReplayResult, plain
from ..io._runner import execute
from ..runtime._policy import Policy
from ._labels import Labels, LoopLabel, RunLabel
from ._runs import CALL_KINDS, ScoredRun, call_count

__all__ = [
    "COMPACTING",
    "FORCE_DONE",
    "Event",
    "LoopScore",
    "PolicyScore",
    "Replayed",
    "RunScore",
    "compaction_rows",
    "match_labels",
    "replay_runs",
    "replayed",
    "score_policy",
    "score_run",
    "scored",
]

FORCE_DONE: Final = "failure_tracker.force_done"
FLAGGING: Final = frozenset({"warn", "block", "stop", "fail"})
COMPACTING: Final = frozenset({"compact", "compact_retry"})


@final
@dataclass(frozen=True, slots=True)
class Event:
    """A verdict that is not `allow`, placed at call `call` (the labels' index)."""

    call: int
    step: int
    action: str  # warn | block | stop | fail (the step's combined action, its plain name)
    reason: str

    @property
    def stops(self) -> bool:
        """Ends the run, or forces it to finish (a forced done is a stop that lets the agent report)."""
        return self.action in ("stop", "fail") or self.reason == FORCE_DONE

    @property
    def severe(self) -> bool:
        """What a resolved run must never get: a stop, a forced done or a block."""
        return self.stops or self.action == "block"


@final
@dataclass(frozen=True, slots=True)
class LoopScore:
    """How a policy did on one labelled loop."""

    loop: LoopLabel
    first: Event | None  # the first flagging verdict inside the loop
    false_stop: Event | None  # the verdict that made it a false stop

    @property
    def caught(self) -> bool:
        return self.first is not None

    @property
    def lag(self) -> int | None:
        return None if self.first is None else self.first.call - self.loop.start


@final
@dataclass(frozen=True, slots=True)
class RunScore:
    """How a policy did on one run."""

    run: ScoredRun
    label: RunLabel | None
    outcome: str
    events: tuple[Event, ...]
    loops: tuple[LoopScore, ...] = ()
    false_stop: Event | None = None  # the first false stop (whole run or a loop)
    # where the real agent compacted (its log's `compacted` steps) and where the policy compacted, as calls
    compacted: tuple[int, ...] = ()
    compacts: tuple[int, ...] = ()

    @property
    def warned(self) -> bool:
        return any(e.action == "warn" and e.reason != FORCE_DONE for e in self.events)

    @property
    def blocked(self) -> bool:
        return any(e.action == "block" for e in self.events)

    @property
    def stopped(self) -> bool:
        return any(e.stops for e in self.events)

    @property
    def noisy(self) -> bool:
        return self.label is not None and self.label.healthy and bool(self.events)

    @property
    def run_id(self) -> str:
        return self.label.run_id if self.label is not None else self.run.run_id

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "outcome": self.outcome,
            "healthy": self.label.healthy if self.label is not None else None,
            "warned": self.warned,
            "blocked": self.blocked,
            "stopped": self.stopped,
            "noisy": self.noisy,
            "false_stop": None if self.false_stop is None else _event_dict(self.false_stop),
            "first_verdict": None if not self.events else _event_dict(self.events[0]),
            "loops": [
                {"from": s.loop.start, "to": s.loop.end, "shape": s.loop.shape, "expect": s.loop.expect,
                 "recovered": s.loop.recovered, "caught": s.caught, "lag": s.lag,
                 "first": None if s.first is None else _event_dict(s.first),
                 "false_stop": None if s.false_stop is None else _event_dict(s.false_stop)}
                for s in self.loops
            ],
            **({"compactions": {"log": list(self.compacted), "policy": list(self.compacts)}} if self.compacted else {}),
        }


def _event_dict(e: Event) -> dict[str, Any]:
    return {"call": e.call, "step": e.step, "action": e.action, "reason": e.reason}


@final
@dataclass(frozen=True, slots=True)
class Share:
    """Of `runs` runs with one outcome, how many got a warning, a block, a stop."""

    runs: int = 0
    warned: int = 0
    blocked: int = 0
    stopped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "warned": self.warned, "blocked": self.blocked, "stopped": self.stopped}


@final
@dataclass(frozen=True, slots=True)
class PolicyScore:
    """One policy over every run: the figures `loopguard eval` prints side by side."""

    policy: str
    runs: tuple[RunScore, ...]
    shares: Mapping[str, Share] = field(default_factory=dict)  # by outcome: resolved, failed, and all

    @property
    def flag_loops(self) -> list[LoopScore]:
        return [s for r in self.runs for s in r.loops if s.loop.expect == "flag"]

    @property
    def caught(self) -> int:
        return sum(1 for s in self.flag_loops if s.caught)

    @property
    def lags(self) -> list[int]:
        return [s.lag for s in self.flag_loops if s.lag is not None]

    @property
    def false_stops(self) -> list[RunScore]:
        return [r for r in self.runs if r.false_stop is not None]

    @property
    def healthy(self) -> list[RunScore]:
        return [r for r in self.runs if r.label is not None and r.label.healthy]

    @property
    def noisy(self) -> list[RunScore]:
        return [r for r in self.runs if r.noisy]

    def to_dict(self) -> dict[str, Any]:
        lags = self.lags
        return {
            "policy": self.policy,
            "flag_loops": len(self.flag_loops),
            "caught": self.caught,
            "lag_median": statistics.median(lags) if lags else None,
            "lag_max": max(lags) if lags else None,
            "false_stops": len(self.false_stops),
            "healthy_runs": len(self.healthy),
            "noisy_runs": len(self.noisy),
            "outcomes": {k: v.to_dict() for k, v in self.shares.items()},
            "runs": [r.to_dict() for r in self.runs],
        }


def _call_at(result: ReplayResult) -> list[int]:
    """Each step's position on the labels' call index (a non-call step counts at the next call)."""
    call_at: list[int] = []
    k = 0
    for step in result.trace.steps:
        call_at.append(k)
        if step.kind in CALL_KINDS:
            k += 1
    return call_at


def compactions(result: ReplayResult) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The calls where the real agent compacted (the log's `compacted` steps) and those where the policy
    answered `compact` or `compact_retry`, on the labels' call index."""
    call_at = _call_at(result)
    log = tuple(call_at[i] for i, step in enumerate(result.trace.steps) if step.kind == "compacted")
    policy = tuple(call_at[i] for i, s in enumerate(result.steps)
                   if s.action in COMPACTING or any(v.action in COMPACTING for v in s.verdicts))
    return log, policy


def compaction_rows(scores: Sequence[PolicyScore], limit: int = 8) -> list[list[str]]:
    """One row per run whose log compacted: the calls where it did, then per policy the calls where the policy
    compacted (at most `limit` each); none when no run holds a compaction."""
    if not scores:
        return []

    def cell(calls: tuple[int, ...]) -> str:
        text = ", ".join(map(str, calls[:limit]))
        return (text + f" … (+{len(calls) - limit})" if len(calls) > limit else text) or "—"

    rows = []
    for i, run in enumerate(scores[0].runs):
        if run.compacted:
            rows.append([run.run_id, cell(run.compacted), *(cell(s.runs[i].compacts) for s in scores)])
    return rows


def events(result: ReplayResult) -> tuple[Event, ...]:
    """The non-allow verdicts of a replay on the labels' call index."""
    call_at = _call_at(result)
    out = []
    for pos, s in enumerate(result.steps):
        if s.action in FLAGGING:
            reason = next((v.reason for v in s.verdicts if v.action == s.action), "")
            if any(v.reason == FORCE_DONE for v in s.verdicts):  # a forced done must count as a stop
                reason = FORCE_DONE
            out.append(Event(call_at[pos], s.index, plain(s.action), reason))
    return tuple(out)


def _loop_score(loop: LoopLabel, evs: tuple[Event, ...], outcome: str) -> LoopScore:
    inside = [e for e in evs if loop.start <= e.call <= loop.end]
    first = inside[0] if inside else None
    false_stop = None
    if loop.expect == "tolerate":
        false_stop = next((e for e in inside if e.severe), None)
    if false_stop is None and loop.recovered and outcome != "failed":
        false_stop = next((e for e in inside if e.stops), None)
    return LoopScore(loop, first, false_stop)


@final
@dataclass(frozen=True, slots=True)
class Replayed:
    """What scoring reads of one replay: its verdicts as events, and the calls where the log and the policy
    compacted (none when the log holds no compaction). Small: what a worker sends back instead of the result."""

    events: tuple[Event, ...]
    compacted: tuple[int, ...] = ()
    compacts: tuple[int, ...] = ()


def replayed(result: ReplayResult) -> Replayed:
    if any(s.kind == "compacted" for s in result.trace.steps):
        return Replayed(events(result), *compactions(result))
    return Replayed(events(result))


def replay_runs(runs: Sequence[ScoredRun], policies: Sequence[Policy]) -> list[list[Replayed]]:
    """Every run replayed under each policy, per policy: a batch of `loopguard eval -j N` or `--backend dask`."""
    return [[replayed(execute(run.trace, policy)) for run in runs] for policy in policies]  # scenarios run too


def score_run(run: ScoredRun, label: RunLabel | None, result: ReplayResult) -> RunScore:
    """Score one replay against its label (or only its outcome when unlabelled)."""
    return scored(run, label, replayed(result))


def scored(run: ScoredRun, label: RunLabel | None, replay: Replayed) -> RunScore:
    """Score one run's replay (as `replayed` gives it) against its label, or only its outcome when unlabelled."""
    evs = replay.events
    outcome = label.outcome if label is not None else run.outcome
    loops = tuple(_loop_score(loop, evs, outcome) for loop in (label.loops if label is not None else ()))
    false_stop = next((e for e in evs if e.severe), None) if outcome == "resolved" else None
    if false_stop is None:
        false_stop = next((s.false_stop for s in loops if s.false_stop is not None), None)
    return RunScore(run, label, outcome, evs, loops, false_stop, replay.compacted, replay.compacts)


def match_labels(labels: Labels, runs: Sequence[ScoredRun], *,
                 absent: list[RunLabel] | None = None) -> dict[int, RunLabel]:
    """The label of each labelled run (by position in `runs`).

    A label finds its run by the file it names (relative to the labels' base), else — for a trace imported
    from that file — by the trace's `source.origin`, so labels of raw logs score the traces made of them. A
    label whose run is not among `runs` is appended to `absent` when given (the runs given are scored, and
    the caller says which labelled runs were not), else it is an error. Raises `LabelsError` naming the
    entry for a missing run, a file holding several runs without a `row`, or a call count that differs.
    """
    base = labels.base.absolute()  # not resolve(): a folder of symlinks to the corpus names the links
    by_key: dict[tuple[str, int], int] = {}
    rows: dict[str, int] = {}
    for i, run in enumerate(runs):
        if run.member is not None:
            continue
        try:
            rel = Path(os.path.normpath(run.file.absolute())).relative_to(os.path.normpath(base)).as_posix()
        except ValueError:
            continue
        by_key[(rel, run.row)] = i
        rows[rel] = run.rows
    out: dict[int, RunLabel] = {}
    for label in labels.runs:
        if label.file in rows:
            if label.row is None and rows[label.file] > 1:
                raise labels.error(label, f"the file holds {rows[label.file]} runs; name one with `row`", "row")
            row = label.row or 0
            if row >= rows[label.file]:
                raise labels.error(label, f"no row {row}: the file holds {rows[label.file]} run(s)", "row")
            i = by_key[(label.file, row)]
        else:
            imported = _imported_from(label, runs, set(by_key.values()) | set(out))
            if imported is None:
                if absent is None:
                    raise labels.error(label, "no such run among the paths given (the file was not read)", "file")
                absent.append(label)
                continue
            i = imported
        n = call_count(runs[i].trace)
        if n != label.calls:
            raise labels.error(label, f"the labels say {label.calls} calls, the run has {n}", "calls")
        out[i] = label
    return out


def _imported_from(label: RunLabel, runs: Sequence[ScoredRun], taken: set[int]) -> int | None:
    """The run imported from the log `label` names: its `source.origin` is that file (the path as the import
    was given it: the label's path, a path ending in it, or its last parts) and its steps' `source.row` the
    label's row. None when no run, or more than one, fits."""
    wanted = label.file.split("/")
    found = []
    for i, run in enumerate(runs):
        origin = run.trace.source.get("origin")
        if i in taken or not isinstance(origin, str) or not origin:
            continue
        parts = [p for p in Path(origin).as_posix().split("/") if p not in ("", ".")]
        if not parts or not (parts[-len(wanted):] == wanted or wanted[-len(parts):] == parts):
            continue
        row = next((s.source.row for s in run.trace.steps if s.source is not None and s.source.row is not None), 0)
        if row == (label.row or 0):
            found.append(i)
    return found[0] if len(found) == 1 else None


def score_policy(policy: Policy, runs: Sequence[ScoredRun], labelled: Mapping[int, RunLabel], *,
                 name: str | None = None, replays: Sequence[Replayed] | None = None) -> PolicyScore:
    """Replay every run under `policy` and score it; `replays`: the runs' replays under it, made elsewhere
    (`replay_runs` on other processes)."""
    if replays is None:
        scores = [score_run(run, labelled.get(i), execute(run.trace, policy))  # scenarios run too
                  for i, run in enumerate(runs)]
    else:
        scores = [scored(run, labelled.get(i), r) for i, (run, r) in enumerate(zip(runs, replays, strict=True))]
    shares: dict[str, Share] = {}
    for outcome in ("resolved", "failed", "all"):
        group = [s for s in scores if outcome in (s.outcome, "all")]
        if group:
            shares[outcome] = Share(len(group), sum(s.warned for s in group), sum(s.blocked for s in group),
                                    sum(s.stopped for s in group))
    return PolicyScore(name or policy.name, tuple(scores), shares)
