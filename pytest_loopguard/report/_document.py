"""The report document that `--loopguard-report PATH` and `loopguard run --report PATH` write, and how to read it.

The document (schema version `REPORT_SCHEMA`) holds run metadata, one entry per replayed trace (the JSON
entry plus its step actions, mismatches and reason codes) and the rule coverage. Its forms (JSON, Markdown,
HTML) are rendered from it by `_markdown` and `_html`, and chosen by `_write`: the document knows none of them.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from .. import __version__
from ..core._expect import Mismatch
from ..core._model import ReplayResult, plain
from ._rule_coverage import coverage_fields, rule_coverage
from ._tables import CALL_WIDTH, json_entry, mismatch_table

__all__ = ["REPORT_SCHEMA", "by_trace", "log_events", "meta_text", "report_document", "report_entry"]

REPORT_SCHEMA: Final = 2  # version 1 was the bare JSON list of entries


def report_entry(result: ReplayResult, mismatches: Sequence[Mismatch], engines: Iterable[str]) -> dict[str, Any]:
    """One trace's entry: the JSON entry, each step's action, deciding reason and verdicts, mismatches, reason
    codes."""
    entry = json_entry(result, mismatches)
    steps: list[dict[str, Any]] = []
    for step, got in zip(result.trace.steps, result.steps, strict=True):
        decider = next((v for v in got.verdicts if v.action == got.action), None)
        row: dict[str, Any] = {
            "index": got.index,
            "label": step.label(CALL_WIDTH),
            "action": plain(got.action),
            "reason": decider.reason if decider is not None else None,
        }
        if got.verdicts:  # every verdict with its message, for the page's per-step view
            row["verdicts"] = [v.to_dict() for v in got.verdicts]
        # what no verdict says: a call that never ran, the real agent's own compaction
        if step.not_run is not None:
            row["not_run"] = step.not_run.how
        elif step.kind == "compacted":
            row["compacted"] = True
        steps.append(row)
    entry["steps"] = steps
    entry["mismatches"] = [str(m) for m in mismatches]
    if mismatches:
        entry["mismatch_table"] = mismatch_table(result, list(mismatches))
    entry.update(coverage_fields(engines, result))
    return entry


def log_events(entry: Mapping[str, Any], limit: int = 20) -> list[str]:
    """The steps of an entry that no verdict explains, as the log had them: `step 3: denied by user: bash {...}`,
    `step 9: compacted (auto, 155,000 tokens)` (at most `limit`, then how many more)."""
    found = [f"step {s.get('index')}: {s.get('label')}" for s in entry.get("steps", [])
             if s.get("not_run") or s.get("compacted")]
    return found if len(found) <= limit else [*found[:limit], f"… and {len(found) - limit} more"]


def meta_text(value: Any) -> str:
    """A metadata value as a report table shows it: `—` for none, lists comma-separated."""
    if value is None or value == []:
        return "—"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def by_trace(entries: Iterable[Mapping[str, Any]]) -> list[tuple[tuple[str, str], list[Mapping[str, Any]]]]:
    """Entries grouped by (file, trace), in first-seen order: a matrix run's policies of one trace together."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for entry in entries:
        groups.setdefault((str(entry.get("file") or ""), str(entry.get("trace"))), []).append(entry)
    return list(groups.items())


def _created() -> str:
    # SOURCE_DATE_EPOCH (the reproducible-builds convention) pins the time, so two runs can write equal files.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (
        _dt.datetime.fromtimestamp(int(epoch), _dt.UTC) if epoch and epoch.isdigit() else _dt.datetime.now(_dt.UTC)
    )
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def report_document(entries: Iterable[Mapping[str, Any]], meta: Mapping[str, Any]) -> dict[str, Any]:
    """The whole report: schema version, metadata, summary, entries (sorted by file and trace), coverage."""
    ordered = sorted(entries, key=lambda e: (str(e.get("file") or ""), str(e.get("trace")), str(e.get("policy"))))
    passed = sum(1 for e in ordered if e.get("passed"))
    return {
        "loopguard_report": REPORT_SCHEMA,
        "meta": {
            "loopguard": __version__,
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            "created": _created(),
            **meta,
        },
        "summary": {"traces": len(ordered), "passed": passed, "mismatched": len(ordered) - passed},
        "traces": [dict(e) for e in ordered],
        "coverage": rule_coverage(ordered).to_dict(),
    }
