"""Work functions a `loopguard run -j` worker runs in the tests (`run_jobs.WORK`): imported by name in the
worker process, so they live in a module of their own, not in a test file.

Each behaves as `run_jobs.replay_file` except on files whose name says otherwise: `boom*` raises while it
is read (`policyerr*` raises a PolicyError), a trace named `explodes` in a file named *late* raises while
it is replayed (a trace of another file with that name does not: a later one is a duplicate), `kill*`
kills the worker (`killing_once_work`: the first time only, so a batch retried elsewhere replays it),
`block*` waits on the FIFO named by LOOPGUARD_TEST_FIFO (it writes its pid there, and whether it ignores
SIGINT) until the worker is ended. `warning_work` warns as a plugin might.
"""

from __future__ import annotations

import functools
import os
import signal
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_loopguard.cli import _corpus as stream
from pytest_loopguard.cli import _jobs as run_jobs
from pytest_loopguard.errors import PolicyError

_real_file_runs = stream.file_runs
_real_executed = stream._executed


def exploding_file_runs(f: Path, policy: Any, resolved: Any, streamed: bool) -> Iterator[Any]:
    """`stream.file_runs` with a bug: a file named boom* raises while it is read."""
    if f.name.startswith("boom"):
        raise ZeroDivisionError(f"boom in {f.name}")
    if f.name.startswith("policyerr"):  # an error of its own that reaches cli.main, as a policy gone bad could
        raise PolicyError("unknown preset 'gone'", source=f.name)
    yield from _real_file_runs(f, policy, resolved, streamed)


def exploding_executed(trace: Any, policy: Any, resolved: Any) -> Any:
    """`stream._executed` with a bug: a trace named `explodes` in a file named *late* raises while replayed."""
    if trace.name == "explodes" and "late" in Path(trace.path).name:
        raise KeyError("explodes")
    return _real_executed(trace, policy, resolved)


class Unpicklable(Exception):
    """An exception that cannot be made again from its args (a required keyword)."""

    def __init__(self, text: str, *, code: int) -> None:
        super().__init__(text)
        self.code = code


def raising_executed(trace: Any, policy: Any, resolved: Any) -> Any:
    if trace.name == "explodes":
        raise Unpicklable("cannot be pickled back", code=7)
    return _real_executed(trace, policy, resolved)


def exploding_work(f: Path, *args: Any) -> list[Any]:
    stream.file_runs = exploding_file_runs  # in the worker process only
    stream._executed = exploding_executed
    run_jobs.file_runs = exploding_file_runs
    return run_jobs.replay_file(f, *args)


def unpicklable_work(f: Path, *args: Any) -> list[Any]:
    stream._executed = raising_executed
    return run_jobs.replay_file(f, *args)


def killing_work(f: Path, *args: Any) -> list[Any]:
    if f.name.startswith("kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    return run_jobs.replay_file(f, *args)


def blocking_work(f: Path, *args: Any) -> list[Any]:
    if f.name.startswith("block"):
        with open(os.environ["LOOPGUARD_TEST_FIFO"], "w", encoding="utf-8") as fifo:
            # and whether Ctrl-C is left to the parent: a worker that took it would print its own traceback
            fifo.write(f"{os.getpid()} {signal.getsignal(signal.SIGINT) is signal.SIG_IGN}\n")
        signal.pause()  # until the parent ends this worker
    return run_jobs.replay_file(f, *args)


def _noisy_run(run: Any, where: str) -> Any:
    if where.startswith("noisy"):
        warnings.warn(f"noisy trace {where}", UserWarning, stacklevel=1)
    return run()


def warning_file_runs(f: Path, policy: Any, resolved: Any, streamed: bool) -> Iterator[Any]:
    """`stream.file_runs` of a plugin that warns: reading a file named warn* (one text for all of them, so
    Python shows it once), and running a trace named noisy* (the text names its file)."""
    if f.name.startswith("warn"):
        warnings.warn("odd file", UserWarning, stacklevel=1)
    for item in _real_file_runs(f, policy, resolved, streamed):
        if isinstance(item, tuple):
            name, run = item
            item = name, functools.partial(_noisy_run, run, f"{name} in {f.name}")
        yield item
    if f.name.startswith("warn"):
        warnings.warn(f"read all of {f.name}", UserWarning, stacklevel=1)


def warning_work(f: Path, *args: Any) -> list[Any]:
    stream.file_runs = warning_file_runs
    run_jobs.file_runs = warning_file_runs
    return run_jobs.replay_file(f, *args)


def unsendable_work(f: Path, *args: Any) -> list[Any]:
    """A file named unsendable* gives a result that does not pickle (as a plugin's verdict data might)."""
    events = run_jobs.replay_file(f, *args)
    if f.name.startswith("unsendable"):
        name, item, warned = events[0]
        return [(name, (item[0], [lambda: "not picklable"]), warned)]
    return events


def killing_once_work(f: Path, *args: Any) -> list[Any]:
    """`kill*` files kill the worker the first time one is replayed (a mark beside the file says it was), and
    replay as usual when the batch is tried again on another worker."""
    mark = f.with_name(f.name + ".killed")
    if f.name.startswith("kill") and not mark.exists():
        mark.write_text("", encoding="utf-8")
        os.kill(os.getpid(), signal.SIGKILL)
    return run_jobs.replay_file(f, *args)
