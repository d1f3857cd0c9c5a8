"""The long import/eval fuzz profile: `python tests/fuzz/run_import_fuzz.py --seed S --inputs N` from the repo root.

Draws N hostile agent logs from seed S (tests/fuzz/import_mutations.py, every base file of any size), runs
each through `import` (+ `validate`), `eval` and `scan` in a bounded worker (tests/fuzz/import_worker.py), prints
the count per outcome and every defect with the recipe that made it, and exits 1 if there was any defect.
`--keep DIR` keeps the inputs (default: a temporary folder).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import run_inputs
from import_mutations import REPO, generate
from import_worker import DEFECTS

WORKER = Path(__file__).resolve().parent / "import_worker.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--inputs", type=int, default=1_000)
    parser.add_argument("--keep", type=Path, help="write the inputs here and keep them")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loopguard-import-fuzz-") as scratch:
        folder = args.keep or Path(scratch)
        started = time.perf_counter()
        cases = generate(args.seed, args.inputs, folder)
        recipes = {str(path.parent): recipe for path, recipe in cases}
        counts: collections.Counter[str] = collections.Counter()
        for outcome in run_inputs([path.parent for path, _ in cases], REPO, WORKER):
            counts[outcome.kind] += 1
            if outcome.kind not in ("accepted", "refused"):
                print(f"{outcome.kind}: {outcome.path}: {outcome.detail}\n    recipe: {recipes[outcome.path]!r}")
        done = time.perf_counter()
    print(f"seed {args.seed}: {len(cases)} inputs in {done - started:.0f} s")
    print("  " + ", ".join(f"{kind} {counts[kind]}" for kind in ("accepted", "refused", *DEFECTS)))
    return 1 if any(counts[kind] for kind in DEFECTS) else 0


if __name__ == "__main__":
    sys.exit(main())
