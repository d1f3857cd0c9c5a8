"""Scoring: loops caught and their lag, false stops, noise and outcome shares, on a hand-written corpus
whose verdicts follow from PRESETS.md's numbers (default: warn at the 3rd identical call, block at the
5th; spacebot: the 4th identical call is skipped)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from eval_corpus import LABELS, write_corpus

from pytest_loopguard.eval._labels import LabelsError, load_labels
from pytest_loopguard.eval._runs import call_count, load_runs
from pytest_loopguard.eval._score import events, match_labels, score_policy
from pytest_loopguard.io._format import loads
from pytest_loopguard.runtime._policy import resolve_policy
from pytest_loopguard.runtime._replay import replay


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, list]:  # type: ignore[type-arg]
    labels = write_corpus(tmp_path)
    return labels, load_runs([tmp_path], skip=[labels])


def by_id(score, run_id: str):  # type: ignore[no-untyped-def]
    return next(r for r in score.runs if r.run_id == run_id)


def test_loop_caught_with_lag_per_policy(corpus) -> None:  # type: ignore[no-untyped-def]
    labels_path, runs = corpus
    labelled = match_labels(load_labels(labels_path), runs)
    default = score_policy(resolve_policy("default"), runs, labelled)
    spacebot = score_policy(resolve_policy("spacebot"), runs, labelled)
    loop = by_id(default, "loop.yaml").loops[0]
    assert loop.caught and loop.first.action == "warn" and loop.lag == 2  # 3rd click = call 3, loop from 1
    loop = by_id(spacebot, "loop.yaml").loops[0]
    assert loop.first.action == "block" and loop.lag == 3  # the 4th click = call 4
    # the second run of two.yaml has its loop one call later: the same lag
    assert by_id(default, "two.yaml#1").loops[0].lag == 2
    assert default.caught == 2 and len(default.flag_loops) == 2


def test_false_stops_and_noise(corpus) -> None:  # type: ignore[no-untyped-def]
    labels_path, runs = corpus
    labelled = match_labels(load_labels(labels_path), runs)
    default = score_policy(resolve_policy("default"), runs, labelled)
    # a block inside a tolerate loop of a resolved run: the 5th identical click, call 5
    tolerate = by_id(default, "tolerate.yaml")
    assert tolerate.false_stop is not None and tolerate.false_stop.action == "block"
    assert tolerate.false_stop.call == 5 and tolerate.loops[0].false_stop == tolerate.false_stop
    # the failed run's block is no false stop
    assert by_id(default, "loop.yaml").false_stop is None
    assert [r.run_id for r in default.false_stops] == ["tolerate.yaml"]
    assert default.noisy == [] and len(default.healthy) == 2

    # warnings only (warn_at 3, block never): no false stop, the loop is still caught
    lenient = resolve_policy({"preset": "default", "loop_guard": {"block_at": 99, "max_warnings_per_call": 99}})
    score = score_policy(lenient, runs, labelled)
    assert score.false_stops == [] and score.caught == 2


def test_noise_on_a_healthy_run(corpus) -> None:  # type: ignore[no-untyped-def]
    labels_path, runs = corpus
    labelled = match_labels(load_labels(labels_path), runs)
    # warn on the 1st identical call: every call of a healthy run warns once
    jumpy = resolve_policy({"preset": "default", "loop_guard": {"warn_at": 1}})
    score = score_policy(jumpy, runs, labelled)
    assert {r.run_id for r in score.noisy} == {"healthy.yaml", "rejected.yaml"}  # two.yaml#0 is unlabelled


def test_outcome_shares(corpus) -> None:  # type: ignore[no-untyped-def]
    labels_path, runs = corpus
    labelled = match_labels(load_labels(labels_path), runs)
    score = score_policy(resolve_policy("default"), runs, labelled)
    resolved, failed = score.shares["resolved"], score.shares["failed"]
    assert (resolved.runs, resolved.warned, resolved.blocked, resolved.stopped) == (3, 1, 1, 0)
    assert (failed.runs, failed.warned, failed.blocked, failed.stopped) == (2, 2, 2, 0)
    assert score.shares["all"].runs == 6  # two.yaml#0 is unlabelled: outcome unknown


def test_rejected_turns_are_calls_and_verdicts_land_on_the_next_call() -> None:
    text = """
loopguard: 1
name: r
steps:
  - {message: {role: user, text: go}}
  - {tool: shell, args: {command: ls}}
  - {rejected: {reason: format}}
  - {tool: click, args: {index: 1}}
  - {tool: click, args: {index: 1}}
  - {tool: click, args: {index: 1}}
  - {done: {success: true}}
"""
    trace = loads(text)[0]
    assert call_count(trace) == 5  # 4 tool steps and one rejected turn; message and done are no calls
    evs = events(replay(trace, "default"))
    assert [(e.call, e.step, e.action) for e in evs] == [(4, 5, "warn")]  # step 5 is call 4


def test_labels_must_find_their_runs(tmp_path: Path) -> None:
    labels_path = write_corpus(tmp_path)
    runs = load_runs([tmp_path / "loop.yaml", tmp_path / "two.yaml"])
    with pytest.raises(LabelsError) as info:
        match_labels(load_labels(labels_path), runs)
    message = str(info.value)
    assert message.startswith(f"{labels_path}:") and "runs[1] (healthy.yaml)" in message
    assert "field 'file'" in message and "\n" not in message


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("calls: 8\n    healthy: false\n    loops:\n      - {from: 1",
     "calls: 9\n    healthy: false\n    loops:\n      - {from: 1", "the labels say 9 calls, the run has 8"),
    ("    row: 1\n", "", "the file holds 2 runs; name one with `row`"),
    ("    row: 1\n", "    row: 2\n", "no row 2: the file holds 2 run(s)"),
])
def test_labels_that_do_not_fit_the_runs(tmp_path: Path, old: str, new: str, expected: str) -> None:
    labels_text = LABELS.replace(old, new, 1)
    assert labels_text != LABELS
    labels_path = write_corpus(tmp_path, labels_text)
    runs = load_runs([tmp_path], skip=[labels_path])
    with pytest.raises(LabelsError, match=re.escape(expected)):
        match_labels(load_labels(labels_path), runs)


def test_labels_kept_apart_from_their_runs_name_a_base(tmp_path: Path) -> None:
    labels_path = write_corpus(tmp_path / "logs")
    apart = tmp_path / "repo" / "labels" / "runs.yaml"
    apart.parent.mkdir(parents=True)
    apart.write_text("base: ../../logs\n" + labels_path.read_text(encoding="utf-8"), encoding="utf-8")
    runs = load_runs([tmp_path / "logs"], skip=[labels_path])
    here = match_labels(load_labels(labels_path), runs)
    found = match_labels(load_labels(apart), runs)
    assert {i: (label.file, label.row, label.entry) for i, label in found.items()} == {
        i: (label.file, label.row, label.entry) for i, label in here.items()} and len(here) == 5
    # without `base` the entries name files beside the labels file, which were not read
    apart.write_text(labels_path.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(LabelsError, match="the file was not read"):
        match_labels(load_labels(apart), runs)
    apart.write_text("base: /abs\n" + labels_path.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(LabelsError, match="field 'base': expected a folder relative to the labels file"):
        load_labels(apart)
