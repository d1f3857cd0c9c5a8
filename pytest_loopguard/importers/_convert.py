"""Converting agent logs with the importers: a file or event folder, or the members of a tarball, into traces."""

from __future__ import annotations

import tarfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..core._limits import MAX_LOG_BYTES
from ..core._model import Trace
from ..core._safeload import one_line, tar_members
from ..errors import TraceError
from ..io._format import trace_from_mapping
from .base import LOG_SUFFIXES, ImportedRun, Importer, Source
from .registry import available, detect, get

__all__ = ["import_runs", "import_traces", "tar_traces", "to_trace"]


def import_runs(source: str | Path | Source, fmt: str | None = None,
                importers: list[Importer] | None = None) -> list[ImportedRun]:
    """Convert one file or event folder: every run in it, by format `fmt` or the detected one.

    Raises a one-line `TraceError` for an unknown format, an unrecognised file or unreadable JSON.
    """
    src = source if isinstance(source, Source) else Source.from_path(source, MAX_LOG_BYTES)
    pool = importers if importers is not None else available()
    imp = get(fmt, pool) if fmt else detect(src, pool)
    return list(imp.convert(src))


def to_trace(run: ImportedRun, origin: str | None = None) -> Trace:
    """The loaded `Trace` of an imported run (validated like any trace file)."""
    try:
        return trace_from_mapping(run.trace, path=origin or run.run_id)
    except TraceError as exc:  # a value the loader checks without knowing the file: name it
        raise exc.located(file=origin or run.run_id) from None


def import_traces(source: str | Path | Source, fmt: str | None = None) -> list[Trace]:
    """`import_runs`, loaded as `Trace` objects (a refusal names the file)."""
    src = source if isinstance(source, Source) else Source.from_path(source, MAX_LOG_BYTES)
    return [to_trace(run, src.name) for run in import_runs(src, fmt)]


def tar_traces(tar_path: str | Path, fmt: str | None = None,
               members: Iterable[str] | None = None) -> Iterator[tuple[str, Trace]]:
    """(member name, trace) for each JSON member of a tarball, read in memory (nothing unpacked to disk).

    `members` limits it to those names. Each member is detected separately unless `fmt` is given. Without
    `members`, a valid JSON member that no importer recognises (e.g. the calibration corpus's
    `resolved.json`) is passed over; with `members`, it is an error like any other.
    """
    wanted = set(members) if members is not None else None
    pool = available()

    def chosen(info: tarfile.TarInfo) -> bool:
        if wanted is not None:
            return info.name in wanted
        return info.name.endswith(LOG_SUFFIXES)

    # the one safe archive reader: a regular file, bounded members, a corrupt archive as one line
    for name, data in tar_members(tar_path, chosen):
        if isinstance(data, TraceError):
            raise data
        src = Source.from_bytes(f"{one_line(str(tar_path))}:{one_line(name)}", data)
        if fmt is None and wanted is None and src.parsed is not None:
            try:
                imp = detect(src, pool)
            except TraceError:
                continue
        else:
            imp = get(fmt, pool) if fmt else detect(src, pool)
        for run in imp.convert(src):
            yield name, to_trace(run, src.name)
