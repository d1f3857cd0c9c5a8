"""The corpus runner behind `loopguard run`: every trace file under the given paths loaded (or a JSONL file
streamed), replayed or simulated, and checked, in file order; bad files, duplicates and files that are no
trace are reported as the run goes on. `_jobs` spreads the same work over worker processes."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..core._expect import Mismatch, check
from ..core._model import ReplayResult, Trace
from ..errors import LoopguardError, NotATraceError, TraceError
from ..io._format import iter_trace_files
from ..io._runner import execute, load_runnable
from ..io._stream import replay_jsonl
from ..runtime._policy import Policy, resolving_once

__all__ = ["FileRuns", "RunItem", "file_runs", "merged", "run_paths", "trace_files"]


RunItem = tuple[ReplayResult, list[Mismatch]] | LoopguardError
# One file's replay as `merged` reads it: its error (a NotATraceError for a file that is no trace), or each
# trace's name with how to get its item; the item is only asked for a name no earlier file holds.
FileRuns = Iterable[LoopguardError | tuple[str, Callable[[], RunItem]]]


def trace_files(paths: Sequence[str | Path]) -> Iterator[tuple[Path, bool]]:
    """Every trace file under `paths` in run order, with whether it was found in a folder (not named itself)."""
    for raw in paths:
        in_folder = Path(raw).is_dir()
        for f in iter_trace_files([raw]):
            yield f, in_folder


def file_runs(f: Path, policy: Policy | None, resolved: dict[Any, Policy], stream: bool) -> FileRuns:
    """One file loaded (or a JSONL file streamed), with its traces' runs: see `FileRuns`."""
    if not f.exists():
        yield TraceError("no such file or folder", file=str(f))
        return
    try:
        with resolving_once(resolved):  # entered per file: never open while the caller has the item
            streamed = replay_jsonl(f, policy) if stream and f.suffix.lower() == ".jsonl" else None
            loaded = [streamed.result.trace] if streamed is not None else load_runnable(f)
    except TraceError as exc:  # a NotATraceError too: `merged` decides whether it is skipped
        yield exc
        return
    if streamed is not None:
        run = streamed  # replayed already: the item is what it found
        yield run.result.trace.name, lambda: (run.result, run.mismatches)
        return
    for trace in loaded:
        yield trace.name, functools.partial(_executed, trace, policy, resolved)


def _executed(trace: Trace, policy: Policy | None, resolved: dict[Any, Policy]) -> RunItem:
    """A loaded trace replayed (or simulated) and checked; an error of its input as its item."""
    try:
        with resolving_once(resolved):
            result = execute(trace, policy)
    except LoopguardError as exc:  # e.g. a scenario the simulators reject: a bad input like a load error
        return exc.located(file=trace.path) if isinstance(exc, TraceError) else TraceError(str(exc), file=trace.path)
    return result, check(result)


def merged(files: Iterable[tuple[Path, bool, FileRuns]],
           skipped: list[NotATraceError] | None = None) -> Iterator[RunItem]:
    """The items of files' runs in order: a file in a folder that is no trace is skipped (appended to
    `skipped`), a trace whose name an earlier file holds is a duplicate error and is not run."""
    seen: dict[str, str] = {}
    for f, in_folder, runs in files:
        for item in runs:
            if isinstance(item, LoopguardError):
                if not isinstance(item, NotATraceError) or not in_folder:
                    yield item
                elif skipped is not None:
                    skipped.append(item)
                continue
            name, run = item
            if name in seen:
                yield TraceError(f"duplicate trace name {name!r} (also in {seen[name]})", file=str(f), field="name")
                continue
            seen[name] = str(f)
            yield run()


def run_paths(
    paths: Sequence[str | Path],
    policy: Policy | None = None,
    *,
    skipped: list[NotATraceError] | None = None,
    stream: bool = True,
) -> Iterator[RunItem]:
    """Each trace under `paths` replayed (or simulated) and checked as its file is read, in file order:
    JSONL files are streamed; a bad file, a duplicate name or a scenario the simulators reject is
    yielded as its error, and the rest goes on. As `validate_paths` does, a file in a folder that is not
    a trace at all is skipped (appended to `skipped` when given), and a file named in `paths` must be one.
    `stream=False` loads JSONL files too, for callers that need every step's result (coverage, reports)."""
    resolved: dict[Any, Policy] = {}  # the policy files and mappings the traces name, each resolved once per run
    files = ((f, in_folder, file_runs(f, policy, resolved, stream)) for f, in_folder in trace_files(paths))
    return merged(files, skipped)
