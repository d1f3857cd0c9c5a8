"""labels/sessions.yaml: every labelled session of ../shared/corpus/sessions imports with the labelled call count,
and `default` answers its loops with the rules meant for them (the table in docs/eval.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_loopguard import resolve_policy
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.eval._labels import load_labels
from pytest_loopguard.eval._runs import load_runs
from pytest_loopguard.eval._score import match_labels, score_policy

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "labels" / "sessions.yaml"


@pytest.fixture(scope="module")
def scored():  # type: ignore[no-untyped-def]
    labels = load_labels(LABELS)
    runs = load_runs([labels.base / label.file for label in labels.runs])
    labelled = match_labels(labels, runs)  # raises on a label whose run or call count does not fit
    return labels, runs, labelled


def test_every_label_finds_its_session_with_its_call_count(scored) -> None:  # type: ignore[no-untyped-def]
    labels, _, labelled = scored
    assert labels.base.resolve() == (ROOT.parent / "shared" / "corpus" / "sessions").resolve()
    assert len(labelled) == len(labels.runs) == 13
    formats = {label.format for label in labels.runs}
    assert formats == {"claude-code", "codex", "gemini-cli", "cline", "aider"}


def test_default_catches_the_rejected_commits_and_the_failed_edit_streaks(scored) -> None:  # type: ignore[no-untyped-def]
    _, runs, labelled = scored
    score = score_policy(resolve_policy("default"), runs, labelled)
    by_run = {r.label.run_id: r for r in score.runs if r.label is not None}
    commit = by_run["claude-code/spotter-ae4a77f8.jsonl"].loops[0]
    # the same failing `git add -A && git commit` with edits between: the failing-key rule, not a repeat count
    assert commit.caught and commit.first.reason == "failure_tracker.failing_key"
    edits = by_run["aider/tradepirates.aider.chat.history.md"].loops
    assert len(edits) == 7 and all(loop.caught for loop in edits)
    # no verdict on a session the corpus notes call healthy
    assert score.caught == len(score.flag_loops) == 8
    healthy = [r for r in score.runs if r.label is not None and r.label.healthy]
    assert len(healthy) == 9 and not any(r.warned or r.blocked or r.stopped for r in healthy)


def test_eval_with_labels_alone_scores_the_runs_they_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", "--labels", str(LABELS), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["runs"], document["labelled"]) == (13, 13)
    assert cli.main(["eval"]) == 2
    assert "name the runs to score (PATHS), or a labels file" in capsys.readouterr().err
