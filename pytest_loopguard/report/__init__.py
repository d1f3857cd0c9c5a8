"""Tables, JSON, Markdown and HTML reports of replays (the HTML with the step viewer), and rule coverage."""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._console import emit, fit_table, fit_widths, progress, terminal_width
    from ._document import REPORT_SCHEMA, report_document, report_entry
    from ._markdown import md_table
    from ._rule_coverage import coverage_table, rule_coverage
    from ._run_report import replay_html, run_report
    from ._tables import (
        TIMELINE_HEADERS,
        json_entry,
        mismatch_table,
        outcome_line,
        shorten,
        status,
        summary_table,
        timeline_row,
        timeline_table,
    )
    from ._write import REPORT_FORMATS, report_format, write_report

__all__ = [
    "REPORT_FORMATS",
    "REPORT_SCHEMA",
    "TIMELINE_HEADERS",
    "coverage_table",
    "emit",
    "fit_table",
    "fit_widths",
    "json_entry",
    "md_table",
    "mismatch_table",
    "outcome_line",
    "progress",
    "replay_html",
    "report_document",
    "report_entry",
    "report_format",
    "rule_coverage",
    "run_report",
    "shorten",
    "status",
    "summary_table",
    "terminal_width",
    "timeline_row",
    "timeline_table",
    "write_report",
]

__getattr__, __dir__ = exports(__name__, {
    "_console": ("emit", "fit_table", "fit_widths", "progress", "terminal_width"),
    "_document": ("REPORT_SCHEMA", "report_document", "report_entry"),
    "_markdown": ("md_table",),
    "_rule_coverage": ("coverage_table", "rule_coverage"),
    "_run_report": ("replay_html", "run_report"),
    "_tables": ("TIMELINE_HEADERS", "json_entry", "mismatch_table", "outcome_line", "shorten", "status",
                "summary_table", "timeline_row", "timeline_table"),
    "_write": ("REPORT_FORMATS", "report_format", "write_report"),
})
