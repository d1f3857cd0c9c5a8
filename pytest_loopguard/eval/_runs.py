"""The runs `loopguard eval` scores: trace files, raw agent logs (through the importers), and tarballs.

Every run carries where it came from (file and row, to match labels), its trace, and its outcome when
one is known (a tarball's `resolved.json`, else the labels). A tarball is read member by member in memory,
never unpacked to disk.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, final

from ..core._model import Trace
from ..errors import TraceError
from ..importers import Source, import_traces, tar_traces
from ..io._format import load_file

__all__ = ["CALL_KINDS", "LOG_SUFFIXES", "ScoredRun", "call_count", "load_runs"]

# What labels count as a call: accepted tool calls and model turns the harness rejected (labels.yaml header).
CALL_KINDS: Final = frozenset({"tool", "rejected"})
LOG_SUFFIXES: Final = (".yaml", ".yml", ".json", ".jsonl", ".traj")
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
                              and (f.name.endswith(LOG_SUFFIXES) or _is_tar(f)))
        else:
            yield p


def _is_trace_file(path: Path) -> bool:
    """A loopguard trace (YAML, or JSON/JSONL whose first object has the `loopguard` key) vs a raw log."""
    if path.suffix.lower() in (".yaml", ".yml"):
        return True
    if path.suffix.lower() not in (".json", ".jsonl"):
        return False
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip()
    if not head.startswith(b"{"):
        return False
    first = head.split(b"\n", 1)[0]
    try:
        value = json.loads(first)
    except ValueError:  # a JSON document spread over lines: look for the key near the top
        return b'"loopguard"' in head[:200]
    return isinstance(value, Mapping) and "loopguard" in value


def _resolved_flags(tar: Path) -> dict[str, bool]:
    with tarfile.open(tar) as tf:
        for info in tf:
            if info.isfile() and PurePosixPath(info.name).name == RESOLVED_MEMBER:
                fh = tf.extractfile(info)
                if fh is None:  # pragma: no cover - isfile() members always have data
                    break
                try:
                    raw = json.loads(fh.read())
                except ValueError as exc:
                    raise TraceError(f"invalid JSON ({exc})", file=f"{tar}:{info.name}") from None
                if not isinstance(raw, Mapping) or not all(isinstance(v, bool) for v in raw.values()):
                    raise TraceError("expected a mapping of instance id to true/false", file=f"{tar}:{info.name}")
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
    with tarfile.open(tar) as tf:
        members = [i.name for i in tf if i.isfile() and i.name.endswith((".json", ".jsonl", ".traj"))
                   and PurePosixPath(i.name).name != RESOLVED_MEMBER]
    runs = []
    for member, trace in tar_traces(tar, members=members):
        flag = flags.get(_instance_id(member))
        outcome = "unknown" if flag is None else ("resolved" if flag else "failed")
        runs.append(ScoredRun(trace, tar, 0, 1, outcome, member))
    return runs


def _file_runs(path: Path) -> list[ScoredRun]:
    traces = load_file(path) if _is_trace_file(path) else import_traces(Source.from_path(path))
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
