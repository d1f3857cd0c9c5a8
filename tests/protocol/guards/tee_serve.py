"""`loopguard serve` that also appends every request and reply line to a log (argv: LOG POLICY): what went over the pipe."""

import sys

from pytest_loopguard.live import GuardServer

log_path, policy = sys.argv[1], sys.argv[2]
server = GuardServer(policy, now_ms=None)
with open(log_path, "a", encoding="utf-8") as log:
    for line in sys.stdin:
        reply = server.handle(line)
        log.write("> " + line.rstrip("\n") + "\n< " + reply + "\n")
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()
server.close()
