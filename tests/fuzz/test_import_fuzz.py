"""The fast import/eval fuzz profile: hostile agent logs drawn from the real corpus, the calibration tarball's
members, the recorded sessions and the SDK fixtures (tests/fuzz/import_mutations.py) must each end, through
`import` (+ `validate` on its output), `eval` and `scan` (named, with `--save` and `--report`, and found in a
fake home's agent places), accepted or refused in our one-line error naming the input,
writing nothing outside the output folder, within the harness's CPU and memory bounds. The long profile:
`python tests/fuzz/run_import_fuzz.py --seed S --inputs N` (docs/import.md, "Hostile logs")."""

from __future__ import annotations

import collections
import os
from pathlib import Path

import pytest
from harness import run_inputs
from import_mutations import REPO, generate
from import_worker import DEFECTS

WORKER = Path(__file__).resolve().parent / "import_worker.py"
SEED = int(os.environ.get("LOOPGUARD_FUZZ_SEED", "20261127"))
INPUTS = 24
SMALL = 120_000  # bytes: the fast profile draws from the smaller bases only


def _run(seed: int, count: int, folder: Path, max_bytes: int | None) -> tuple[collections.Counter[str], list[str]]:
    cases = generate(seed, count, folder, max_bytes)
    recipes = {str(path.parent): recipe for path, recipe in cases}
    counts: collections.Counter[str] = collections.Counter()
    defects = []
    for outcome in run_inputs([path.parent for path, _ in cases], REPO, WORKER):
        counts[outcome.kind] += 1
        if outcome.kind in DEFECTS:
            defects.append(f"{outcome.kind}: {outcome.detail} (recipe: {recipes[outcome.path]!r})")
    return counts, defects


def test_fuzzed_logs_are_imported_or_refused_in_one_line(tmp_path: Path) -> None:
    counts, defects = _run(SEED, INPUTS, tmp_path, SMALL)
    assert defects == []
    assert counts["accepted"] + counts["refused"] == INPUTS and counts["refused"] >= 1, counts


@pytest.mark.slow
def test_long_profile_on_every_base(tmp_path: Path) -> None:
    counts, defects = _run(SEED + 1, 400, tmp_path, None)
    assert defects == [] and counts["accepted"] > 0


def test_the_same_seed_draws_the_same_logs(tmp_path: Path) -> None:
    first = generate(7, 12, tmp_path / "a", SMALL)
    second = generate(7, 12, tmp_path / "b", SMALL)
    assert [recipe for _, recipe in first] == [recipe for _, recipe in second]
    assert [path.read_bytes() for path, _ in first] == [path.read_bytes() for path, _ in second]
