"""`default` on ../shared/corpus/real with its labels.yaml (one test per labelled run): every loop
labelled `flag` gets a warn or block inside its range, no false stop (see pytest_loopguard.eval._score), and no
verdict at all on a run labelled healthy. The calibration corpus test is `slow` (deselected by default):
`python -m pytest -m slow tests/eval`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_loopguard.eval._labels import load_labels
from pytest_loopguard.eval._runs import load_runs
from pytest_loopguard.eval._score import match_labels, score_policy
from pytest_loopguard.runtime._policy import resolve_policy

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
REAL_LABELS = load_labels(SHARED / "real" / "labels.yaml")
CALIBRATION = SHARED / "calibration" / "mini-swe-agent-gemini-3-pro-swebench.tar.gz"


@pytest.mark.parametrize("label", REAL_LABELS.runs, ids=[r.run_id for r in REAL_LABELS.runs])
def test_default_on_labelled_real_run(label) -> None:  # type: ignore[no-untyped-def]
    runs = [r for r in load_runs([REAL_LABELS.base / label.file]) if r.row == (label.row or 0)]
    one = replace(REAL_LABELS, runs=(label,))
    labelled = match_labels(one, runs)
    (score,) = score_policy(resolve_policy("default"), runs, labelled).runs
    missed = [f"{s.loop.start}..{s.loop.end} {s.loop.shape}" for s in score.loops
              if s.loop.expect == "flag" and not s.caught]
    assert missed == [], f"flag loops with no warn or block inside their range: {missed}"
    assert score.false_stop is None, f"false stop: {score.false_stop}"
    if label.healthy:
        assert score.events == (), f"verdicts on a healthy run: {score.events}"


@pytest.mark.slow
def test_default_on_calibration_corpus() -> None:
    runs = load_runs([CALIBRATION])
    assert len(runs) == 239
    score = score_policy(resolve_policy("default"), runs, {})
    resolved = score.shares["resolved"]
    assert resolved.runs == 175
    severe = sum(1 for r in score.runs if r.outcome == "resolved" and (r.blocked or r.stopped))
    assert severe <= 0.01 * resolved.runs, f"{severe} resolved runs blocked or stopped"
    assert resolved.warned <= 0.10 * resolved.runs, f"{resolved.warned} resolved runs warned"
