"""The report as Markdown (GitHub-flavoured): for a CI job summary or a pull-request comment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ._document import by_trace, log_events, meta_text
from ._letters import ACTION_LETTERS

__all__ = ["md_table", "render_markdown", "strip"]


def _cell(value: Any) -> str:
    # A pipe would end the cell and a newline the row.
    return " ".join(str(value).split()).replace("|", "\\|")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines.extend("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows)
    return "\n".join(lines)


_COMPACTED: Final = "|"  # where the real agent compacted its context (a step no engine hears)


def strip(steps: Sequence[Mapping[str, Any]]) -> str:
    """A timeline in one character per step (`.` allow, `w` warn, `B` block, `S` stop, `-` not reached …; `|`
    where the real agent compacted its context)."""
    return "".join(_COMPACTED if s.get("compacted") and s.get("action") != "not_reached"
                   else ACTION_LETTERS.get(str(s.get("action")), "?") for s in steps)


def _compacts(document: Mapping[str, Any]) -> bool:
    return any(s.get("compacted") for e in document.get("traces", []) for s in e.get("steps", []))


def render_markdown(document: Mapping[str, Any]) -> str:
    """Summary, one row per trace and policy (with a one-line timeline), mismatch tables, rule coverage."""
    meta = document.get("meta", {})
    summary = document.get("summary", {})
    out = [
        f"# loopguard report: {summary.get('traces', 0)} traces, {summary.get('mismatched', 0)} mismatched",
        "",
        md_table(["run", ""], [[k, meta_text(v)] for k, v in meta.items()]),
        "",
        "## Traces",
        "",
        "Timeline: one character per step — " + ", ".join(f"`{c}` {a}" for a, c in ACTION_LETTERS.items())
        + (f", `{_COMPACTED}` the agent compacted its context" if _compacts(document) else "") + ".",
        "",
    ]
    rows = []
    for (file, trace), entries in by_trace(document.get("traces", [])):
        for e in entries:
            rows.append([
                trace, file, e.get("policy"), e.get("outcome"), f"`{strip(e.get('steps', []))}`",
                "ok" if e.get("passed") else "**mismatch**",
            ])
    out += [md_table(["trace", "file", "policy", "outcome", "timeline", "status"], rows), ""]
    # calls that never ran and the agent's own compactions, once per trace (every policy replays the same steps)
    noted = [(trace, events) for (_file, trace), entries in by_trace(document.get("traces", []))
             if (events := log_events(entries[0]))]
    if noted:
        out += ["## Calls that never ran, compactions", ""]
        for trace, events in noted:
            out += [f"- **{_cell(trace)}**: " + "; ".join(_cell(e) for e in events)]
        out.append("")
    failed = [e for e in document.get("traces", []) if e.get("mismatch_table")]
    if failed:
        out += ["## Mismatches", ""]
        for e in failed:
            out += [f"### {e.get('file')}::{e.get('trace')} under {e.get('policy')}", "", "```text",
                    str(e["mismatch_table"]), "```", ""]
    coverage = document.get("coverage", {})
    rules = coverage.get("rules", [])
    missing = coverage.get("uncovered", [])
    out += [
        "## Rule coverage",
        "",
        f"{len(rules) - len(missing)} of {len(rules)} reason codes exercised; never triggered: "
        f"{', '.join(f'`{m}`' for m in missing) or 'none'}.",
        "",
        md_table(["engine", "reason", "traces", "verdicts"],
                 [[r["engine"], r["reason"], r["traces"], r["verdicts"]] for r in rules]),
        "",
    ]
    return "\n".join(out)
