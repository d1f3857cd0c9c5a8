"""Reports of replays: tables (tabulate) for failures, timelines and corpus summaries, and the JSON report.

pytest-free: the plugin and the `loopguard` command both render through this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..core._expect import Mismatch, describe_expect
from ..core._model import SEVERITY, ReplayResult, Step, StepResult, Verdict, plain
from ._console import fit_table

__all__ = [
    "SUMMARY_ACTIONS",
    "failure_report",
    "json_entry",
    "mismatch_table",
    "outcome_line",
    "shorten",
    "status",
    "summary_table",
    "timeline_row",
    "timeline_table",
]

# The actions a summary row counts, in severity order; `allow` is the uninteresting rest.
SUMMARY_ACTIONS: Final = ("warn", "block", "stop", "compact", "retry", "compact_retry", "fail")
MESSAGE_WIDTH: Final = 60
CALL_WIDTH: Final = 48
TIMELINE_HEADERS: Final = ("step", "call", "action", "engine", "reason", "message")
_MARK: Final = ">"
_GAP: Final = "…"


def shorten(text: str, width: int = MESSAGE_WIDTH) -> str:
    """One line of at most `width` characters (newlines folded, an ellipsis where cut)."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _ordered(verdicts: Sequence[Verdict]) -> list[Verdict]:
    # The verdict that decided the step's action first; the rest keep the engines' order.
    return sorted(verdicts, key=lambda v: -SEVERITY[v.action])


def _verdict_cells(step: StepResult) -> tuple[str, str, str]:
    verdicts = _ordered(step.verdicts)
    return (
        "\n".join(v.engine for v in verdicts),
        "\n".join(v.reason for v in verdicts),
        "\n".join(shorten(v.message) for v in verdicts),
    )


def _expected(step: Step) -> str:
    return describe_expect(step.expect) if step.expect is not None else ""


def _value(value: Any) -> str:
    return "" if value is None else str(value)


def mismatch_table(result: ReplayResult, mismatches: list[Mismatch], context: int = 2) -> str:
    """The mismatched steps with `context` steps around each, then one line per run-level mismatch."""
    if not result.steps and result.step_counts is not None:  # a streamed replay kept no timeline
        return "\n".join(str(m) for m in mismatches)
    trace = result.trace
    by_step: dict[int, Mismatch] = {}
    for m in mismatches:
        if m.step is not None:
            by_step.setdefault(m.step, m)
    shown: set[int] = set()
    last = len(result.steps) - 1
    for index in by_step:
        shown.update(range(max(0, index - context), min(last, index + context) + 1))
    for m in mismatches:  # a run-level mismatch shows the steps behind it: those it counts, where it stopped
        if m.step is not None:
            continue
        if m.field.startswith("counts."):
            action = m.field.removeprefix("counts.")
            shown.update(s.index for s in result.steps if s.action == action)
        elif m.field in ("outcome", "stopped_at", "stopped_by") and result.stopped_at is not None:
            shown.add(result.stopped_at)
    rows: list[list[str]] = []
    previous: int | None = None
    for index in sorted(shown):
        if previous is not None and index != previous + 1:
            rows.append(["", _GAP, "", "", "", "", "", ""])
        previous = index
        step, got = trace.steps[index], result.steps[index]
        engine, reason, message = _verdict_cells(got)
        mismatch = by_step.get(index)
        if mismatch is None:
            rows.append(["", str(index), step.label(CALL_WIDTH), _expected(step), got.action, engine, reason, message])
            continue
        # A strict trace's unannotated step was expected to allow; say so, since the file shows no expect.
        expected = _expected(step) if step.expect is not None else f"{_value(mismatch.expected)} (strict)"
        got_text = got.action if mismatch.field == "action" else f"{got.action} (no verdict matches)"
        rows.append([_MARK, str(index), step.label(CALL_WIDTH), expected, got_text, engine, reason, message])
    lines: list[str] = []
    if rows:
        headers = ["", "step", "call", "expected", "got", "engine", "reason", "message"]
        lines.append(fit_table(rows, headers))
    lines.extend(str(m) for m in mismatches if m.step is None)
    return "\n".join(lines)


def timeline_row(step: Step, got: StepResult) -> list[str]:
    """One step's row of the timeline table (`TIMELINE_HEADERS`)."""
    engine, reason, message = _verdict_cells(got)
    return [str(got.index), step.label(CALL_WIDTH), got.action, engine, reason, message]


def timeline_table(result: ReplayResult) -> str:
    """Every step with its combined action and verdicts, then the run's outcome."""
    rows = [timeline_row(step, got) for step, got in zip(result.trace.steps, result.steps, strict=True)]
    return f"{fit_table(rows, TIMELINE_HEADERS)}\n{outcome_line(result)}"


def outcome_line(result: ReplayResult) -> str:
    """`trace NAME under POLICY: stopped at step 7 by loop_guard`."""
    text = f"trace {result.trace.name} under {result.policy}: {result.outcome}"
    if result.stopped_at is not None:
        text += f" at step {result.stopped_at}"
    if result.stopped_by is not None:
        text += f" by {result.stopped_by}"
    return text


def failure_report(where: str, result: ReplayResult, mismatches: list[Mismatch], description: str = "") -> str:
    """A replay that disproves its expectations, as a test failure shows it: `WHERE: outcome: N mismatches`, what the
    trace proves (its description, one line), then the table of the steps around each mismatch."""
    about = f"\n{shorten(description, 160)}" if description else ""
    return f"{where}: {outcome_line(result)}: {status(mismatches)}{about}\n{mismatch_table(result, mismatches)}"


def status(mismatches: Sequence[Mismatch]) -> str:
    n = len(mismatches)
    return "ok" if n == 0 else f"{n} mismatch" if n == 1 else f"{n} mismatches"


def summary_table(results: list[tuple[ReplayResult, list[Mismatch]]]) -> str:
    """One row per trace: name, file, policy, outcome, steps per intervening action, status."""
    rows: list[list[str]] = []
    for result, mismatches in results:
        counts = result.counts()
        rows.append(
            [
                result.trace.name,
                result.trace.path or "",
                result.policy,
                result.outcome,
                *(str(counts.get(action, 0)) for action in SUMMARY_ACTIONS),
                status(mismatches),
            ]
        )
    headers = ["trace", "file", "policy", "outcome", *SUMMARY_ACTIONS, "status"]
    return fit_table(rows, headers, droppable=SUMMARY_ACTIONS)


def json_entry(result: ReplayResult, mismatches: Sequence[Mismatch]) -> dict[str, Any]:
    """One trace's entry in the JSON report: plain data (under xdist it travels to the controller)."""
    entry: dict[str, Any] = {
        "trace": result.trace.name,
        "file": result.trace.path,
        "policy": result.policy,
        "outcome": plain(result.outcome),
        "stopped_at": result.stopped_at,
        "stopped_by": result.stopped_by,
        "counts": result.counts(),
        "passed": not mismatches,
    }
    if (note := result.what_if_note()) is not None:  # a what-if replay: calls blocked live ran, results unknown
        entry["result_unknown"] = list(result.unknown_results)
        entry["what_if"] = note
    return entry
