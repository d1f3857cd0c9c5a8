"""The shape shared by the SDK-log importers: a file is one JSON document or JSONL rows, told apart cheaply.

A subclass says which documents and rows it recognises (`sniff_document`, `sniff_row`) and converts them
(`convert_document`, `convert_rows`); `reads_document`/`reads_row` may accept more when `--from` names the
format. Recognising a JSONL file reads its first line only; a one-line file whose line is a row (one
request/response record) is converted as rows.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath
from typing import Any, ClassVar

from ..errors import TraceError
from .base import ImportedRun, Importer, Source

__all__ = ["JsonLogImporter"]


def _stem(name: str) -> str:
    # A tarball member is named "archive.tar:member/path.json": the run id comes from the member.
    return PurePosixPath(name.rpartition(":")[2] or name).stem or "run"


class JsonLogImporter(Importer):
    """An importer of a JSON document or JSONL rows (subclasses fill in the four format methods)."""

    title: ClassVar[str] = ""  # what a file of this format is, for "traces/x.json looks like <title>"

    @abstractmethod
    def sniff_document(self, doc: Any) -> bool:
        ...

    @abstractmethod
    def sniff_row(self, row: Any) -> bool:
        ...

    def reads_document(self, doc: Any) -> bool:
        """Whether `convert` can read `doc` when `--from` names this format (detection may be stricter)."""
        return self.sniff_document(doc)

    def reads_row(self, row: Any) -> bool:
        """Whether `convert` can read JSONL whose first line is `row` when `--from` names this format."""
        return self.sniff_row(row)

    @abstractmethod
    def convert_document(self, doc: Any, file: str, stem: str) -> list[ImportedRun]:
        ...

    @abstractmethod
    def convert_rows(self, rows: Sequence[tuple[int, Any]], file: str, stem: str) -> list[ImportedRun]:
        ...

    def sniff(self, source: Source) -> bool:
        if source.is_dir or not source.head.startswith(("{", "[")):
            return False
        if source.is_jsonl:
            return self.sniff_row(source.first_row)
        try:
            doc = source.document
        except TraceError:
            return False
        return self.sniff_document(doc) or self.sniff_row(doc)

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        stem = _stem(source.name)
        if source.is_jsonl:
            if not self.reads_row(source.first_row):
                raise TraceError(f"line 1 is not {self.expected}", file=source.name)
            rows = [(row.line, row.value) for row in source.rows]
            yield from self.convert_rows(rows, source.name, stem)
            return
        doc = source.document
        if self.reads_document(doc):
            yield from self.convert_document(doc, source.name, stem)
        elif self.reads_row(doc):
            yield from self.convert_rows([(1, doc)], source.name, stem)
        else:
            raise TraceError(f"not {self.expected}", file=source.name)

    @property
    def expected(self) -> str:
        """What a file of this format holds, for the one-line error when `--from` names the wrong format."""
        return f"an {self.name} log (expected {self.description})"
