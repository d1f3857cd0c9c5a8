"""A guard process that breaks the guard protocol in one chosen way, at one chosen request (the tests' adversary).

    hostile.py MODE [--at WHEN] [--code N] [--size BYTES] [--reply LINE] [--delay S] [--sticky] [--start-delay S]
               [--pids FILE] [--hellos FILE] [--reached FILE]

Until WHEN it is a correct guard that allows everything. WHEN is the request's number (`0` is `hello`,
`1` the first `run_start`) or `OP@INDEX` (the first `before_call` of step 3: `before_call@3`); default 0.
MODE at WHEN (once; `slow` from WHEN on): `silent` (reads the request, never replies), `garbage` (a line
that is not JSON), `twice` (replies; its second reply
to that request comes with its reply to the next one, in one write), `twice-joined` (both lines in
one write), `banner` (a line on stdout before anything is asked; WHEN unused), `exit` (exits with --code
without replying), `flood` (writes --size bytes to stderr, then replies correctly), `flood-silent` (floods
stderr, writes a last stderr line, never replies), `deaf` (answers, then stops reading stdin), `error`
(replies {"error": ...}), `reply` (replies --reply LINE verbatim), `huge` (a reply line of --size bytes),
`slow` (each reply waits --delay seconds), `twice-late` (replies; its second reply to that request comes on
its own, just before its reply to the next one), `sigint-parent` (sends SIGINT to the process that started it,
then never replies), `ok` (never breaks). `--sticky`: it does not exit at end of input; `--start-delay S`:
it reads nothing for S seconds after it starts (a slow start); `--echo-seq`: every reply carries the request's
`seq`, as the protocol lets a guard do.
`--pids FILE` appends the process id once at start, `--hellos FILE` once per `hello`, `--reached FILE` once
when WHEN comes. Only the standard library, run with `-I -S`, so it starts in tens of milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

ALLOW = b'{"verdicts":[]}\n'


def _out(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _append(path: str | None) -> None:
    if path:
        with open(path, "a", encoding="ascii") as f:
            f.write(f"{os.getpid()}\n")


def _hang() -> None:
    while True:
        time.sleep(3600)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode")
    p.add_argument("--at", default="0")
    p.add_argument("--code", type=int, default=3)
    p.add_argument("--size", type=int, default=10 * 1024 * 1024)
    p.add_argument("--reply", default="")
    p.add_argument("--pids")
    p.add_argument("--hellos")
    p.add_argument("--reached")
    p.add_argument("--sticky", action="store_true")
    p.add_argument("--start-delay", type=float, default=0.0)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--echo-seq", action="store_true")
    a = p.parse_args()
    _append(a.pids)
    time.sleep(a.start_delay)
    if a.mode == "banner":
        _out(b"my-guard 1.0 listening on stdin\n")
    stdin = sys.stdin.buffer
    number, reached, late = -1, False, b""
    while True:
        line = stdin.readline()
        if not line:
            if a.sticky:  # it does not end at end of input: only a kill ends it
                _hang()
            return 0
        number += 1
        request = json.loads(line)
        op = request.get("op")
        if not reached:
            if "@" in a.at:
                want_op, want_index = a.at.split("@")
                reached = op == want_op and request.get("index") == int(want_index)
            else:
                reached = number == int(a.at)
        reply = b'{"protocol":1,"guard":{"name":"hostile","version":"1"}}\n' if op == "hello" else ALLOW
        if a.echo_seq and isinstance(request.get("seq"), int):
            reply = reply[:-2] + b',"seq":' + str(request["seq"]).encode() + b"}\n"
        if op == "hello":
            _append(a.hellos)
        if not reached or a.mode in ("ok", "banner"):
            if late and a.mode == "ok" and a.echo_seq:
                _out(late)  # the late second reply on its own: the caller reads it as this request's reply
                late = b""
            _out(late + reply)
            late = b""
            continue
        mode = a.mode
        _append(a.reached)
        a.reached = None
        if mode != "slow":
            a.mode = "ok"  # it breaks the protocol once; after that (if it is still asked) it is correct
        if mode in ("silent",):
            _hang()
        elif mode == "garbage":
            _out(b"<html>502 Bad Gateway</html>\n")
        elif mode == "twice" or mode == "twice-late":
            _out(reply)
            late = reply
        elif mode == "twice-joined":
            _out(reply + reply)
        elif mode == "exit":
            return a.code
        elif mode == "flood":
            sys.stderr.buffer.write(b"x" * (a.size - 1) + b"\n")
            sys.stderr.buffer.flush()
            _out(reply)
        elif mode == "flood-silent":
            sys.stderr.buffer.write((b"y" * 99 + b"\n") * (a.size // 100))
            sys.stderr.buffer.write(b"guard: waiting for the rules database\n")
            sys.stderr.buffer.flush()
            _hang()
        elif mode == "deaf":
            _out(reply)
            _hang()
        elif mode == "error":
            _out(b'{"error": "rule table not loaded"}\n')
        elif mode == "reply":
            _out(a.reply.encode("utf-8") + b"\n")
        elif mode == "huge":
            _out(b'{"verdicts":[],"pad":"' + b"z" * a.size + b'"}\n')
        elif mode == "sigint-parent":  # the caller is interrupted while it waits for this reply
            os.kill(os.getppid(), signal.SIGINT)
            _hang()
        elif mode == "slow":
            time.sleep(a.delay)
            _out(reply)
        else:
            raise SystemExit(f"hostile.py: unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main())
