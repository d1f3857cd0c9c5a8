"""The fast fuzz profile: hostile inputs drawn by hypothesis from the bundled traces, scenarios and presets
(tests/fuzz/mutations.py) must each be accepted and replayed or refused with our one-line error naming the
file, within the harness's CPU and memory bounds. The long profile is `python tests/fuzz/run_fuzz.py`
(docs/trace-format.md, "Hostile input")."""

from __future__ import annotations

import collections
import os
from pathlib import Path

from harness import run_inputs
from mutations import REPO, generate

# A fixed seed keeps CI reproducible; LOOPGUARD_FUZZ_SEED picks another one for a local run.
SEED = int(os.environ.get("LOOPGUARD_FUZZ_SEED", "20261124"))
INPUTS = 150


def test_fuzzed_inputs_are_accepted_or_refused_in_one_line(tmp_path: Path) -> None:
    cases = generate(SEED, INPUTS, tmp_path)
    assert len(cases) == INPUTS
    recipes = {str(path): recipe for path, recipe in cases}
    counts: collections.Counter[str] = collections.Counter()
    defects = []
    for outcome in run_inputs([path for path, _ in cases], REPO):
        counts[outcome.kind] += 1
        if not outcome.ok:
            defects.append(f"{outcome.kind}: {outcome.detail} (recipe: {recipes[outcome.path]})")
    assert defects == []
    # both ends are exercised: some inputs survive their mutations, most are refused
    assert counts["accepted"] >= INPUTS // 20 and counts["refused"] >= INPUTS // 2, counts


def test_the_same_seed_draws_the_same_inputs(tmp_path: Path) -> None:
    first = generate(7, 20, tmp_path / "a")
    second = generate(7, 20, tmp_path / "b")
    assert [recipe for _, recipe in first] == [recipe for _, recipe in second]
    assert [path.read_bytes() for path, _ in first] == [path.read_bytes() for path, _ in second]
