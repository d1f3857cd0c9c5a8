"""The report as one self-contained HTML page: inline CSS and the step viewer's script, nothing fetched from a network.

Each trace's steps are read in the viewer (`_view`): a timeline per policy, every step's call, verdicts, reasons
and messages on a click, policies side by side. The page stays well-formed XML (the script is CDATA to an XML
reader, a comment to HTML), so tests and tools can read it with an XML parser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final

from ._document import by_trace, log_events, meta_text
from ._tables import SUMMARY_ACTIONS
from ._view import page, view_section

__all__ = ["render_html"]

_CSS: Final = """
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; font-size: 13px; }
th { background: #f4f4f4; }
td.num { text-align: right; }
.failed { color: #b00020; font-weight: bold; }
.uncovered { background: #fff1f0; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 12px; }
section.trace { border-top: 1px solid #ddd; padding-top: 0.5em; }
details.coverage > summary { cursor: pointer; font-weight: bold; }
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


def _trace_section(key: tuple[str, str], entries: Sequence[Mapping[str, Any]]) -> str:
    file, trace = key
    failed = any(not e.get("passed") for e in entries)
    status = '<span class="failed">mismatch</span>' if failed else "ok"
    parts = [
        f'<section class="trace" data-trace="{escape(trace, quote=True)}">',
        f"<h3>{escape(trace)} — {status}</h3>",
        f"<p><code>{escape(file)}</code></p>",
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


def _view_runs(key: tuple[str, str], entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One trace's runs in the viewer, from its report entries (one per policy): labels, actions, verdicts. The
    policies share one run when they replayed the same steps; a scenario simulated anew under each policy may not
    have, and then each policy's run is its own (`name @ policy`)."""
    labels = [[s.get("label") for s in e.get("steps", [])] for e in entries]
    if all(other == labels[0] for other in labels):
        return [_view_run(key[0], key[1], entries)]
    return [_view_run(key[0], f"{key[1]} @ {e.get('policy')}", [e]) for e in entries]


def _view_run(file: str, name: str, entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    steps = entries[0].get("steps", [])
    policies: list[dict[str, Any]] = []
    for e in entries:
        rows = e.get("steps", [])
        policies.append({
            "policy": str(e.get("policy")), "outcome": e.get("outcome"), "stopped_at": e.get("stopped_at"),
            "stopped_by": e.get("stopped_by"), "actions": [s.get("action") for s in rows],
            "verdicts": {str(s.get("index")): s["verdicts"] for s in rows if s.get("verdicts")},
            "state": {}, "mismatches": list(e.get("mismatches", [])), "loops": [],
        })
    differs = [i for i in range(len(steps)) if len({p["actions"][i] for p in policies}) > 1]
    return {
        "name": name, "file": file, "description": "",
        "steps": [{"index": s.get("index"), "label": s.get("label"),
                   **({"not_run": {"how": s["not_run"]}} if s.get("not_run") else {}),
                   **({"compacted": {}} if s.get("compacted") else {})} for s in steps],
        "policies": policies, "differs": differs,
    }


def _coverage(coverage: Mapping[str, Any], *, collapsed: bool) -> str:
    rules = coverage.get("rules", [])
    rows = [[r["engine"], r["reason"] + ("" if r.get("declared", True) else " (undeclared)"), int(r["traces"]),
             int(r["verdicts"])] for r in rules]
    classes = ["uncovered" if r["traces"] == 0 else "" for r in rules]
    missing = coverage.get("uncovered", [])
    summary = f"{len(rules) - len(missing)} of {len(rules)} reason codes exercised"
    table = _table(["engine", "reason", "traces", "verdicts"], rows, row_class=classes)
    if collapsed:  # one trace tests a few rules: the codes it never triggered are no news, so they wait behind a click
        return (f'<details class="coverage"><summary>{summary} ({len(missing)} never triggered)</summary>'
                f"{table}</details>")
    note = f"<p>{summary}; never triggered: {escape(', '.join(missing)) or 'none'}.</p>"
    return note + table


def render_html(document: Mapping[str, Any]) -> str:
    """The page: metadata, summary, the runs in the step viewer, every trace's results and mismatch tables,
    rule coverage (collapsed for a single trace)."""
    meta = document.get("meta", {})
    summary = document.get("summary", {})
    meta_rows = [[k, meta_text(v)] for k, v in meta.items()]
    groups = by_trace(document.get("traces", []))
    sections = "\n".join(_trace_section(key, entries) for key, entries in groups)
    title = f"loopguard report: {summary.get('traces', 0)} traces, {summary.get('mismatched', 0)} mismatched"
    body = (
        f"<h1>{escape(title)}</h1>\n"
        f"{_table(['run', ''], meta_rows)}\n"
        f"<h2>Steps</h2>\n{view_section([run for key, entries in groups for run in _view_runs(key, entries)])}"
        f"<h2>Traces</h2>\n{sections}\n"
        f"<h2>Rule coverage</h2>\n{_coverage(document.get('coverage', {}), collapsed=len(groups) == 1)}\n"
    )
    return page(title, body, _CSS)
