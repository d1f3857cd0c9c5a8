"""The scan's findings as one document (sessions, their loops, totals per agent, unreadable logs) and its forms.

`--report PATH` writes it as JSON, Markdown or HTML, chosen by the extension as `run --report` chooses
(`report.report_format`). Every text in it was redacted before it got here.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any, Final

from .. import __version__
from ..report._document import _created
from ..report._markdown import md_table
from ..report._write import write_document
from ._loops import Loop

__all__ = ["LOOP_HEADERS", "SCAN_SCHEMA", "TOTAL_HEADERS", "agent_totals", "loop_entry", "loop_rows", "scan_document",
           "shorten", "total_rows", "when", "write_scan_report"]

SCAN_SCHEMA: Final = 1
LOOP_HEADERS: Final = ("session", "agent", "call", "time", "what repeats", "×", "failed", "calls", "tokens",
                       "verdict")
TOTAL_HEADERS: Final = ("agent", "sessions", "with loops", "loops", "calls in loops", "tokens in loops")
EPOCH_MS: Final = 10**11  # a `t` this large is a wall-clock time (ms since 1970), not a run clock


def when(t: int | None) -> str:
    """A step's `t` as it reads: a UTC time when it is a wall-clock time, else the offset into the run."""
    if t is None:
        return "—"
    if t >= EPOCH_MS:
        return _dt.datetime.fromtimestamp(t / 1000, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    seconds = t // 1000
    return f"+{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def verdict_text(loop: Loop) -> str:
    more = f" +{len(loop.reasons) - 1}" if len(loop.reasons) > 1 else ""
    return f"{loop.action}{' (ended the replay)' if loop.stopped else ''} {loop.reasons[0]}{more}"


def loop_entry(loop: Loop) -> dict[str, Any]:
    """A loop as the document holds it: its fields, and its time and verdict as they read."""
    return {**loop.to_dict(), "time": when(loop.t), "verdict": verdict_text(loop)}


def agent_totals(sessions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per agent (in first-seen order): sessions, sessions with loops, loops, calls and tokens inside them;
    then `all` when there are several agents."""
    by_agent: dict[str, dict[str, Any]] = {}
    for s in sessions:
        agent = str(s["agent"])
        t = by_agent.setdefault(agent, {"agent": agent, "sessions": 0, "with_loops": 0, "loops": 0, "calls": 0,
                                        "tokens": 0})
        loops = s["loops"]
        t["sessions"] += 1
        t["with_loops"] += 1 if loops else 0
        t["loops"] += len(loops)
        t["calls"] += sum(lp["calls"] for lp in loops)
        t["tokens"] += sum(lp["tokens"] for lp in loops)
    rows = list(by_agent.values())
    if len(rows) > 1:
        rows.append({"agent": "all", **{k: sum(r[k] for r in rows) for k in rows[0] if k != "agent"}})
    return rows


def total_rows(totals: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [[t["agent"], str(t["sessions"]), str(t["with_loops"]), str(t["loops"]), str(t["calls"]),
             f"{t['tokens']:,}"] for t in totals]


def scan_document(sessions: Sequence[Mapping[str, Any]], errors: Sequence[str],
                  meta: Mapping[str, Any]) -> dict[str, Any]:
    """The whole scan: metadata, every session scanned (with its loops), totals per agent, unreadable logs."""
    return {
        "loopguard_scan": SCAN_SCHEMA,
        "meta": {"loopguard": __version__, "created": _created(), **meta},
        "sessions": [dict(s) for s in sessions],
        "totals": agent_totals(sessions),
        "errors": list(errors),
    }


def loop_rows(sessions: Sequence[Mapping[str, Any]], width: int = 100) -> list[list[str]]:
    """One row per loop (LOOP_HEADERS), sessions in the order given."""
    rows = []
    for s in sessions:
        for lp in s["loops"]:
            rows.append([s["session"], s["agent"], str(lp["call"]), lp["time"], shorten(lp["what"], width),
                         str(lp["repeats"]), str(lp["failed"]), str(lp["calls"]), f"{lp['tokens']:,}",
                         lp["verdict"]])
    return rows


def render_markdown(document: Mapping[str, Any]) -> str:
    meta = document["meta"]
    sessions = document["sessions"]
    loops = sum(len(s["loops"]) for s in sessions)
    out = [f"# loopguard scan: {len(sessions)} sessions, {loops} loops under {meta.get('policy')}", "",
           md_table(["scan", ""], [[k, v] for k, v in meta.items()]), "", "## Loops", ""]
    rows = loop_rows(document["sessions"])
    out += [md_table(LOOP_HEADERS, rows) if rows else "No loops found.", "", "## Totals per agent", "",
            md_table(TOTAL_HEADERS, total_rows(document["totals"])), "", "## Sessions", "",
            md_table(["session", "agent", "file", "calls", "loops"],
                     [[s["session"], s["agent"], f"`{s['file']}`", s["calls"], len(s["loops"])] for s in sessions]),
            ""]
    if document["errors"]:
        out += ["## Logs that could not be read", "", *(f"- {e}" for e in document["errors"]), ""]
    return "\n".join(out)


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS: Final = ("body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1em}"
               "th,td{border:1px solid #ccc;padding:2px 8px;text-align:left;font-size:13px}th{background:#f4f4f4}")


def render_html(document: Mapping[str, Any]) -> str:
    """One self-contained page (inline CSS, no script, nothing fetched)."""
    meta = document["meta"]
    sessions = document["sessions"]
    loops = sum(len(s["loops"]) for s in sessions)
    title = f"loopguard scan: {len(sessions)} sessions, {loops} loops under {meta.get('policy')}"
    rows = loop_rows(document["sessions"])
    parts = [
        "<!DOCTYPE html>", f'<html lang="en"><head><meta charset="utf-8"/><title>{escape(title)}</title>'
        f"<style>{_CSS}</style></head><body>", f"<h1>{escape(title)}</h1>",
        _html_table(["scan", ""], [[k, v] for k, v in meta.items()]),
        "<h2>Loops</h2>", _html_table(LOOP_HEADERS, rows) if rows else "<p>No loops found.</p>",
        "<h2>Totals per agent</h2>", _html_table(TOTAL_HEADERS, total_rows(document["totals"])),
        "<h2>Sessions</h2>",
        _html_table(["session", "agent", "file", "calls", "loops"],
                    [[s["session"], s["agent"], s["file"], s["calls"], len(s["loops"])] for s in sessions]),
    ]
    if document["errors"]:
        parts += ["<h2>Logs that could not be read</h2>",
                  "<ul>" + "".join(f"<li>{escape(e)}</li>" for e in document["errors"]) + "</ul>"]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_scan_report(path: str | Path, document: Mapping[str, Any]) -> None:
    """Write the document in the form the extension names (.json, .md, .html), creating the folder."""
    write_document(path, document, render_markdown, render_html)
