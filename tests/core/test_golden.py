"""golden.expectation_edits: only what `check` finds wrong changes; a trace without expectations is filled in."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopguard.core._model import Trace
from pytest_loopguard.errors import LoopguardError
from pytest_loopguard.io._format import loads
from pytest_loopguard.io._golden import expectation_edits, unchecked_expectations, update_yaml_file
from pytest_loopguard.io._runner import execute
from pytest_loopguard.io._yamlsplice import REMOVE, Edit
from pytest_loopguard.runtime._replay import replay

# default: identical calls warn at the 3rd and 4th, block at the 5th
FIVE = "  - {tool: grep, args: {q: x}}\n" * 5


def trace(header: str, steps: str = FIVE) -> Trace:
    [t] = loads(f"loopguard: 1\nname: t\npolicy: default\n{header}steps:\n{steps}")
    return t


def test_a_trace_whose_expectations_hold_gets_no_edit() -> None:
    t = trace("expect: {outcome: incomplete, counts: {warn: 2}}\n")
    assert expectation_edits(t, replay(t), 0) == ([], [])


def test_only_the_wrong_run_field_changes() -> None:
    t = trace("expect: {outcome: completed, counts: {warn: 2, block: 3}}\n")
    edits, changes = expectation_edits(t, replay(t), 4)
    assert edits == [Edit(4, ("expect", "outcome"), "incomplete"), Edit(4, ("expect", "counts", "block"), 1)]
    assert changes == ["t: expect.outcome: completed -> incomplete", "t: expect.counts.block: 3 -> 1"]


def test_strict_gains_the_expectations_it_lacked_and_loses_the_wrong_ones() -> None:
    steps = "  - {tool: grep, args: {q: x}, expect: block}\n" + FIVE
    t = trace("strict: true\nexpect: {outcome: incomplete}\n", steps)
    edits, _ = expectation_edits(t, replay(t), 0)
    warning = {"action": "warn", "engine": "loop_guard", "reason": "loop_guard.consecutive_warning"}
    assert edits == [
        Edit(0, ("steps", 0, "expect"), REMOVE),  # allowed: the wrong `block` goes
        Edit(0, ("steps", 2, "expect"), warning),
        Edit(0, ("steps", 3, "expect"), warning),
        Edit(0, ("steps", 4, "expect"), {"action": "block", "engine": "loop_guard",
                                         "reason": "loop_guard.consecutive_block"}),
        Edit(0, ("steps", 5, "expect"), {"action": "block", "engine": "loop_guard",
                                         "reason": "loop_guard.consecutive_block"}),
    ]


def test_a_trace_without_expectations_is_filled_in() -> None:
    t = trace("")
    edits, _ = expectation_edits(t, replay(t), 0)
    assert [e.path for e in edits] == [("steps", 2, "expect"), ("steps", 3, "expect"), ("steps", 4, "expect"),
                                       ("expect",)]
    assert edits[-1].value == {"outcome": "incomplete", "counts": {"warn": 2, "block": 1}}


def test_a_scenarios_expectation_past_its_run_is_unchecked_and_dropped() -> None:
    [s] = loads("loopguard: 1\nname: s\nmode: simulate\npolicy: default\nmax_turns: 3\n"
                "agent: {script: [{answer: Done.}]}\nx-expect-steps: {0: allow, 30: warn}\n")
    result = execute(s)
    assert len(result.trace.steps) < 30 and unchecked_expectations(s, result) == [30]
    edits, changes = expectation_edits(s, result, 0)
    assert edits == [Edit(0, ("x-expect-steps", 30), REMOVE)]
    assert changes == ["s: x-expect-steps 30 (no such step: unchecked): warn -> removed"]


def test_an_edit_that_does_not_load_back_leaves_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    text = "loopguard: 1\nname: t\nsteps: [{tool: a}]\n"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LoopguardError, match="field 'name'"):
        update_yaml_file(path, [Edit(0, ("name",), {"not": "a name"})])
    assert path.read_text(encoding="utf-8") == text
    assert update_yaml_file(path, [Edit(0, ("steps", 0, "expect"), "allow")]) is True
    assert update_yaml_file(path, [Edit(0, ("steps", 0, "expect"), "allow")]) is False  # the same: not written
    assert path.read_text(encoding="utf-8") == "loopguard: 1\nname: t\nsteps: [{tool: a, expect: allow}]\n"
