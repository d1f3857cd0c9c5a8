"""The tables of `loopguard eval`: policies' scores on labelled real runs side by side, and one setting swept."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..errors import PolicyError
from ..eval._labels import RunLabel
from ..eval._score import LoopScore, PolicyScore, RunScore, compaction_rows
from ..runtime._policy import Policy
from ._common import table_text

__all__ = ["Sweep", "detail_rows", "parse_sweep", "render", "summary_rows", "sweep_headers", "sweep_rows", "swept",
           "table"]

NONE: Final = "—"
_SWEEP = re.compile(r"^(?P<engine>[a-z_][a-z0-9_]*)\.(?P<setting>[a-z_][a-z0-9_]*)=(?P<values>.+)$")


@dataclass(frozen=True, slots=True)
class Sweep:
    """One setting and the values to try."""

    engine: str
    setting: str
    values: tuple[int, ...]


def parse_sweep(spec: str) -> Sweep:
    """`engine.setting=A..B` (inclusive) or `engine.setting=A,B,C`; a PolicyError naming the option otherwise."""
    m = _SWEEP.match(spec.strip())
    bad = PolicyError(f"expected engine.setting=A..B or engine.setting=A,B,C, got {spec!r}", field="--sweep")
    if m is None:
        raise bad
    text = m["values"]
    try:
        if ".." in text:
            lo, _, hi = text.partition("..")
            values = tuple(range(int(lo), int(hi) + 1))
        else:
            values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise bad from None
    if not values:
        raise PolicyError(f"the range {text!r} is empty", field="--sweep")
    return Sweep(m["engine"], m["setting"], values)


def _pct(n: int, total: int) -> str:
    return f"{n}/{total} ({100 * n / total:.1f}%)" if total else NONE


def _lag(score: PolicyScore) -> str:
    lags = score.lags
    return f"{statistics.median(lags):g} / {max(lags)}" if lags else NONE


def summary_rows(scores: Sequence[PolicyScore]) -> list[list[str]]:
    """The metric rows of the side-by-side table (one column per policy)."""
    rows: list[list[str]] = []
    if any(s.flag_loops for s in scores):
        rows.append(["flag loops caught", *(f"{s.caught}/{len(s.flag_loops)}" for s in scores)])
        rows.append(["lag, calls (median / max)", *(_lag(s) for s in scores)])
    if any(r.label is not None for s in scores for r in s.runs):
        rows.append(["false stops (runs)", *(str(len(s.false_stops)) for s in scores)])
        rows.append(["healthy runs with a verdict", *(f"{len(s.noisy)}/{len(s.healthy)}" for s in scores)])
    for outcome in ("resolved", "failed", "all"):
        if not any(outcome in s.shares for s in scores):
            continue
        for what in ("warned", "blocked", "stopped"):
            cells = []
            for s in scores:
                share = s.shares.get(outcome)
                cells.append(_pct(getattr(share, what), share.runs) if share else NONE)
            rows.append([f"{outcome} runs {what}", *cells])
    return rows


def _cell_event(first: Any, lag: int | None) -> str:
    if first is None:
        return "missed"
    where = f"+{lag}" if lag is not None else f"@{first.call}"
    return f"{first.action} {where} {first.reason}"


def _loop_cell(loop: LoopScore) -> str:
    text = _cell_event(loop.first, loop.lag)
    if loop.loop.expect == "tolerate" and loop.first is None:
        text = NONE
    return text + (" FALSE STOP" if loop.false_stop is not None else "")


def _run_cell(run: RunScore) -> str:
    if not run.events:
        return NONE
    first = run.events[0]
    text = f"{first.action} @{first.call} {first.reason}"
    if run.false_stop is not None and not any(s.false_stop is not None for s in run.loops):
        fs = run.false_stop
        text += f"; FALSE STOP {fs.action} @{fs.call} {fs.reason}"
    return text


def detail_rows(scores: Sequence[PolicyScore]) -> list[list[str]]:
    """One row per labelled loop and one per labelled run without loops; the first policy's runs lead."""
    rows: list[list[str]] = []
    for i, first in enumerate(scores[0].runs):
        label: RunLabel | None = first.label
        if label is None:
            continue
        per = [s.runs[i] for s in scores]
        head = [label.run_id, label.outcome]
        if label.healthy:
            rows.append([*head, "healthy", *(_run_cell(r) for r in per)])
        else:
            for j, loop in enumerate(label.loops):
                what = f"{loop.start}..{loop.end} {loop.shape} ({loop.expect})"
                rows.append([*head, what, *(_loop_cell(r.loops[j]) for r in per)])
            extra = [r for r in per if r.false_stop is not None and not any(s.false_stop for s in r.loops)]
            if extra:
                rows.append([*head, "whole run", *(_run_cell(r) for r in per)])
    return rows


def table(rows: list[list[str]], headers: list[str], markdown: bool) -> str:
    return table_text(rows, headers, "github" if markdown else "simple", disable_numparse=True)


def render(scores: Sequence[PolicyScore], *, markdown: bool = False) -> str:
    """The side-by-side summary, and the per-loop table when runs are labelled."""
    names = [s.policy for s in scores]
    parts = [table(summary_rows(scores), ["metric", *names], markdown)]
    details = detail_rows(scores)
    if details:
        parts.append(table(details, ["run", "outcome", "loop", *names], markdown))
    compacted = compaction_rows(scores)  # the real agent's compactions beside the policies'
    if compacted:
        parts.append(table(compacted, ["run", "log compacted at call", *(f"{n} compacts at" for n in names)],
                           markdown))
    return "\n\n".join(parts)


def _frontier(points: list[tuple[int, int]]) -> list[bool]:
    """Pareto-optimal points of (good ↑, bad ↓): no other point is at least as good on both, better on one."""
    out = []
    for g, b in points:
        out.append(not any((g2 >= g and b2 <= b) and (g2 > g or b2 < b) for g2, b2 in points))
    return out


def sweep_rows(sweep: Sweep, scores: Sequence[PolicyScore]) -> list[list[str]]:
    """One row per value: recall, false stops, noise, and the outcome shares; `*` marks the frontier."""
    labelled = any(r.label is not None for s in scores for r in s.runs)
    points = []
    for s in scores:
        if labelled:
            points.append((s.caught, len(s.false_stops)))
        else:  # no labels: failed runs stopped or blocked (good) against resolved runs stopped or blocked (bad)
            points.append((_severe(s, "failed"), _severe(s, "resolved")))
    marks = _frontier(points)
    rows = []
    for value, s, mark in zip(sweep.values, scores, marks, strict=True):
        row = [str(value)]
        if labelled:
            row += [f"{s.caught}/{len(s.flag_loops)}", _lag(s), str(len(s.false_stops)),
                    f"{len(s.noisy)}/{len(s.healthy)}"]
        for outcome in ("resolved", "failed"):
            share = s.shares.get(outcome)
            row += [_pct(share.warned, share.runs) if share else NONE,
                    _pct(_severe(s, outcome), share.runs) if share else NONE]
        rows.append([*row, "*" if mark else ""])
    return rows


def _severe(score: PolicyScore, outcome: str) -> int:
    return sum(1 for r in score.runs if r.outcome == outcome and (r.blocked or r.stopped))


def sweep_headers(sweep: Sweep, scores: Sequence[PolicyScore]) -> list[str]:
    labelled = any(r.label is not None for s in scores for r in s.runs)
    head = [f"{sweep.engine}.{sweep.setting}"]
    if labelled:
        head += ["flag loops caught", "lag (median / max)", "false stops", "healthy with a verdict"]
    return [*head, "resolved warned", "resolved blocked/stopped", "failed warned", "failed blocked/stopped",
            "frontier"]


def swept(policy: Policy, sweep: Sweep, value: int) -> Policy:
    return policy.with_overrides({sweep.engine: {sweep.setting: value}},
                                 name=f"{policy.name} {sweep.engine}.{sweep.setting}={value}")
