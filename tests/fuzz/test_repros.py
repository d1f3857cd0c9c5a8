"""Every input in ../shared/fuzz-repros/ (one per defect the first fuzz run found) ends as accepted and
replayed or as our one-line error naming the file, within the harness's CPU and memory bounds. The files are
read in place; nothing is copied or written there."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from harness import Outcome, run_inputs

from pytest_loopguard.errors import PolicyError
from pytest_loopguard.runtime._policy import resolve_policy

REPO = Path(__file__).resolve().parents[2]
REPROS = REPO.parent / "shared" / "fuzz-repros"
INDEX = json.loads((REPROS / "index.json").read_text(encoding="utf-8")) if REPROS.is_dir() else []
INPUTS = [REPROS / entry["file"] for entry in INDEX]


@functools.cache
def outcomes() -> dict[str, Outcome]:
    """Every repro through one bounded worker (run once per test process, whichever test asks first)."""
    return {outcome.path: outcome for outcome in run_inputs(INPUTS, REPO)}


def test_the_repro_folder_is_there_and_complete() -> None:
    assert len(INDEX) == 56
    assert all(path.is_file() for path in INPUTS)


@pytest.mark.parametrize("path", INPUTS, ids=[p.name for p in INPUTS])
def test_repro_is_accepted_or_refused_in_one_line(path: Path) -> None:
    outcome = outcomes()[str(path)]
    assert outcome.ok, f"{outcome.kind}: {outcome.detail}"


@pytest.mark.parametrize("name", ["06.yaml", "12.yaml", "14.yaml"])
def test_a_preset_name_that_climbs_out_of_the_presets_folder_is_unknown(name: str) -> None:
    outcome = outcomes()[str(REPROS / name)]
    assert outcome.kind == "refused" and "unknown preset '../../../shared/fuzz-repros/" in outcome.detail


def test_the_python_tag_in_repro_12_is_refused_and_never_run() -> None:
    # named as a policy file (the form that reads a file), the preset from repro 12 is still refused
    with pytest.raises(PolicyError, match=r"YAML tag .*python/object/apply:os\.system.* is not allowed"):
        resolve_policy(str(REPROS / "12-preset9316.yaml"))
