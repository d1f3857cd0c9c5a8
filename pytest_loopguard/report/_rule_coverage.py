"""Rule coverage: for every reason code of the engines the traces ran under, how many traces exercised it.

Each replayed trace contributes a report entry with its policy's engines and the reason codes its verdicts
carried (`coverage_fields`); `rule_coverage` merges any number of entries (from one process or from every
xdist worker), so the table is the same however the run was split.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, final

from ..core._model import ReplayResult
from ..engines import ENGINE_ORDER, registry
from ._console import fit_table

__all__ = ["CoverageRow", "RuleCoverage", "coverage_fields", "coverage_table", "declared_reasons", "rule_coverage"]


def declared_reasons(engine: str) -> tuple[str, ...]:
    """The reason codes an engine declares (`Engine.REASONS`); none for an engine this process does not know."""
    cls = registry().get(engine)
    return tuple(cls.REASONS) if cls is not None else ()


def coverage_fields(engines: Iterable[str], result: ReplayResult) -> dict[str, Any]:
    """A report entry's coverage data: the policy's engines and how many verdicts carried each reason code."""
    reasons: dict[str, int] = {}
    for step in result.steps:
        for verdict in step.verdicts:
            reasons[verdict.reason] = reasons.get(verdict.reason, 0) + 1
    return {"engines": list(engines), "reasons": dict(sorted(reasons.items()))}


@final
@dataclass(frozen=True, slots=True)
class CoverageRow:
    """One reason code: its engine, how many traces exercised it and how many verdicts carried it."""

    engine: str
    reason: str
    traces: int
    verdicts: int
    declared: bool = True  # False: a code seen in a verdict that its engine does not declare


@final
@dataclass(frozen=True, slots=True)
class RuleCoverage:
    """Every reason code of every engine any trace ran under, in engine order then declaration order."""

    rows: tuple[CoverageRow, ...]
    traces: int

    @property
    def uncovered(self) -> tuple[CoverageRow, ...]:
        """The declared codes no trace triggered: the rules the corpus does not test."""
        return tuple(r for r in self.rows if r.traces == 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "traces": self.traces,
            "rules": [
                {"engine": r.engine, "reason": r.reason, "traces": r.traces, "verdicts": r.verdicts,
                 "declared": r.declared}
                for r in self.rows
            ],
            "uncovered": [r.reason for r in self.uncovered],
        }


def rule_coverage(entries: Iterable[Mapping[str, Any]]) -> RuleCoverage:
    """Merge report entries (each with `engines` and `reasons`) into one coverage table."""
    engines: dict[str, None] = {}
    traces: dict[str, int] = {}
    verdicts: dict[str, int] = {}
    total = 0
    for entry in entries:
        total += 1
        for engine in entry.get("engines", ()):
            engines.setdefault(str(engine), None)
        for reason, n in dict(entry.get("reasons", {})).items():
            traces[reason] = traces.get(reason, 0) + 1
            verdicts[reason] = verdicts.get(reason, 0) + int(n)
    order = {name: i for i, name in enumerate(ENGINE_ORDER)}
    rows: list[CoverageRow] = []
    for engine in sorted(engines, key=lambda e: (order.get(e, len(order)), e)):
        declared = declared_reasons(engine)
        for reason in declared:
            rows.append(CoverageRow(engine, reason, traces.get(reason, 0), verdicts.get(reason, 0)))
        # A code the engine emits without declaring it still counts; `declared=False` makes the gap visible.
        prefix = f"{engine}."
        for reason in sorted(r for r in traces if r.startswith(prefix) and r not in declared):
            rows.append(CoverageRow(engine, reason, traces[reason], verdicts[reason], declared=False))
    return RuleCoverage(tuple(rows), total)


def coverage_table(coverage: RuleCoverage) -> str:
    """One row per reason code (traces, verdicts), then a line naming the codes no trace triggered."""
    rows = [
        [r.engine, r.reason + ("" if r.declared else " (undeclared)"), str(r.traces), str(r.verdicts)]
        for r in coverage.rows
    ]
    table = fit_table(rows, ["engine", "reason", "traces", "verdicts"])
    missing = coverage.uncovered
    covered = len(coverage.rows) - len(missing)
    summary = f"rule coverage: {covered} of {len(coverage.rows)} reason codes exercised by {coverage.traces} traces"
    if missing:
        summary += "; never triggered: " + ", ".join(r.reason for r in missing)
    return f"{table}\n{summary}"
