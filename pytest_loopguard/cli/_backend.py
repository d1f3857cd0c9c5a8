"""Where `run`, `eval` and `conform` do their work: the `-j`, `--backend` and `--scheduler` options, and the
ordered batch map `eval` and `conform` use (in this process, on `-j N` local processes, or on a Dask cluster);
every way yields the batches' results in batch order, so the output is that of one process."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, TypeVar

from ..errors import LoopguardError

__all__ = ["BACKENDS", "add_arguments", "batched", "check", "jobs_type", "ordered"]

BACKENDS: Final = ("local", "dask")
R = TypeVar("R")
T = TypeVar("T")


def jobs_type(text: str) -> int:
    from ._jobs import parse_jobs  # only when -j is given

    try:
        return parse_jobs(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """-j, --backend and --scheduler; `what` is the work, as the help names it ("replay", "score", ...)."""
    p.add_argument("-j", "--jobs", type=jobs_type, default=1, metavar="N",
                   help=f"{what} on N processes (with --backend dask: a local cluster of N workers), output "
                        "identical to one (0 or auto: one per CPU; default 1)")
    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local: this machine's processes (default); dask: batches as tasks on a Dask cluster "
                        "(the dask extra: docs/scale.md)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="with --backend dask: an existing cluster's scheduler, e.g. tcp://10.0.0.5:8786 "
                        "(default: a local cluster of -j workers)")


def check(args: argparse.Namespace) -> None:
    """--scheduler names a Dask cluster: it means nothing to the local backend."""
    if args.scheduler is not None and args.backend != "dask":
        raise LoopguardError("--scheduler ADDRESS is a Dask scheduler: give --backend dask with it")


def run_checked(body: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """`body(args)` once the backend options are checked; a batch whose worker kept dying is one line, exit 3 (a
    worker killed, out of memory say, rather than a bug: no "please report it")."""
    from ._common import EXIT_INTERNAL, error
    from ._jobs import WorkerLost

    check(args)
    try:
        return body(args)
    except WorkerLost as exc:
        error(exc)
        return EXIT_INTERNAL


def batched(items: Sequence[T], workers: int, low: int, high: int, per_worker: int = 8) -> list[Sequence[T]]:
    """`items` in batches of about len/(workers × per_worker), within low..high items each."""
    size = max(low, min(high, -(-len(items) // (max(1, workers) * per_worker))))
    return [items[i:i + size] for i in range(0, len(items), size)]


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group: the command alone stops, and drops the batches still queued
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def ordered(task: Callable[..., R], make: Callable[[int], Sequence[tuple[Any, ...]]], args: argparse.Namespace,
            describe: Callable[[int], str]) -> Iterator[R]:
    """`task(*batch)` for every batch `make(workers)` gives (sized for that many workers), in batch order: in
    this process (-j 1), on -j local processes, or on the Dask cluster the options name. A batch lost with its
    process, or failing on the cluster after its retries, raises WorkerLost naming it (`describe(i)`)."""
    if args.backend == "dask":
        from ._dask import Cluster

        with Cluster(args.jobs, args.scheduler) as cluster:
            yield from cluster.results(task, make(max(args.jobs, cluster.workers)), describe)
        return
    batches = make(args.jobs)
    if args.jobs < 2 or len(batches) < 2:
        for batch in batches:
            yield task(*batch)
        return
    yield from _local(task, batches, args.jobs, describe)


def _local(task: Callable[..., R], batches: Sequence[tuple[Any, ...]], jobs: int,
           describe: Callable[[int], str]) -> Iterator[R]:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from ._jobs import WorkerLost, main_module_hidden, mp_context

    with main_module_hidden():  # the workers start as the tasks go out: see main_module_hidden
        executor = ProcessPoolExecutor(min(jobs, len(batches)), mp_context=mp_context(), initializer=_ignore_sigint)
        try:
            futures = [executor.submit(task, *batch) for batch in batches]
            for index, future in enumerate(futures):
                try:
                    result = future.result()
                except BrokenProcessPool:
                    raise WorkerLost(f"a worker process died on batch {index + 1} of {len(batches)} "
                                     f"({describe(index)}); the run is incomplete") from None
                yield result
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
