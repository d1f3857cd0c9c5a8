"""An external guard process over a pipe: one JSON line out, exactly one JSON line back, within a time limit.

One process per command per Python process (an xdist worker has its own), reused run after run: `lease`
hands a run a process no other open run holds (starting one when needed), `release` gives it back at the
run's end. Everything that can go wrong with a process that is not ours — no reply in time, a malformed line,
a second reply, output before `hello`, an early exit, a flood of stderr, a request it does not read — ends
that process and is one line (`GuardProcessError`) naming the command, the run and the step; the process is
killed, never left behind (also at interpreter exit).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..core._wire import PROTOCOL_VERSION
from ..errors import GuardProcessError

__all__ = ["REQUESTS", "GuardProcess", "lease", "release", "shutdown_all"]

MAX_REPLY_BYTES: Final = 16 * 1024 * 1024  # one reply line; a longer one is a guard gone wrong
_STDERR_KEEP: Final = 2048  # the end of the guard's stderr, quoted in errors
_CHUNK: Final = 65536


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
                 env: Mapping[str, str] | None = None, label: str | None = None) -> None:
        self.command = tuple(command)
        self.label = label or shlex.join(self.command)
        self.timeout_s = timeout_s
        self.run_name = ""
        self.guard: Mapping[str, Any] = {}
        self._stderr = bytearray()
        self._buffer = bytearray()
        self.open_run = False  # a run_start was sent and its run_end not yet
        try:
            self._proc = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                env=None if env is None else {**os.environ, **env}, bufsize=0, close_fds=True,
            )
        except OSError as exc:
            raise GuardProcessError(f"external guard `{self.label}` could not start: {exc.strerror or exc}") from None
        assert self._proc.stdin is not None and self._proc.stdout is not None and self._proc.stderr is not None
        self._in, self._out, self._err = self._proc.stdin.fileno(), self._proc.stdout.fileno(), self._proc.stderr.fileno()
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self._readers = [self._out, self._err]  # stderr leaves once the guard closes it
        _LIVE.add(self)
        try:
            reply = self.request({"op": "hello", "protocol": PROTOCOL_VERSION}, "hello")
        except GuardProcessError:
            self.kill()
            raise
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
        if self._proc.returncode is not None or self._proc.stdin is None or self._proc.stdin.closed:
            raise self._error(where, "the guard process has already ended")
        try:
            data = _dumps(message)
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
            newline = self._buffer.find(b"\n")
            if newline >= 0 and sent == len(data):
                line = bytes(self._buffer[:newline])
                del self._buffer[:newline + 1]
                return self._parse(line, where)
            if len(self._buffer) > MAX_REPLY_BYTES:
                raise self._error(where, f"a reply longer than {MAX_REPLY_BYTES} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                what = "read the request" if sent < len(data) else "reply"
                raise self._error(where, f"did not {what} within {self.timeout_s:g} s")
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
        if self._buffer:
            raise self._error(where, f"wrote more than one line in reply: {_brief(bytes(self._buffer))}")
        try:
            return json.loads(line)
        except (ValueError, RecursionError):
            raise self._error(where, f"replied with a line that is not JSON: {_brief(line)}") from None

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
            raise self._error(where, f"wrote to stdout without a request (a second reply?): {_brief(bytes(self._buffer))}")

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
        try:
            self._proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            self._proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        _LIVE.discard(self)
        _POOL_FREE.pop(self, None)
        if self._proc.returncode is None:
            try:
                self._proc.kill()
            except OSError:
                pass
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover - the kernel did not reap a killed child
                pass
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


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
        if k == key:
            del _POOL_FREE[free]
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


@atexit.register
def shutdown_all() -> None:
    """End every guard process this process started (end of input first, then kill)."""
    for proc in list(_LIVE):
        proc.close(grace_s=0.5)
