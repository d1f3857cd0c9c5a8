"""`loopguard run -j N`: a corpus's files replayed on N worker processes and merged back in run order, so the
output is byte for byte that of one process whatever the scheduling.

The parent lists the files, sends them to the workers in batches (one batch per worker at a time) and reads
the batches' results back in file order as they arrive: at most a window of batches is in flight, so the
reorder buffer, and memory, stay bounded by the files in flight, not by the corpus. `stream.merged` then
does with them exactly what `run_paths` does in one process (skipped files, duplicate names: the first file
in run order wins). A worker sends back only what the output reads: a result without its step timeline
unless a table (a mismatch) or `--coverage`/`--report` reads the steps.

Workers start from a forkserver (spawn where there is none): `fork` would copy a parent that may run
threads (a progress bar, an embedding program), which can deadlock the child; the forkserver imports the
replay modules once and forks each worker from that clean process, so a worker costs a fork, not an
interpreter start.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import signal
import sys
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..core._machine import usable_cpus
from ..core._model import ReplayResult
from ..errors import LoopguardError, LoopguardWarning
from ..runtime._policy import Policy, resolve_policy
from ._corpus import FileRuns, RunItem, file_runs, merged, run_paths, trace_files

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.context import DefaultContext, ForkServerContext, SpawnContext
    from multiprocessing.process import BaseProcess

    from ..errors import NotATraceError

__all__ = [
    "WorkerLost",
    "batch_files",
    "batch_size",
    "main_module_hidden",
    "mp_context",
    "parse_jobs",
    "replay_batch",
    "replay_file",
    "run_jobs",
    "usable_cpus",
]

MIN_BATCH: Final = 128  # files per task at least: a task costs a pipe round trip; fewer than 2 batches run here
MAX_BATCH: Final = 256  # files per task at most, so the last batches still spread over the workers
BATCHES_PER_WORKER: Final = 8  # batches each worker gets over the run: the slowest one's tail stays short
WINDOW_PER_WORKER: Final = 4  # batches in flight (sent, or done but not yet merged) per worker


class WorkerLost(RuntimeError):
    """A worker process died (killed, out of memory) while replaying a file: the run cannot be complete."""


def parse_jobs(text: str) -> int:
    """`-j N`: N worker processes (N >= 1); `0` or `auto` means one per usable CPU. ValueError otherwise."""
    if text.strip().lower() == "auto":
        return usable_cpus()
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"expected an integer >= 1, 0 or 'auto' (one per CPU), got {text!r}")
    return value or usable_cpus()


def batch_size(files: int, jobs: int) -> int:
    """Files per task: each worker gets about BATCHES_PER_WORKER of them, within MIN_BATCH..MAX_BATCH."""
    return max(MIN_BATCH, min(MAX_BATCH, -(-files // (jobs * BATCHES_PER_WORKER))))


# ---- what crosses between processes --------------------------------------------------------------------
class _Escaped:
    """An exception a file's replay let through (a bug, or an error that reaches `cli.main` in one process):
    raised again in the parent where one process would have raised it. An exception that does not survive
    pickling comes back as one of the same class name and message, which is all `cli.main` shows of it."""

    __slots__ = ("error", "kind", "text")

    def __init__(self, exc: Exception) -> None:
        import pickle  # only on this rare path

        try:
            back = pickle.loads(pickle.dumps(exc))
            same = type(back) is type(exc) and str(back) == str(exc)
        except Exception:  # any failure to pickle means: send its name and text instead
            same = False
        self.error: Exception | None = exc if same else None
        self.kind = type(exc).__name__
        self.text = str(exc)

    def exception(self) -> Exception:
        if self.error is not None:
            return self.error
        stand_in: type[Exception] = type(self.kind, (Exception,), {})
        return stand_in(self.text)


# What a worker's replay warned (text, category, file, line), re-issued in the command where one process
# would have issued it: the command's filters and its once-per-place registry then decide, as with `-j 1`.
Warned = tuple[tuple[str, type[Warning], str, int], ...]
_REGISTRIES: dict[str, dict[Any, Any]] = {}  # per source file, as each module's __warningregistry__ for -j 1


def _taken(caught: list[warnings.WarningMessage]) -> Warned:
    taken = tuple((str(w.message), w.category, w.filename, w.lineno) for w in caught)
    caught.clear()
    return taken


def _reissue(warned: Warned) -> None:
    for text, category, filename, lineno in warned:
        warnings.warn_explicit(text, category, filename, lineno, registry=_REGISTRIES.setdefault(filename, {}))


# One file's events as a worker sends them: the file's errors, each trace's name, item (or what its run
# raised) and warnings, and what the file's reading raised or warned, in the order `file_runs` met them.
Event = LoopguardError | tuple[str, "RunItem | _Escaped", Warned] | _Escaped | Warned


def _slim(item: RunItem) -> RunItem:
    """The item as the output reads it: a passing loaded trace loses its steps and timeline (counts kept);
    a mismatch's table reads the steps around it, and a streamed result has none to lose."""
    if isinstance(item, LoopguardError):
        return item
    result, mismatches = item
    if mismatches or result.step_counts is not None:
        return item
    header = dataclasses.replace(result.trace, steps=())
    return ReplayResult(header, result.policy, result.outcome, result.stopped_at, result.stopped_by, (),
                        step_counts=result.counts()), mismatches


def replay_file(f: Path, policy: Policy | None, resolved: dict[Any, Policy], stream: bool,
                timelines: bool) -> list[Event]:
    """A worker's work on one file: `file_runs` with every trace run (a later duplicate is dropped by the
    parent's merge) and every exception and warning caught, to be raised or issued where one process would."""
    events: list[Event] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # all recorded: the command's filters choose what is shown
        warnings.simplefilter("ignore", LoopguardWarning)  # each trace carries its own; the command shows them
        try:
            for item in file_runs(f, policy, resolved, stream):
                if caught:
                    events.append(_taken(caught))  # warned while reading up to this item
                if isinstance(item, LoopguardError):
                    events.append(item)
                    continue
                name, run = item
                try:
                    got = run()
                except Exception as exc:  # raised in the parent, unless the name is a duplicate
                    events.append((name, _Escaped(exc), _taken(caught)))
                    continue
                events.append((name, got if timelines else _slim(got), _taken(caught)))
        except Exception as exc:  # reading the file raised: the run stops there, as in one process
            if caught:
                events.append(_taken(caught))
            events.append(_Escaped(exc))
        if caught:
            events.append(_taken(caught))
    return events


Work = Callable[[Path, Policy | None, dict[Any, Policy], bool, bool], list[Event]]  # replay_file's signature
WORK: Work = replay_file  # what the workers run on each file (the tests swap in a buggy one)


@dataclasses.dataclass(frozen=True)
class _Setup:
    """What every worker is started with."""

    cwd: str
    policy: str | dict[str, Any] | None  # the --policy option as given: each worker resolves it once
    stream: bool
    timelines: bool
    work: Work


def _worker(conn: Connection, slot: int, current: Any, setup: _Setup) -> None:
    """A worker's life: take a batch of (file number, path), send back each file's events; stop on None or
    when the parent is gone (EOF), or when it is terminated (an error, Ctrl-C)."""
    # Ctrl-C reaches the whole process group: the parent alone decides to stop, and ends the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminated)
    try:
        _work(conn, slot, current, setup)
    finally:
        # a worker ends with os._exit (no atexit): the external guard processes it started end here, with it
        pipe = sys.modules.get("pytest_loopguard.engines._pipe")
        if pipe is not None:
            pipe.shutdown_all()


def _terminated(signum: int, frame: Any) -> None:
    """Terminated (the parent's Ctrl-C or error): the guard processes this worker started are killed, then it
    exits at once. Raising SystemExit here instead would unwind through multiprocessing's bootstrap, which
    prints "Process NAME:" when the signal lands outside the worker's own code."""
    pipe = sys.modules.get("pytest_loopguard.engines._pipe")
    if pipe is not None:
        pipe.kill_all()
    os._exit(128 + signum)


def _policy(setup: _Setup) -> tuple[Policy | None, _Escaped | None]:
    """The --policy option resolved where the files are replayed, or what resolving it raised."""
    try:
        return (resolve_policy(setup.policy) if setup.policy is not None else None), None
    except Exception as exc:  # resolved once in the parent already; a file changed since
        return None, _Escaped(exc)


def _work(conn: Connection, slot: int, current: Any, setup: _Setup) -> None:
    os.chdir(setup.cwd)
    resolved: dict[Any, Policy] = {}
    policy, failed = _policy(setup)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        number, files = task
        out: list[list[Event]] = []
        for index, path in files:
            current[slot] = index
            out.append([failed] if failed is not None else
                       setup.work(Path(path), policy, resolved, setup.stream, setup.timelines))
        current[slot] = -1
        try:
            conn.send((number, out))
        except (BrokenPipeError, EOFError):
            return
        except Exception as exc:  # a result that does not pickle (a plugin's verdict data)
            conn.send((number, [_sendable(events, exc) for events in out]))


def replay_batch(setup: _Setup, files: list[tuple[int, str]]) -> list[list[Event]]:
    """A batch as one task on a cluster (`--backend dask`): each file's events, as a `-j` worker sends them.
    The worker runs in the command's folder (the corpus at the same path on every machine: shared storage)."""
    os.chdir(setup.cwd)
    resolved: dict[Any, Policy] = {}
    policy, failed = _policy(setup)
    try:
        return [[failed] if failed is not None else
                setup.work(Path(path), policy, resolved, setup.stream, setup.timelines) for _, path in files]
    finally:
        # a cluster's worker outlives the run: the guard processes this batch started end with it
        pipe = sys.modules.get("pytest_loopguard.engines._pipe")
        if pipe is not None:
            pipe.shutdown_all()


def _sendable(events: list[Event], error: Exception) -> list[Event]:
    import pickle

    try:
        pickle.dumps(events)
    except Exception:
        return [_Escaped(RuntimeError(f"a result cannot be sent between processes (run with -j 1): {error}"))]
    return events


# ---- the pool ------------------------------------------------------------------------------------------
def mp_context() -> ForkServerContext | SpawnContext | DefaultContext:
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # the workers fork from a server that imported the replay modules once
        context.set_forkserver_preload([f"{__package__}._jobs_preload"])
        return context
    return multiprocessing.get_context("spawn")


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """While workers start, the program's main module is out of sight: multiprocessing would have each one
    (and the forkserver) import it again, which fails for a program read from stdin and runs an unguarded
    script's own code once more. The workers never need it: everything they run is in a module of its own."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")  # no __file__, no __spec__: nothing to import
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


@dataclasses.dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    batch: int | None = None  # the batch it is on


def _death(process: BaseProcess) -> str:
    process.join(10)  # its pipe closed as it died: the exit status follows within moments
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}" if code is not None else "its pipe closed"


class _Pool:
    """`jobs` worker processes fed one batch each at a time; `results` gives the batches' results in order."""

    def __init__(self, jobs: int, setup: _Setup) -> None:
        context = mp_context()
        self._current = context.RawArray("q", [-1] * jobs)  # the file each worker is on: named if it dies
        self._workers: list[_Worker] = []
        self._finished = False
        self.most_in_flight = 0  # batches sent and not yet merged, at most: the reorder buffer's bound
        try:
            with main_module_hidden():
                for slot in range(jobs):
                    here, there = context.Pipe()
                    process = context.Process(target=_worker, args=(there, slot, self._current, setup),
                                              name=f"loopguard-run-{slot}", daemon=True)
                    process.start()
                    there.close()
                    self._workers.append(_Worker(process, here))
        except BaseException:
            self.close()
            raise

    def results(self, batches: Sequence[list[tuple[int, str]]], name: Callable[[int], str]) -> Iterator[list[Any]]:
        """Each batch's per-file events, in batch order, as soon as the batches before it are in. A worker that
        dies loses its batch: WorkerLost is raised when the merge reaches that batch (the batches before it
        were all sent already, batches go out in order), so what is shown before the error does not depend
        on when the worker died."""
        from multiprocessing.connection import wait

        window = WINDOW_PER_WORKER * len(self._workers)
        done: dict[int, list[Any] | WorkerLost] = {}  # batches in, waiting for an earlier one: the reorder buffer
        sent = merged_upto = 0
        live = list(enumerate(self._workers))
        while merged_upto < len(batches):
            while merged_upto in done:
                events = done.pop(merged_upto)
                if isinstance(events, WorkerLost):
                    raise events
                yield events
                merged_upto += 1
            if merged_upto == len(batches):
                break
            for _, worker in live:
                if worker.batch is None and sent < len(batches) and sent < merged_upto + window:
                    worker.conn.send((sent, batches[sent]))
                    worker.batch = sent
                    sent += 1
            self.most_in_flight = max(self.most_in_flight, sent - merged_upto)
            busy = [w for _, w in live if w.batch is not None]
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
            for slot, worker in list(live):
                batch = worker.batch
                if batch is None or not ready & {worker.conn, worker.process.sentinel}:
                    continue
                worker.batch = None
                try:
                    if worker.conn.poll():
                        number, events = worker.conn.recv()
                        done[number] = events
                        continue
                except (EOFError, OSError):
                    pass
                at: int = self._current[slot]
                file = name(at if at >= 0 else batches[batch][0][0])
                done[batch] = WorkerLost(f"a worker process died ({_death(worker.process)}) while replaying {file}; "
                                         "the run is incomplete")
                live = [(_, w) for _, w in live if w is not worker]
                sent = len(batches)  # nothing more goes out: the run ends at the lost batch
        self._finished = True

    def close(self) -> None:
        """Workers told to stop when the run is complete; ended at once otherwise (an error, Ctrl-C)."""
        for worker in self._workers:
            if self._finished:
                with contextlib.suppress(OSError):
                    worker.conn.send(None)
            else:
                worker.process.terminate()
            worker.conn.close()
        for worker in self._workers:
            worker.process.join()


# ---- the command's side ----------------------------------------------------------------------------------
def _given(item: RunItem | _Escaped, warned: Warned) -> RunItem:
    """A trace's item, once `merged` asks for it (never for a duplicate): its warnings, then it or its error."""
    _reissue(warned)
    if isinstance(item, _Escaped):
        raise item.exception()
    return item


def _runs(events: list[Event]) -> FileRuns:
    """A file's events as `merged` reads `file_runs`: warnings issued and exceptions raised where they were met."""
    for event in events:
        if isinstance(event, _Escaped):
            raise event.exception()
        if isinstance(event, LoopguardError):
            yield event
        elif event and isinstance(event[0], str):  # (name, item, warnings); a Warned holds tuples
            name, got, warned = event
            yield name, functools.partial(_given, got, warned)
        else:
            _reissue(event)  # warned while the file was read up to here


class Cluster(Protocol):
    """Where `--backend dask` runs the batches (cli/_dask.Cluster): its workers, and the tasks' results in order."""

    @property
    def workers(self) -> int: ...

    def results(self, task: Callable[..., list[list[Event]]], batches: Sequence[tuple[Any, ...]],
                describe: Callable[[int], str]) -> Iterator[list[list[Event]]]: ...


def batch_files(batch: Sequence[tuple[int, str]]) -> str:
    """A batch as an error names it: its file, or how many files from which to which."""
    first, last = batch[0][1], batch[-1][1]
    return first if len(batch) == 1 else f"{len(batch)} files, {first} .. {last}"


def run_jobs(
    paths: Sequence[str | Path],
    policy: Policy | None,
    spec: str | dict[str, Any] | None,
    jobs: int,
    *,
    skipped: list[NotATraceError] | None = None,
    stream: bool = True,
    cluster: Cluster | None = None,
) -> Iterator[RunItem]:
    """`run_paths(paths, policy, skipped=, stream=)` on `jobs` processes, or as tasks on `cluster`: the same items
    in the same order. `spec` is the policy as given (`policy` resolved from it), for the workers to resolve.
    Without a cluster, a corpus of fewer than two batches runs in this process: a pool's start-up costs more
    than it saves there (a cluster asked for is used whatever the corpus's size)."""
    files = list(trace_files(paths))
    size = batch_size(len(files), max(jobs, cluster.workers) if cluster is not None else jobs)
    if cluster is None and (jobs < 2 or len(files) < 2 * size):
        yield from run_paths(paths, policy, skipped=skipped, stream=stream)
        return
    numbered = [(i, str(f)) for i, (f, _) in enumerate(files)]
    batches = [numbered[i:i + size] for i in range(0, len(numbered), size)]
    setup = _Setup(os.getcwd(), spec, stream, not stream, WORK)
    if cluster is not None:
        results = cluster.results(replay_batch, [(setup, batch) for batch in batches],
                                  lambda b: batch_files(batches[b]))
        yield from merged(((files[index][0], files[index][1], _runs(events))
                           for outs, batch in zip(results, batches, strict=True)
                           for (index, _), events in zip(batch, outs, strict=True)), skipped)
        return
    pool = _Pool(min(jobs, len(batches)), setup)
    try:
        # results first: zip asks it for one more batch at the end, which lets it mark the run complete
        pooled = ((files[index][0], files[index][1], _runs(events))
                  for outs, batch in zip(pool.results(batches, lambda i: str(files[i][0])), batches, strict=True)
                  for (index, _), events in zip(batch, outs, strict=True))
        yield from merged(pooled, skipped)
    finally:
        pool.close()
