"""yamlsplice: set or remove one key in YAML text, every other character left as it was."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
import yaml

from pytest_loopguard.io._format import loads, trace_to_mapping
from pytest_loopguard.io._yamlsplice import REMOVE, Edit, SpliceError, apply_edits, flow

TEXT = """\
# head
name: x   # the name
steps:
  - {tool: a, args: {i: 1}, expect: warn}   # c1
  - {tool: b}
  - tool: c
    args: {q: 1}
    expect:
      action: block   # why
      reason: loop_guard.consecutive_block
  # between
  - tool: d
    expect: allow
expect: {outcome: completed}
"""


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


@pytest.mark.parametrize(("edit", "diff"), [
    (Edit(0, ("steps", 0, "expect"), "block"),
     ["-  - {tool: a, args: {i: 1}, expect: warn}   # c1", "+  - {tool: a, args: {i: 1}, expect: block}   # c1"]),
    (Edit(0, ("steps", 0, "expect"), REMOVE),
     ["-  - {tool: a, args: {i: 1}, expect: warn}   # c1", "+  - {tool: a, args: {i: 1}}   # c1"]),
    (Edit(0, ("steps", 1, "expect"), {"action": "warn", "reason": "x.y"}),
     ["-  - {tool: b}", "+  - {tool: b, expect: {action: warn, reason: x.y}}"]),
    (Edit(0, ("steps", 2, "expect", "action"), "warn"),
     ["-      action: block   # why", "+      action: warn   # why"]),
    (Edit(0, ("steps", 2, "expect"), "warn"),  # a block mapping replaced by a scalar
     ["-    expect:", "-      action: block   # why", "-      reason: loop_guard.consecutive_block",
      "+    expect: warn"]),
    (Edit(0, ("steps", 3, "expect"), REMOVE), ["-    expect: allow"]),
    (Edit(0, ("steps", 3, "expect"), {"action": "stop"}), ["-    expect: allow", "+    expect: {action: stop}"]),
    (Edit(0, ("expect", "counts", "warn"), 2),  # a missing mapping is created on the way
     ["-expect: {outcome: completed}", "+expect: {outcome: completed, counts: {warn: 2}}"]),
    (Edit(0, ("policy",), "default"), ["+policy: default"]),
])
def test_one_edit_changes_only_its_lines(edit: Edit, diff: list[str]) -> None:
    after = apply_edits(TEXT, [edit])
    assert changed_lines(TEXT, after) == diff
    assert yaml.safe_load(after) is not None  # still YAML


def test_a_block_mapping_is_edited_entry_by_entry_so_its_comments_stay() -> None:
    after = apply_edits(TEXT, [Edit(0, ("steps", 2, "expect"), {"action": "warn", "engine": "loop_guard"})])
    assert changed_lines(TEXT, after) == [
        "-      action: block   # why", "-      reason: loop_guard.consecutive_block",
        "+      action: warn   # why", "+      engine: loop_guard",
    ]


def test_an_unchanged_scalar_keeps_its_text() -> None:
    text = "a: {action: 'warn'}\n"
    assert apply_edits(text, [Edit(0, ("a", "action"), "warn")]) == text


def test_removing_from_a_flow_mapping_first_middle_and_only_entry() -> None:
    text = "a: {x: 1, y: 2, z: 3}\nb: {x: 1}\n"
    edits = [Edit(0, ("a", "x"), REMOVE), Edit(0, ("a", "y"), REMOVE), Edit(0, ("b", "x"), REMOVE)]
    assert apply_edits(text, edits) == "a: {z: 3}\nb: {}\n"
    assert apply_edits("a: {}\n", [Edit(0, ("a", "k"), 1)]) == "a: {k: 1}\n"


def test_insertions_at_one_place_keep_their_order_and_documents_are_separate() -> None:
    text = "x: {a: 1}\n---\n# second\nx:\n  a: 1\n"
    edits = [Edit(0, ("x", "b"), 2), Edit(0, ("x", "c"), 3), Edit(1, ("x", "b"), 2), Edit(1, ("x", "c"), 3)]
    assert apply_edits(text, edits) == "x: {a: 1, b: 2, c: 3}\n---\n# second\nx:\n  a: 1\n  b: 2\n  c: 3\n"


@pytest.mark.parametrize(("value", "text"), [
    (None, "null"), (True, "true"), (3, "3"), (0.5, "0.5"), ("warn", "warn"), ("loop_guard.x", "loop_guard.x"),
    ("a: b", '"a: b"'), ("true", '"true"'), ("Null", '"Null"'), ("", '""'), ("1x", '"1x"'), ("é #", '"é #"'),
    ({"a": [1, "b c"], 2: None}, '{a: [1, "b c"], 2: null}'),
])
def test_flow_writes_yaml_that_reads_back_as_the_value(value: object, text: str) -> None:
    assert flow(value) == text
    assert yaml.safe_load(f"k: {text}\n") == {"k": value}


def test_a_path_through_a_scalar_or_past_the_documents_is_an_error() -> None:
    with pytest.raises(SpliceError, match="found a scalar"):
        apply_edits("a: 1\n", [Edit(0, ("a", "b", "c"), 1)])
    with pytest.raises(SpliceError, match="no YAML document 1"):
        apply_edits("a: 1\n", [Edit(1, ("a",), 2)])


# every trace file (traces/ is a corpus package: its manifest, loopguard-corpus.yaml, is no trace)
CORPUS = sorted(p for p in (Path(__file__).resolve().parents[2] / "traces").rglob("*.yaml")
                if p.name != "loopguard-corpus.yaml")


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_bundled_trace_takes_edits_that_change_only_their_lines(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    traces = loads(text)
    edits = []
    for doc, trace in enumerate(traces):
        edits.append(Edit(doc, ("expect", "outcome"), "exhausted"))
        if trace.steps:
            last = len(trace.steps) - 1
            edits.append(Edit(doc, ("steps", last, "expect"), {"action": "stop", "reason": "edit.test"}))
    after = apply_edits(text, edits)
    # each edit touches one line (two at most for a step whose expectation was a block)
    assert len([line for line in changed_lines(text, after) if line.startswith("+")]) <= len(edits) * 2
    for doc, (before, again) in enumerate(zip(traces, loads(after), strict=True)):
        want = trace_to_mapping(before)
        want.setdefault("expect", {})["outcome"] = "exhausted"
        if before.steps:
            want["steps"][-1]["expect"] = {"action": "stop", "reason": "edit.test"}
        assert trace_to_mapping(again) == want, f"document {doc}"


@pytest.mark.parametrize(("text", "after"), [
    # both edits need the missing `expect`: the second finds the one the first made
    ("steps: []\n", "steps: []\nexpect: {outcome: stopped, counts: {warn: 1}}\n"),
    # two insertions into one empty flow mapping
    ("expect: {}\n", "expect: {outcome: stopped, counts: {warn: 1}}\n"),
    # the nested block ends on the same line as its parent: the nested entry stays nested
    ("expect:\n  counts:\n    fail: 2\n", "expect:\n  counts:\n    fail: 2\n    warn: 1\n  outcome: stopped\n"),
])
def test_edits_that_meet_at_one_place_are_applied_one_after_the_other(text: str, after: str) -> None:
    edits = [Edit(0, ("expect", "outcome"), "stopped"), Edit(0, ("expect", "counts", "warn"), 1)]
    assert apply_edits(text, edits) == after
