"""Writing a report file: the document in the form the path's extension names (`.json`, `.md`, `.html`).

A new form is a renderer module beside `_markdown` and `_html` and one entry in `REPORT_FORMATS` here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from ._document import report_document

__all__ = ["REPORT_FORMATS", "report_format", "write_report"]

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
    form = report_format(path)
    document = report_document(entries, meta)
    if form == "json":
        text = json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"
    elif form == "markdown":
        from ._markdown import render_markdown

        text = render_markdown(document)
    else:
        from ._html import render_html

        text = render_html(document)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
