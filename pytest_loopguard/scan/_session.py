"""One session log scanned: imported in memory by its agent's importer (or the detected one), each run replayed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, final

from ..core._limits import MAX_LOG_BYTES
from ..core._model import Trace
from ..errors import LoopguardError, TraceError
from ..importers._convert import to_trace
from ..importers.base import ImportedRun, Importer, Source
from ..importers.registry import detect
from ..runtime._policy import Policy
from ._discover import LogFile
from ._loops import CALL_KINDS, Loop, find_loops

__all__ = ["ImporterFailed", "SessionScan", "scan_log"]

_T = TypeVar("_T")


class ImporterFailed(Exception):
    """An importer (or format detection) raised something other than our one-line error on a log: a bug in
    it, which `scan` reports as `import` does (an internal error, exit 3) while it goes on with the other logs."""

    def __init__(self, which: str, cause: Exception) -> None:
        super().__init__(f"{which} failed: {type(cause).__name__}: {cause}")
        self.which = which
        self.cause = cause


@final
@dataclass(slots=True)
class SessionScan:
    """One run of a session log and the loops found in it under the scan's policy."""

    log: LogFile
    importer: str  # the importer that read it
    run: ImportedRun  # as prepared (redacted) for printing and saving
    trace: Trace
    loops: list[Loop] = field(default_factory=list)

    @property
    def agent(self) -> str:
        return self.log.agent or self.importer

    @property
    def calls(self) -> int:
        return sum(1 for s in self.trace.steps if s.kind in CALL_KINDS)

    @property
    def files(self) -> set[str]:
        """The log files the run's steps point back into (a session may merge its subagents' files)."""
        return {s.source.file for s in self.trace.steps if s.source is not None}


def _importer(log: LogFile, source: Source, pool: Sequence[Importer]) -> Importer:
    """The agent's own importer when the log was found in its place, else the one that recognises it."""
    if log.agent is not None:
        for imp in pool:
            if imp.name == log.agent:
                return imp
    return detect(source, list(pool))


def scan_log(log: LogFile, policy: Policy, pool: Sequence[Importer],
             prepare: Callable[[ImportedRun], ImportedRun] = lambda run: run) -> list[SessionScan]:
    """Every run of `log` with its loops under `policy`. The log is only read; `prepare` (redaction) is applied
    to each run before it is loaded and replayed, so nothing that leaves here holds what it removes.

    Raises `TraceError` (one line) for a log that cannot be read, `OSError` for one that went away. A log
    with no session in it (Gemini CLI's `logs.json`, a prompt log) gives none."""
    source = Source.from_path(log.path, MAX_LOG_BYTES)
    imp = _bugs_named("format detection", lambda: _importer(log, source, pool))
    scans: list[SessionScan] = []
    for run, trace in _bugs_named(f"the {imp.name} importer", lambda: _imported(imp, source, prepare)):
        scans.append(SessionScan(log, imp.name, run, trace, find_loops(trace, policy)))
    return scans


def _imported(imp: Importer, source: Source,
              prepare: Callable[[ImportedRun], ImportedRun]) -> list[tuple[ImportedRun, Trace]]:
    out = []
    for raw in imp.convert(source):
        run = prepare(raw)
        try:
            out.append((run, to_trace(run, source.name)))
        except TraceError as exc:  # an importer wrote what the loader refuses: this log's line names it
            raise exc.located(file=source.name) from None
    return out


def _bugs_named(which: str, work: Callable[[], _T]) -> _T:
    """`work()`, with anything but our errors (and a file gone, OSError) raised as `ImporterFailed`."""
    try:
        return work()
    except (LoopguardError, OSError):
        raise
    except Exception as exc:
        raise ImporterFailed(which, exc) from exc
