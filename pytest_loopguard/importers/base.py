"""The importer contract: a `Source` to read, an `Importer` that converts it, `ImportedRun`s it yields.

An importer turns one agent-log file (or event folder) into one trace mapping per run, in trace format
v1 plus its additions (`rejected` steps, `message.origin`, `result.exit_code`, step `agent` and
`source`). It never raises on odd content: what it cannot map goes into `unmapped`, what looks wrong into
`warnings`. Unreadable input (truncated JSON, a file no importer recognises) is a `TraceError`: one line.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Final

from ..core._safeload import parse_foreign_json, read_bytes
from ..errors import TraceError

__all__ = ["LOG_SUFFIXES", "ImportedRun", "Importer", "Row", "Source", "trace_name"]

# the names of agent log files a folder walk or an archive offers the importers (aider keeps its history as
# Markdown, `.aider.chat.history.md`); one list for import, eval, scan and the bench
LOG_SUFFIXES: Final = (".json", ".jsonl", ".traj", ".aider.chat.history.md")


@dataclass(frozen=True, slots=True)
class Row:
    """One JSONL row: its 1-based line number and its parsed value."""

    line: int
    value: Any


class Source:
    """A file (or a folder of event files) to import; its text and JSON are parsed lazily, once.

    `name` is what messages and `source.origin` show; `read` returns the raw bytes (a tarball member
    or a file on disk). A folder source has `path.is_dir()` and lists its files in `files`.
    """

    def __init__(self, name: str, read: Callable[[], bytes], *, path: Path | None = None) -> None:
        self.name = name
        self.path = path
        self._read = read

    @classmethod
    def from_path(cls, path: str | Path, limit: int | None = None) -> Source:
        """A file read lazily, refused above `limit` bytes (default: a trace file's bound; importing passes
        MAX_LOG_BYTES, as logs are bigger)."""
        p = Path(path)
        # a regular file of bounded size only: a FIFO would block, a link to /dev/zero never end
        return cls(str(path), lambda: read_bytes(p, limit), path=p)

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> Source:
        return cls(name, lambda: data)

    @property
    def stem(self) -> str:
        """The file (or tar member, or folder) name without its last suffix: a run id of last resort."""
        base = self.path.name if self.path is not None else self.name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return base.rsplit(".", 1)[0] if "." in base and not self.is_dir else base

    @property
    def is_dir(self) -> bool:
        return self.path is not None and self.path.is_dir()

    @cached_property
    def files(self) -> tuple[Path, ...]:
        """A folder source's files, sorted by name (empty for a file)."""
        if not self.is_dir:
            return ()
        assert self.path is not None
        return tuple(sorted(p for p in self.path.iterdir() if p.is_file()))

    @cached_property
    def text(self) -> str:
        if self.is_dir:
            return ""
        try:
            return self._read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(f"not UTF-8 text (byte {exc.start}); expected a text agent log (JSON, JSONL, Markdown)",
                             file=self.name) from None

    @cached_property
    def head(self) -> str:
        """The first 4 KiB of the text with leading whitespace removed: what `sniff` should look at."""
        return self.text[:4096].lstrip()

    @cached_property
    def document(self) -> Any:
        """The file parsed as one JSON value; a `TraceError` naming the line if it is not valid JSON."""
        # the one safe reader of foreign JSON: depth, digits, NaN and surrogates decided there
        return parse_foreign_json(self.text, self.name)

    @cached_property
    def parsed(self) -> Any:
        """`document`, or None when the text is not one JSON value (for `sniff`: never raises)."""
        if self.is_dir:
            return None
        try:
            return self.document
        except TraceError:
            return None

    @cached_property
    def rows(self) -> tuple[Row, ...]:
        """The file parsed as JSONL (blank lines skipped); a `TraceError` naming the first bad line."""
        out = []
        for n, line in enumerate(self.text.splitlines(), 1):
            if not line.strip():
                continue
            out.append(Row(n, parse_foreign_json(line, self.name, n, expected="one JSON object per line")))
        return tuple(out)

    @cached_property
    def first_row(self) -> Any:
        """The first non-blank line parsed as JSON, or None when it is not valid JSON (never raises)."""
        first, _, rest = self.text.lstrip().partition("\n")
        if not rest.strip():
            return self.parsed  # one line is the whole document: parse it once, for both
        try:
            return parse_foreign_json(first, self.name, 1)
        except TraceError:
            return None

    @cached_property
    def is_jsonl(self) -> bool:
        """True when the first non-blank line is a complete JSON object and more lines follow."""
        rest = self.text.lstrip().partition("\n")[2]
        return isinstance(self.first_row, dict) and bool(rest.strip())


@dataclass(slots=True)
class ImportedRun:
    """One converted run: the trace mapping (format v1 + additions), the run id, and what went astray."""

    run_id: str
    trace: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)
    # calls, rejected, failed, messages.<origin>: what the import table shows
    counts: Counter[str] = field(default_factory=Counter)


class Importer(ABC):
    """Base of every importer: `name` is the `--from` value; subclasses implement `sniff` and `convert`."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    @abstractmethod
    def sniff(self, source: Source) -> bool:
        """Cheap recognition (look at `source.head` or the parsed document's top-level keys)."""

    @abstractmethod
    def convert(self, source: Source) -> Iterator[ImportedRun]:
        """Yield one `ImportedRun` per run in the source."""


# letters and digits of any script stay (a run named in Japanese keeps its name); anything else a file
# name or a shell would trip on (separators, spaces, quotes, control characters) becomes `-`
_NAME_BAD = re.compile(r"[^\w.-]+")
# file systems cap a name at 255 bytes; leave room for a `-N` collision suffix and `.jsonl`
_NAME_MAX_BYTES = 120


def trace_name(run_id: str) -> str:
    """A valid trace name (and file stem) from a run id: unsafe characters become `-`, and a very long id
    is cut (at a character boundary) and given a short hash of the whole id, so cut ids stay distinct."""
    name = _NAME_BAD.sub("-", unicodedata.normalize("NFC", run_id)).strip("-.") or "run"
    if len(name.encode("utf-8")) <= _NAME_MAX_BYTES:
        return name
    digest = hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:10]
    cut = name.encode("utf-8")[: _NAME_MAX_BYTES - len(digest) - 1].decode("utf-8", "ignore").rstrip("-.")
    return f"{cut}-{digest}"
