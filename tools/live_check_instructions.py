#!/usr/bin/env python3
"""The live check's work in instructions: the bench's realistic mix through a Guard, for callgrind to count.

Wall-clock time on a shared machine moves by a fifth within minutes; instructions do not. Run under callgrind,
counting only inside the Guard's four calls (a compiled build names them as below; in pure Python, count the
whole run and subtract a run with `--mixes 0`):

    python hatch_build.py   # or put a compiled checkout first on PYTHONPATH
    valgrind --tool=callgrind --callgrind-out-file=/tmp/live.out --collect-atstart=no \\
        --toggle-collect='CPyPy__guard___Guard___start_turn' --toggle-collect='CPyPy__guard___Guard___before_call' \\
        --toggle-collect='CPyPy__guard___Guard___after_call' --toggle-collect='CPyPy__guard___Guard___end_turn' \\
        python tools/live_check_instructions.py
    callgrind_annotate --inclusive=yes /tmp/live.out | head -60

Divide the total by `--mixes` × 2,000 for instructions a check (docs/performance.md, "Where the goals stand").
The mixes are drawn before anything is counted, then frozen out of the collector's way (`gc.freeze()`), so what
is counted is the checks and the collections they cause.
"""

from __future__ import annotations

import argparse
import gc

from pytest_loopguard.bench._suite import REALISTIC_TASK, _live_loop, realistic_calls
from pytest_loopguard.runtime._policy import resolve_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixes", type=int, default=10, help="realistic mixes of 2,000 checks (seeds 0..N-1)")
    parser.add_argument("--policy", default="default")
    args = parser.parse_args()
    policy = resolve_policy(args.policy)
    mixes = [realistic_calls(seed) for seed in range(args.mixes)]
    gc.freeze()
    for mix in mixes:
        _live_loop(policy, mix, build=False, task=REALISTIC_TASK)


if __name__ == "__main__":
    main()
