"""The report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched from a network."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final

from ._document import by_trace, log_events, meta_text
from ._svg import ACTION_COLOURS, timeline_svg
from ._tables import SUMMARY_ACTIONS

__all__ = ["render_html"]

_DARK: Final = frozenset({"stop", "compact_retry", "fail"})
_CSS: Final = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; font-size: 13px; }
th { background: #f4f4f4; }
td.num { text-align: right; }
.failed { color: #b00020; font-weight: bold; }
.uncovered { background: #fff1f0; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 12px; }
section.trace { border-top: 1px solid #ddd; padding-top: 0.5em; }
.legend span { display: inline-block; padding: 0 6px; margin-right: 4px; font-size: 12px; }
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, row_class: Sequence[str] | None = None) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body: list[str] = []
    for i, row in enumerate(rows):
        cls = f' class="{row_class[i]}"' if row_class and row_class[i] else ""
        cells = "".join(
            f'<td class="num">{v}</td>' if isinstance(v, int) else f"<td>{escape(str(v))}</td>" for v in row
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _legend() -> str:
    # Light text on the dark fills (stop, compact_retry, fail) keeps every label readable.
    spans = "".join(
        f'<span style="background:{colour};color:{"#fff" if action in _DARK else "#222"}">{escape(action)}</span>'
        for action, colour in ACTION_COLOURS.items()
    )
    return f'<p class="legend">{spans}</p>'


def _trace_section(key: tuple[str, str], entries: Sequence[Mapping[str, Any]]) -> str:
    file, trace = key
    failed = any(not e.get("passed") for e in entries)
    status = '<span class="failed">mismatch</span>' if failed else "ok"
    parts = [
        f'<section class="trace" data-trace="{escape(trace, quote=True)}">',
        f"<h3>{escape(trace)} — {status}</h3>",
        f"<p><code>{escape(file)}</code></p>",
        timeline_svg([(str(e.get("policy")), e.get("steps", [])) for e in entries]),
    ]
    events = log_events(entries[0])  # calls that never ran, the agent's own compactions: the same under each policy
    if events:
        parts.append(f'<p class="events">{escape("; ".join(events))}</p>')
    rows = []
    for e in entries:
        counts = e.get("counts", {})
        rows.append([
            e.get("policy"), e.get("outcome"), "" if e.get("stopped_at") is None else e.get("stopped_at"),
            e.get("stopped_by") or "", *(int(counts.get(a, 0)) for a in SUMMARY_ACTIONS),
            "ok" if e.get("passed") else f"{len(e.get('mismatches', []))} mismatch(es)",
        ])
    parts.append(_table(["policy", "outcome", "stopped at", "stopped by", *SUMMARY_ACTIONS, "status"], rows))
    for e in entries:
        if e.get("mismatch_table"):
            parts.append(f"<p>Mismatches under <b>{escape(str(e.get('policy')))}</b>:</p>")
            parts.append(f'<pre class="mismatches">{escape(str(e["mismatch_table"]))}</pre>')
    parts.append("</section>")
    return "\n".join(parts)


def _coverage(coverage: Mapping[str, Any]) -> str:
    rules = coverage.get("rules", [])
    rows = [[r["engine"], r["reason"] + ("" if r.get("declared", True) else " (undeclared)"), int(r["traces"]),
             int(r["verdicts"])] for r in rules]
    classes = ["uncovered" if r["traces"] == 0 else "" for r in rules]
    missing = coverage.get("uncovered", [])
    note = (f"<p>{len(rules) - len(missing)} of {len(rules)} reason codes exercised; never triggered: "
            f"{escape(', '.join(missing)) or 'none'}.</p>")
    return note + _table(["engine", "reason", "traces", "verdicts"], rows, row_class=classes)


def render_html(document: Mapping[str, Any]) -> str:
    """The page: metadata, summary, every trace (timeline, results, mismatch tables), rule coverage."""
    meta = document.get("meta", {})
    summary = document.get("summary", {})
    meta_rows = [[k, meta_text(v)] for k, v in meta.items()]
    groups = by_trace(document.get("traces", []))
    sections = "\n".join(_trace_section(key, entries) for key, entries in groups)
    title = f"loopguard report: {summary.get('traces', 0)} traces, {summary.get('mismatched', 0)} mismatched"
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"/><title>{escape(title)}</title>'
        f"<style>{_CSS}</style></head><body>\n"
        f"<h1>{escape(title)}</h1>\n"
        f"{_table(['run', ''], meta_rows)}\n"
        f"<h2>Traces</h2>\n{_legend()}\n{sections}\n"
        f"<h2>Rule coverage</h2>\n{_coverage(document.get('coverage', {}))}\n"
        "</body></html>\n"
    )
