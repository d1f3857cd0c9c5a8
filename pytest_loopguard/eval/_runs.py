"""The runs `loopguard eval` scores: trace files, raw agent logs (through the importers), and tarballs.

Every run carries where it came from (file and row, to match labels), its trace, and its outcome when
one is known (a tarball's `resolved.json`, else the labels). A tarball is read member by member in memory,
never unpacked to disk.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, final

from ..core._limits import MAX_FILE_BYTES, MAX_LOG_BYTES
from ..core._model import Trace
from ..core._safeload import one_line, parse_foreign_json, regular_fd, tar_members
from ..errors import TraceError
from ..importers import Source, import_traces, tar_traces
from ..importers.base import LOG_SUFFIXES
from ..io._format import CORPUS_MANIFEST, load_file

__all__ = ["CALL_KINDS", "RUN_SUFFIXES", "ScoredRun", "call_count", "load_runs"]

# What labels count as a call: accepted tool calls and model turns the harness rejected (labels.yaml header).
CALL_KINDS: Final = frozenset({"tool", "rejected"})
# what a folder walk reads: trace files and the agent logs the importers take
RUN_SUFFIXES: Final = (".yaml", ".yml", *LOG_SUFFIXES)
TAR_SUFFIXES: Final = (".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz")
RESOLVED_MEMBER: Final = "resolved.json"


@final
@dataclass(frozen=True, slots=True, eq=False)
class ScoredRun:
    """One run to score: its trace, the file it came from, its row in that file, and its outcome."""

    trace: Trace
    file: Path  # the file (or tarball) as found
    row: int  # position among the runs of that file (tarball: 0)
    rows: int  # how many runs the file holds
    outcome: str = "unknown"  # resolved | failed | unknown
    member: str | None = None  # the tarball member

    @property
    def run_id(self) -> str:
        if self.member is not None:
            return f"{self.file.name}:{self.member}"
        return str(self.file) if self.rows == 1 else f"{self.file}#{self.row}"


def call_count(trace: Trace) -> int:
    """The run's calls in the labels' sense (tool steps and rejected turns)."""
    return sum(1 for s in trace.steps if s.kind in CALL_KINDS)


def _is_tar(path: Path) -> bool:
    return path.name.endswith(TAR_SUFFIXES)


def _files(paths: Iterable[str | Path], skip: set[Path]) -> Iterator[Path]:
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise TraceError("no such file or folder", file=str(p))
        if p.is_dir():
            yield from sorted(f for f in p.rglob("*") if f.is_file() and f.resolve() not in skip
                              and f.name != CORPUS_MANIFEST and (f.name.endswith(RUN_SUFFIXES) or _is_tar(f)))
        else:
            yield p


def _head(path: Path) -> bytes:
    # through the safe reader's open: a FIFO named `run.json` is refused, not waited on
    fd, _size = regular_fd(path)
    try:
        return os.read(fd, 4096)
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    finally:
        os.close(fd)


def _is_trace_file(path: Path) -> bool:
    """A loopguard trace (YAML, or JSON/JSONL whose first object has the `loopguard` key) vs a raw log."""
    if path.suffix.lower() in (".yaml", ".yml"):
        return True
    if path.suffix.lower() not in (".json", ".jsonl"):
        return False
    head = _head(path).lstrip()
    if not head.startswith(b"{"):
        return False
    first = head.split(b"\n", 1)[0]
    try:
        value = parse_foreign_json(first.decode("utf-8"))
    except (TraceError, UnicodeDecodeError):  # a JSON document spread over lines: the key near the top
        return b'"loopguard"' in head[:200]
    return isinstance(value, Mapping) and "loopguard" in value


def _is_resolved(info: tarfile.TarInfo) -> bool:
    return PurePosixPath(info.name).name == RESOLVED_MEMBER


def _resolved_flags(tar: Path) -> dict[str, bool]:
    for name, data in tar_members(tar, _is_resolved, MAX_FILE_BYTES):
        where = f"{one_line(str(tar))}:{one_line(name)}"
        if isinstance(data, TraceError):
            raise data
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(f"not UTF-8 text (byte {exc.start})", file=where) from None
        raw = parse_foreign_json(text, where, expected="a mapping of instance id to true/false")
        if not isinstance(raw, Mapping) or not all(isinstance(v, bool) for v in raw.values()):
            raise TraceError("expected a mapping of instance id to true/false", file=where)
        return {str(k): v for k, v in raw.items()}
    return {}


def _instance_id(member: str) -> str:
    name = PurePosixPath(member).name
    for suffix in (".traj.json", ".json", ".jsonl", ".traj"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _tar_runs(tar: Path) -> list[ScoredRun]:
    flags = _resolved_flags(tar)
    # the names only: each log is read (once) by `tar_traces`
    members = [name for name, _ in tar_members(
        tar, lambda i: i.name.endswith(LOG_SUFFIXES) and not _is_resolved(i), limit=-1)]
    runs = []
    for member, trace in tar_traces(tar, members=members):
        flag = flags.get(_instance_id(member))
        outcome = "unknown" if flag is None else ("resolved" if flag else "failed")
        runs.append(ScoredRun(trace, tar, 0, 1, outcome, member))
    return runs


def _file_runs(path: Path) -> list[ScoredRun]:
    # a log is bounded as `loopguard import` bounds it (MAX_LOG_BYTES), a trace as every trace is
    traces = load_file(path) if _is_trace_file(path) else import_traces(Source.from_path(path, MAX_LOG_BYTES))
    return [ScoredRun(t, path, i, len(traces)) for i, t in enumerate(traces)]


def load_runs(paths: Iterable[str | Path], *, skip: Iterable[str | Path] = ()) -> list[ScoredRun]:
    """Every run under `paths` (folders searched recursively, sorted; `skip` e.g. the labels file).

    Raises a one-line `TraceError` for the first file that cannot be read or converted.
    """
    skipped = {Path(s).resolve() for s in skip}
    runs: list[ScoredRun] = []
    for f in _files(paths, skipped):
        runs.extend(_tar_runs(f) if _is_tar(f) else _file_runs(f))
    return runs
