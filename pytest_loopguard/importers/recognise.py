"""What a file that is not a trace looks like: one line naming the importer that would convert it."""

from __future__ import annotations

from pathlib import Path

from ..errors import NotATraceError
from .base import Importer, Source
from .registry import available

__all__ = ["looks_like", "skip_note"]


def _title(importer: Importer) -> str:
    title = getattr(importer, "title", "")
    if isinstance(title, str) and title:
        return title
    article = "an" if importer.name[:1].lower() in "aeiou" else "a"
    return f"{article} {importer.name} log"


def looks_like(path: Path, error: NotATraceError | None = None) -> Importer | None:
    """The importer that recognises the file at `path`, or None.

    What the trace loader already parsed (`error.document`) is handed to the importers, so a large export is
    not parsed twice.
    """
    source = Source.from_path(path)
    if error is not None and error.parsed:
        # cached_property values may be set: the importers then read the loader's parse, not the file again
        if path.suffix.lower() == ".json":
            source.document = error.document
        elif path.suffix.lower() == ".jsonl":
            source.first_row = error.document
    for importer in available():
        try:
            if importer.sniff(source):
                return importer
        except Exception:  # a plugin's sniff that breaks must not turn a skipped file into a crash
            continue
    return None


def skip_note(shown: str, path: Path, error: NotATraceError | None = None) -> str:
    """`shown` (the file as the user sees it) and what it is: the importer's hint, else "not a trace"."""
    try:
        importer = looks_like(path, error)
    except (OSError, ValueError):  # unreadable or not UTF-8: it is still just a skipped file
        importer = None
    if importer is not None:
        return f"{shown} looks like {_title(importer)}: loopguard import it"
    return f"{shown} is not a trace (no top-level 'loopguard' key): skipped"
