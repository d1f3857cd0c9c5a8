"""The long fuzz profile: `python tests/fuzz/run_fuzz.py --seed S --inputs N` from the repo root.

Draws N hostile inputs from seed S (tests/fuzz/mutations.py), runs each in a bounded worker
(tests/fuzz/harness.py), prints the count per outcome and every defect with the recipe that made it, and
exits 1 if there was any defect. `--keep DIR` keeps the inputs (default: a temporary folder).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import DEFECTS, run_inputs
from mutations import REPO, generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="write the inputs here and keep them")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loopguard-fuzz-") as scratch:
        folder = args.keep or Path(scratch)
        started = time.perf_counter()
        cases = generate(args.seed, args.inputs, folder)
        generated = time.perf_counter()
        recipes = {str(path): recipe for path, recipe in cases}
        counts: collections.Counter[str] = collections.Counter()
        for outcome in run_inputs([path for path, _ in cases], REPO):
            counts[outcome.kind] += 1
            if not outcome.ok:
                print(f"{outcome.kind}: {outcome.path}: {outcome.detail}\n    recipe: {recipes[outcome.path]}")
        done = time.perf_counter()
    print(f"seed {args.seed}: {len(cases)} inputs in {done - started:.0f} s "
          f"(generated in {generated - started:.0f} s)")
    print("  " + ", ".join(f"{kind} {counts[kind]}" for kind in ("accepted", "refused", *DEFECTS)))
    return 1 if any(counts[kind] for kind in DEFECTS) else 0


if __name__ == "__main__":
    sys.exit(main())
