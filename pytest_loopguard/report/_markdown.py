"""The report as Markdown (GitHub-flavoured): for a CI job summary or a pull-request comment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._document import by_trace, meta_text
from ._svg import ACTION_LETTERS

__all__ = ["md_table", "render_markdown", "strip"]


def _cell(value: Any) -> str:
    # A pipe would end the cell and a newline the row.
    return " ".join(str(value).split()).replace("|", "\\|")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines.extend("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows)
    return "\n".join(lines)


def strip(steps: Sequence[Mapping[str, Any]]) -> str:
    """A timeline in one character per step (`.` allow, `w` warn, `B` block, `S` stop, `-` not reached …)."""
    return "".join(ACTION_LETTERS.get(str(s.get("action")), "?") for s in steps)


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
        "Timeline: one character per step — " + ", ".join(f"`{c}` {a}" for a, c in ACTION_LETTERS.items()) + ".",
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
