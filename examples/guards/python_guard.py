#!/usr/bin/env python3
"""A guard process in Python that wraps pytest-loopguard's own Guard, over the guard protocol (docs/protocol.md).

    loopguard conform "python examples/guards/python_guard.py roo" traces --against roo

It is `loopguard serve` written out: read a request per line, let `GuardServer` call the Guard, write the
reply. Swap `GuardServer` for your own class with the same `handle(line) -> str` to put your Python guard
behind the protocol. The policy is the first argument (default: the one each run_start names, else default).
"""

from __future__ import annotations

import sys

from pytest_loopguard.live import GuardServer


def main() -> int:
    server = GuardServer(sys.argv[1] if len(sys.argv) > 1 else None, now_ms=None)
    try:
        for line in sys.stdin:
            if line.strip():
                sys.stdout.write(server.handle(line) + "\n")
                sys.stdout.flush()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
