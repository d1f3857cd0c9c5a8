"""A corpus folder's files: walking them (regular files only), their checksums and kinds, and unredacted secrets.

What a folder walk leaves out: the manifest itself, and `__pycache__` and `.git` folders (an installed corpus
package gets the first as soon as it is imported). Everything else is the corpus, and must be listed.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from ..core._limits import MAX_LOG_BYTES
from ..core._safeload import one_line, open_regular, read_bytes
from ..errors import NotATraceError, TraceError
from ..live._redact import BUILTIN_RULES
from ._manifest import MANIFEST_NAME, CorpusError

__all__ = ["IGNORED_PARTS", "Secret", "classify", "find_secrets", "folder_files", "sha256_of"]

IGNORED_PARTS: Final = frozenset({"__pycache__", ".git"})
_TRACE_SUFFIXES: Final = (".yaml", ".yml", ".json", ".jsonl")
# what stands in for a secret without being one: a variable reference (`${GITLAB_TOKEN}`, `$TOKEN`, `{{ key }}`,
# `%(password)s`), a `<placeholder>`, or a mask (`****`, `xxxx`)
_NOT_A_SECRET: Final = re.compile(
    r"\$\{[^}\s]+\}|\$[A-Za-z_][A-Za-z0-9_]*|\{\{[^}]*\}\}|%\([A-Za-z_]+\)s|<[^<>\s]+>|(.)\1*")


def folder_files(folder: Path) -> list[str]:
    """Every file under `folder` as a sorted POSIX path relative to it (see the module's note on what is left
    out); a symlink, FIFO or device anywhere is a `CorpusError`: a corpus holds regular files only."""
    found: list[str] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        here = Path(root)
        for name in list(dirs):
            if name in IGNORED_PARTS:
                dirs.remove(name)
            elif (here / name).is_symlink():
                raise CorpusError("a symlink; a corpus holds regular files and folders only",
                                  file=one_line(str(here / name)))
        for name in files:
            path = here / name
            rel = path.relative_to(folder).as_posix()
            if rel == MANIFEST_NAME:
                continue
            if path.is_symlink() or not path.is_file():
                raise CorpusError("not a regular file (a symlink, FIFO or device); a corpus holds regular files "
                                  "only", file=one_line(str(path)))
            found.append(rel)
    return sorted(found)


def sha256_of(path: Path) -> str:
    """The file's sha256 (hex), read in blocks through the safe reader (a regular file only)."""
    digest = hashlib.sha256()
    with open_regular(path) as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def classify(path: Path) -> tuple[str, str | None]:
    """(kind, importer) of a file found in a corpus folder: a loopguard trace, an agent log an importer
    recognises, or `other`. A file that claims to be a trace but does not load raises its `TraceError`."""
    from ..importers import Source, available, detect
    from ..importers.base import LOG_SUFFIXES
    from ..io._runner import load_runnable

    name = path.name.lower()
    if name.endswith(_TRACE_SUFFIXES):
        try:
            load_runnable(path)
            return "trace", None
        except NotATraceError:
            pass  # some other JSON or YAML: perhaps a log
    if name.endswith(LOG_SUFFIXES):
        try:
            return "log", detect(Source.from_path(path, MAX_LOG_BYTES), available()).name
        except TraceError:
            return "other", None
    return "other", None


@final
@dataclass(frozen=True, slots=True)
class Secret:
    """An unredacted secret: which rule found it, and where (the secret itself is never shown)."""

    file: str  # the corpus folder joined with the file's path
    line: int
    column: int
    label: str

    @property
    def problem(self) -> str:
        return (f"column {self.column}: an unredacted secret ({self.label}); redact it (loopguard import "
                "--redact, the recorder) or allow the value in the manifest's `secrets.allow`")

    def error(self) -> CorpusError:
        return CorpusError(self.problem, file=self.file, line=self.line)


def find_secrets(folder: Path, paths: Iterable[str], rules: Iterable[str] = (),
                 allow: Iterable[str] = ()) -> Iterator[Secret]:
    """Every secret the redaction rules (the built-in ones and `rules`) find in the files, unless its text is
    a variable reference, placeholder or mask, or wholly matches an `allow` regex."""
    patterns = [(label, re.compile(regex)) for label, regex in BUILTIN_RULES]
    patterns += [("custom", re.compile(regex)) for regex in rules]
    allowed = [re.compile(regex) for regex in allow]
    for rel in paths:
        data = read_bytes(folder / rel, MAX_LOG_BYTES)
        text = data.decode("utf-8", errors="replace")
        for label, pattern in patterns:
            group = "secret" if "secret" in pattern.groupindex else 0
            for match in pattern.finditer(text):
                value = match.group(group)
                if not value or _NOT_A_SECRET.fullmatch(value) or any(a.fullmatch(value) for a in allowed):
                    continue
                start = match.start(group)
                line_start = text.rfind("\n", 0, start) + 1
                yield Secret(str(folder / rel), text.count("\n", 0, start) + 1, start - line_start + 1, label)
