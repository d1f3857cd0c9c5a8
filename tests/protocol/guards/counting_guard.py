"""Our own Guard behind the guard protocol (as `loopguard serve`), which appends its process id to a file per `hello`.

    counting_guard.py HELLOS_FILE [POLICY]

The tests count the lines to know how many guard processes a run of the harness started.
"""

from __future__ import annotations

import os
import sys

from pytest_loopguard.live import GuardServer


def main() -> int:
    hellos = sys.argv[1]
    server = GuardServer(sys.argv[2] if len(sys.argv) > 2 else None, now_ms=None)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            if '"hello"' in line:
                with open(hellos, "a", encoding="ascii") as f:
                    f.write(f"{os.getpid()}\n")
            sys.stdout.write(server.handle(line) + "\n")
            sys.stdout.flush()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
