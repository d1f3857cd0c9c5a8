"""An external guard process over a pipe: one JSON line out, exactly one JSON line back, within a time limit.

One process per command per Python process (an xdist worker has its own), reused run after run: `lease`
hands a run a process no other open run holds (starting one when needed), `release` gives it back at the
run's end. Everything that can go wrong with a process that is not ours — no reply in time, a malformed line,
a second reply, output before `hello`, an early exit, a flood of stderr, a request it does not read — ends
that process and is one line (`GuardProcessError`) naming the command, the run and the step; the process is
killed, never left behind (also at interpreter exit).

With `LOOPGUARD_GUARD_CPU=same` in the environment (the `loopguard` command sets it unless it is set), the first
thread that starts a guard process is moved to a CPU no other process has claimed (`claim_cpu`) and every guard
process it starts runs there too. A request and its reply never overlap, so the two lose no parallelism, and a
guard woken on the CPU its caller just gave up answers three times sooner than one woken on another, idle CPU (a
trivial guard: ~60 µs per event → ~20 µs here). Linux only; elsewhere, with any other value, and when every CPU is
claimed, the processes run where the system puts them.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shlex
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..core._machine import GUARD_CPU_ENV, claim_cpu, release_cpu, set_cpu, usable_cpus
from ..core._wire import PROTOCOL_VERSION
from ..errors import GuardProcessError

__all__ = ["REQUESTS", "GuardProcess", "kill_all", "lease", "release", "shutdown_all"]

MAX_REPLY_BYTES: Final = 16 * 1024 * 1024  # one reply line; a longer one is a guard gone wrong
# the reply to hello comes after the guard's start (an interpreter, `npx` fetching a package, a loaded CI
# machine): at least this long, whatever the per-reply limit
START_TIMEOUT_S: Final = 10.0
_STDERR_KEEP: Final = 2048  # the end of the guard's stderr, quoted in errors
_CHUNK: Final = 65536
# How long to poll for a reply before sleeping in select: a guard answers most requests in tens of µs, and a
# process woken from select pays the scheduler's wake-up on top (about half of a trivial guard's round trip
# here). Only with a second CPU, where the guard runs meanwhile; on one, polling would only delay it.
_POLL_S: Final = 50e-6 if usable_cpus() > 1 else 0.0


class _Shared:
    """The CPU a thread shares with the guard processes it starts (`LOOPGUARD_GUARD_CPU=same`), chosen at the
    first start; `thread` is that thread's identity (None: not chosen yet, or not shared)."""

    __slots__ = ("before", "chosen", "cpu", "thread")

    def __init__(self) -> None:
        self.chosen = False
        self.cpu: int | None = None
        self.thread: int | None = None
        self.before: set[int] = set()  # the thread's CPUs before it was moved to one

    def for_new_guard(self) -> int | None:
        """The CPU a guard started now by this thread is to run on, or None (anywhere)."""
        if not self.chosen:
            self.chosen = True
            if os.environ.get(GUARD_CPU_ENV) == "same":
                cpu = claim_cpu()  # None when every CPU is another process's: then the system places them
                before = os.sched_getaffinity(0) if cpu is not None else set()
                if cpu is not None and set_cpu(0, cpu):
                    self.cpu, self.thread, self.before = cpu, threading.get_ident(), before
                elif cpu is not None:
                    release_cpu(cpu)
        return self.cpu if self.thread is not None and self.thread == threading.get_ident() else None

    def reset(self) -> None:
        """Choose again at the next start (the environment may have changed); the thread that was moved to one
        CPU may use its CPUs again when it is the caller. For `loopguard bench` and tests: the guard processes
        already started stay where they are."""
        if self.thread == threading.get_ident() and self.before:
            os.sched_setaffinity(0, self.before)
        if self.cpu is not None:
            release_cpu(self.cpu)
        self.chosen, self.cpu, self.thread, self.before = False, None, None, set()


SHARED: Final = _Shared()

_BEFORE_HELLO: Final = "wrote to stdout before its reply to hello (stdout carries the replies alone; log to stderr): "


class _Counter:
    """Requests sent by this process, every guard together (`loopguard bench` divides by it)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


REQUESTS: Final = _Counter()


# ensure_ascii: a lone surrogate in a recorded string stays writable; compact separators: less to pipe; built
# once (json.dumps with options builds an encoder per call)
_ENCODE: Final = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode


def _dumps(value: Any) -> bytes:
    return _ENCODE(value).encode("ascii") + b"\n"


class GuardProcess:
    """One running guard: `request` sends one message and returns the one reply (a parsed JSON value)."""

    def __init__(self, command: Sequence[str], *, timeout_s: float, cwd: str | None = None,
                 env: Mapping[str, str] | None = None, label: str | None = None, run_name: str = "",
                 start_timeout_s: float | None = None) -> None:
        self.command = tuple(command)
        self.label = label or shlex.join(self.command)
        self.timeout_s = timeout_s
        self.run_name = run_name  # the run it serves (the one that started it, until the next run_start)
        self.guard: Mapping[str, Any] = {}
        self._stderr = bytearray()
        self._buffer = bytearray()
        self._scanned = 0  # how much of _buffer is known to hold no newline: each byte is searched once
        self.open_run = False  # a run_start was sent and its run_end not yet
        self._seq = 0  # the number of the last request sent
        try:
            self._proc = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                env=None if env is None else {**os.environ, **env}, bufsize=0, close_fds=True,
            )
        except OSError as exc:
            run = f", run {run_name!r}" if run_name else ""
            raise GuardProcessError(f"external guard `{self.label}`{run}: could not start: {exc.strerror or exc}"
                                    ) from None
        _LIVE.add(self)  # at once: a Ctrl-C from here on still ends it (at exit)
        self.cpu = SHARED.for_new_guard()  # the CPU it shares with this thread, if it does
        if self.cpu is not None and not set_cpu(self._proc.pid, self.cpu):
            self.cpu = None
        assert self._proc.stdin is not None and self._proc.stdout is not None and self._proc.stderr is not None
        self._in, self._out = self._proc.stdin.fileno(), self._proc.stdout.fileno()
        self._err = self._proc.stderr.fileno()
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self._readers = [self._out, self._err]  # stderr leaves once the guard closes it
        self.timeout_s = start_timeout_s if start_timeout_s is not None else max(timeout_s, START_TIMEOUT_S)
        reply = self.request({"op": "hello", "protocol": PROTOCOL_VERSION}, "hello")  # it is killed if this fails
        self.timeout_s = timeout_s
        if not isinstance(reply, dict) or reply.get("protocol") != PROTOCOL_VERSION:
            self.kill()
            raise self._error("hello", f"expected {{\"protocol\": {PROTOCOL_VERSION}, \"guard\": {{...}}}} in reply to "
                                       f"hello, got {_brief(reply)}")
        guard = reply.get("guard")
        self.guard = guard if isinstance(guard, dict) else {}

    @property
    def alive(self) -> bool:
        return self._proc.returncode is None and self._proc.poll() is None

    # ---- one request, one reply -------------------------------------------------------------------------
    def request(self, message: Mapping[str, Any], where: str) -> Any:
        """Send `message`; its one reply, parsed. `where` names the run's step for errors."""
        try:
            return self._request(message, where)
        except GuardProcessError:
            raise
        except BaseException:
            # interrupted mid-request (Ctrl-C, a signal handler's exception): a reply may be on its way, which
            # the next request would take for its own, so this process serves no one any more
            self.kill()
            raise

    def _request(self, message: Mapping[str, Any], where: str) -> Any:
        if self._proc.returncode is not None or self._proc.stdin is None or self._proc.stdin.closed:
            raise self._error(where, "the guard process has already ended")
        # every request is numbered; a guard that echoes `seq` in its reply lets a reply that arrives one request
        # late (a second reply written after the caller moved on) be caught at once instead of shifting the rest
        self._seq = seq = self._seq + 1
        try:
            data = _dumps({**message, "seq": seq})
        except (TypeError, ValueError) as exc:  # a value JSON cannot carry (NaN from a policy's own numbers)
            raise self._error(where, f"the request cannot be written as JSON: {exc}") from None
        self._drain_stray(where)
        REQUESTS.count += 1
        deadline = time.monotonic() + self.timeout_s
        view = memoryview(data)
        try:  # a pipe has room for a request nearly always: write before asking select
            sent = os.write(self._in, view[:_CHUNK])
        except BlockingIOError:
            sent = 0
        except BrokenPipeError:
            raise self._error(where, self._exited("before reading the request")) from None
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0 and sent == len(data):
                line = bytes(self._buffer[:newline])
                del self._buffer[:newline + 1]
                self._scanned = 0
                return self._parse(line, where)
            self._scanned = len(self._buffer) if newline < 0 else newline
            if len(self._buffer) > MAX_REPLY_BYTES:
                raise self._error(where, f"a reply longer than {MAX_REPLY_BYTES} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                what = "read the request" if sent < len(data) else "reply"
                raise self._error(where, f"did not {what} within {self.timeout_s:g} s")
            # the request is out: look for the reply a moment before sleeping, unless the guard runs on this CPU
            if sent == len(data) and _POLL_S and (self.cpu is None or SHARED.thread != threading.get_ident()):
                chunk = self._poll(self._out, _POLL_S)
                if chunk is not None:
                    if not chunk:
                        raise self._error(where, self._exited("without a reply"))
                    self._buffer += chunk
                    continue
            writers = [self._in] if sent < len(data) else []
            readable, writable, _ = select.select(self._readers, writers, [], remaining)
            if writable:
                try:
                    sent += os.write(self._in, view[sent:sent + _CHUNK])
                except BrokenPipeError:
                    raise self._error(where, self._exited("before reading the request")) from None
                except BlockingIOError:
                    pass
            if self._err in readable:
                self._read_stderr()
            if self._out in readable:
                chunk = self._read(self._out)
                if chunk is None:
                    continue
                if not chunk:
                    raise self._error(where, self._exited("without a reply"))
                if sent < len(data):
                    raise self._error(where, "wrote to stdout before it was sent the whole request")
                self._buffer += chunk

    def _parse(self, line: bytes, where: str) -> Any:
        if self._buffer and where == "hello":  # a banner, then the reply to hello
            raise self._error(where, _BEFORE_HELLO + _brief(line))
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
            if where == "hello":
                raise self._error(where, _BEFORE_HELLO + _brief(line)) from None
            if self._buffer:
                raise self._error(where, f"wrote more than one line in reply: {_brief(bytes(self._buffer))}") from None
            raise self._error(where, f"replied with a line that is not JSON: {_brief(line)}") from None
        # a reply that names another request says most about what went wrong: checked before extra output
        if type(reply) is dict and "seq" in reply:
            if reply["seq"] != self._seq:
                raise self._error(where, f"replied to request {_brief(reply['seq'])}, not to this one "
                                         f"({self._seq}): a reply came late or twice")
            del reply["seq"]
        if self._buffer:
            raise self._error(where, f"wrote more than one line in reply: {_brief(bytes(self._buffer))}")
        return reply

    def _drain_stray(self, where: str) -> None:
        """Anything the guard wrote since its last reply (a second reply, unasked output) breaks the protocol."""
        readable, _, _ = select.select(self._readers, [], [], 0)
        if self._err in readable:
            self._read_stderr()
        if self._out in readable:
            chunk = self._read(self._out)
            if chunk == b"":
                raise self._error(where, self._exited("between requests"))
            if chunk:
                self._buffer += chunk
        if self._buffer:
            if where == "hello":
                raise self._error(where, _BEFORE_HELLO + _brief(bytes(self._buffer)))
            raise self._error(where, "wrote to stdout without a request (a second reply?): "
                                     + _brief(bytes(self._buffer)))

    @classmethod
    def _poll(cls, fd: int, seconds: float) -> bytes | None:
        """What `fd` gives within `seconds` of polling (b"" at its end), or None when nothing came."""
        end = time.perf_counter() + seconds
        while True:
            chunk = cls._read(fd)
            if chunk is not None or time.perf_counter() >= end:
                return chunk

    @staticmethod
    def _read(fd: int) -> bytes | None:
        """What `fd` has now: b"" at its end, None when nothing after all."""
        try:
            return os.read(fd, _CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def _read_stderr(self) -> None:
        chunk = self._read(self._err)
        if chunk == b"":
            self._readers = [self._out]
        elif chunk:
            self._stderr += chunk
            if len(self._stderr) > 4 * _STDERR_KEEP:
                del self._stderr[:-_STDERR_KEEP]

    def _exited(self, when: str) -> str:
        try:
            code = self._proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return f"closed its stdout {when}"
        return f"exited {when} (exit code {code})"

    def _error(self, where: str, problem: str) -> GuardProcessError:
        self.kill()
        tail = bytes(self._stderr[-_STDERR_KEEP:]).decode("utf-8", "replace").strip().splitlines()
        last = f"; its stderr ends: {_brief(tail[-1])}" if tail else ""
        run = f", run {self.run_name!r}" if self.run_name else ""
        return GuardProcessError(f"external guard `{self.label}`{run}, {where}: {problem}{last}")

    # ---- the end ---------------------------------------------------------------------------------------
    def close(self, grace_s: float = 1.0) -> None:
        """End of input: a guard exits 0 on it; one that does not within `grace_s` is killed."""
        _LIVE.discard(self)
        if self._proc.returncode is not None:
            return
        with contextlib.suppress(OSError):
            self._proc.stdin.close()  # type: ignore[union-attr]
        try:
            self._proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        _LIVE.discard(self)
        _POOL_FREE.pop(self, None)
        if self._proc.returncode is None:
            with contextlib.suppress(OSError):
                self._proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):  # the kernel reaps a killed child at once
                self._proc.wait(timeout=5)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _brief(value: Any) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = value if isinstance(value, str) else json.dumps(value, default=repr)[:200]
    text = text.strip().replace("\n", "\\n").replace("\r", "\\r")
    return repr(text if len(text) <= 80 else text[:79] + "…")


# ---- the pool: one process per command, reused by one run at a time ------------------------------------------
_LIVE: set[GuardProcess] = set()  # every process started and not yet ended: killed at exit
_POOL_FREE: dict[GuardProcess, tuple[Any, ...]] = {}  # processes no run holds, by their key


def lease(key: tuple[Any, ...], start: Any) -> GuardProcess:
    """A free live process started for `key`, else a new one from `start()`."""
    for free, k in list(_POOL_FREE.items()):
        # pop, not del: a run in another thread may have taken it since the look (one pop wins, atomically)
        if k == key and _POOL_FREE.pop(free, None) is not None:
            if free.alive:
                return free
            free.kill()
    started: GuardProcess = start()
    return started


def release(proc: GuardProcess, key: tuple[Any, ...]) -> None:
    """`proc` is free for the next run of `key` (a dead one is dropped)."""
    if proc.alive:
        _POOL_FREE[proc] = key
    else:
        proc.kill()


def kill_all() -> None:
    """Kill every guard process this process started, at once (a worker terminated by its parent)."""
    for proc in list(_LIVE):
        proc.kill()


@atexit.register
def shutdown_all() -> None:
    """End every guard process this process started (end of input first, then kill)."""
    for proc in list(_LIVE):
        proc.close(grace_s=0.5)
