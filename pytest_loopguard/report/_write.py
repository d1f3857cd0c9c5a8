"""Writing a report file: the document in the form the path's extension names (`.json`, `.md`, `.html`).

A new form is a renderer module beside `_markdown` and `_html` and one entry in `REPORT_FORMATS` here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from ._document import report_document

__all__ = ["REPORT_FORMATS", "report_format", "write_document", "write_report"]

REPORT_FORMATS: Final = {".json": "json", ".md": "markdown", ".html": "html", ".htm": "html"}


def report_format(path: str | Path) -> str:
    """`json`, `markdown` or `html` from the path's extension; ValueError naming the known ones otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in REPORT_FORMATS:
        known = ", ".join(REPORT_FORMATS)
        raise ValueError(f"report {str(path)!r}: unknown extension {suffix or '(none)'!r}; expected one of {known}")
    return REPORT_FORMATS[suffix]


def write_report(path: str | Path, entries: Iterable[Mapping[str, Any]], meta: Mapping[str, Any]) -> None:
    """Write the report in the form the extension names, creating the folder."""
    from ._html import render_html
    from ._markdown import render_markdown

    write_document(path, report_document(entries, meta), render_markdown, render_html)


def write_document(path: str | Path, document: Mapping[str, Any], markdown: Callable[[Any], str],
                   html: Callable[[Any], str]) -> None:
    """Write `document` in the form `path`'s extension names (JSON as it is, Markdown and HTML by the given
    renderers), creating the folder: one writer for every report (`run`, `scan`)."""
    form = report_format(path)
    if form == "json":
        text = json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"
    else:
        text = markdown(document) if form == "markdown" else html(document)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
