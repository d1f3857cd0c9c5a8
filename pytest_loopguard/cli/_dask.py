"""`--backend dask`: a command's batches run as tasks on a Dask cluster (a local one unless `--scheduler` names
one) and are read back in submission order, so the output is byte for byte that of one process.

Dask is an optional extra (`pytest-loopguard[dask]`): this module imports it only when a command asks for it.
A task is retried when it raises on a worker (`retries=`); a worker that dies while running a task has it
rescheduled by the scheduler up to `distributed.scheduler.allowed-failures` times, after which the batch is
reported in one line naming its files (WorkerLost, as `-j` reports a lost worker).
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, TypeVar

from ..errors import LoopguardError
from ._jobs import WorkerLost, main_module_hidden

__all__ = ["INSTALL_DASK", "Cluster", "DaskMissing"]

INSTALL_DASK: Final = "pip install 'pytest-loopguard[dask]'"
RETRIES: Final = 2  # a task that raised on a worker (a lost connection, not a replay's error: those are results)
WINDOW_PER_WORKER: Final = 4  # batches submitted and not yet read back, per worker: bounds the client's memory
CONNECT_S = 30  # seconds to wait for `--scheduler` to answer
# What distributed logs (workers starting, a cluster closing, a task given up on) would change stderr from
# `-j 1`'s, and a lost batch is reported in one line already. Set in the environment too, so that the worker
# processes (and those restarted after a crash) read it when they import distributed.
_QUIET_ENV: Final = {"DASK_LOGGING__DISTRIBUTED": "critical"}

R = TypeVar("R")


class DaskMissing(LoopguardError):
    """`--backend dask` without the `dask` extra installed."""

    def __init__(self) -> None:
        super().__init__(f"--backend dask needs Dask's distributed package: {INSTALL_DASK}")

    def __reduce__(self) -> Any:
        return DaskMissing, ()  # made from nothing: its message is fixed


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """distributed's logging off in this process and in the workers it starts, for the block."""
    saved = {key: os.environ.get(key) for key in _QUIET_ENV}
    os.environ.update(_QUIET_ENV)
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Cluster:
    """A client of the cluster at `scheduler`, or of a local cluster of `jobs` worker processes (one thread each,
    no dashboard), open for as long as the `with` block."""

    def __init__(self, jobs: int, scheduler: str | None) -> None:
        self.jobs = jobs
        self.scheduler = scheduler
        self._stack = contextlib.ExitStack()
        self._client: Any = None  # a distributed.Client (whose calls are untyped: Any, where it is installed)

    def __enter__(self) -> Cluster:
        try:
            import distributed as dask_distributed
        except ModuleNotFoundError:
            raise DaskMissing() from None
        distributed: Any = dask_distributed
        with self._stack as stack:
            stack.enter_context(_quiet())
            if self.scheduler is not None:
                try:
                    client = distributed.Client(self.scheduler, timeout=CONNECT_S)
                except (OSError, TimeoutError, ValueError) as exc:  # ValueError: not an address
                    raise LoopguardError(f"--scheduler {self.scheduler}: cannot reach the Dask scheduler: "
                                         f"{exc}") from None
            else:
                # the workers start (and restart, after a crash) with spawn: the program's main module stays
                # out of their sight while the cluster lives (see main_module_hidden)
                stack.enter_context(main_module_hidden())
                with warnings.catch_warnings():
                    # the scheduler's HTTP endpoint (health checks; no dashboard) takes another port when the
                    # default one is busy (another cluster on this machine): nothing the command should print
                    warnings.filterwarnings("ignore", "Port .* is already in use", UserWarning)
                    cluster = stack.enter_context(distributed.LocalCluster(
                        n_workers=max(1, self.jobs), threads_per_worker=1, processes=True, dashboard_address=None))
                client = distributed.Client(cluster)
            self._client = stack.enter_context(client)
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._client = None
        self._stack.close()

    @property
    def client(self) -> Any:
        if self._client is None:
            raise RuntimeError("the cluster is used outside its `with` block")
        return self._client

    @property
    def workers(self) -> int:
        """How many workers the cluster has now (at least one: the batches are sized for them)."""
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def results(self, task: Callable[..., R], batches: Sequence[tuple[Any, ...]],
                describe: Callable[[int], str]) -> Iterator[R]:
        """`task(*batch)` for each batch on the cluster, yielded in batch order. At most a window of batches is
        in flight; a batch that fails after its retries raises WorkerLost naming it (`describe(i)`: its files)."""
        from distributed import KilledWorker

        client = self.client
        window = WINDOW_PER_WORKER * self.workers
        pending: deque[tuple[int, Any]] = deque()  # (batch, its distributed.Future)
        submitted = 0

        def submit() -> None:
            nonlocal submitted
            pending.append((submitted, client.submit(task, *batches[submitted], pure=False, retries=RETRIES)))
            submitted += 1

        try:
            while submitted < len(batches) and len(pending) < window:
                submit()
            while pending:
                index, future = pending.popleft()
                try:
                    result: R = future.result()
                except KilledWorker:  # the scheduler gave up after allowed-failures deaths
                    raise WorkerLost(f"a Dask worker died on batch {index + 1} of {len(batches)} "
                                     f"({describe(index)}), on every try; the run is incomplete") from None
                except Exception as exc:  # raised in the task on every try: a replay's own errors are results
                    raise WorkerLost(f"batch {index + 1} of {len(batches)} ({describe(index)}) failed on the Dask "
                                     f"cluster: {type(exc).__name__}: {exc}; the run is incomplete") from None
                yield result
                if submitted < len(batches):
                    submit()
        finally:
            if pending:  # an error or an early stop: what is still queued is dropped on the cluster
                client.cancel([future for _, future in pending])
