"""The labels loader: the real corpus's labels load, and every kind of bad entry is one line naming the
labels file, the entry (with its line) and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopguard.eval._labels import LabelsError, load_labels

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "real" / "labels.yaml"

GOOD = """\
version: 1
runs:
  - file: a.yaml
    format: loopguard
    outcome: failed
    calls: 10
    healthy: false
    loops:
      - {from: 2, to: 5, shape: file-reread, expect: flag, recovered: false}
"""


def test_real_labels_load() -> None:
    labels = load_labels(REAL)
    assert len(labels.runs) == 17
    flags = [loop for run in labels.runs for loop in run.loops if loop.expect == "flag"]
    assert len(flags) == 18  # counted by hand in the file: 18 flag loops, 2 tolerate
    django = next(r for r in labels.runs if r.file.endswith("django__django-16560.traj.json"))
    assert (django.calls, django.loops[0].start, django.loops[0].end, django.loops[0].shape) == (
        144, 47, 141, "file-reread")
    rows = [(r.file, r.row) for r in labels.runs if r.row is not None]
    assert ("openhands/multi_swe_bench_examples/output.jsonl", 2) in rows


@pytest.mark.parametrize(("old", "new", "line", "expected"), [
    ("shape: file-reread", "shape: spiral", 3,
     "runs[0] (a.yaml): field 'loops[0].shape': expected one of identical-repeat"),
    ("expect: flag", "expect: maybe", 3, "field 'loops[0].expect': expected one of flag, tolerate, got 'maybe'"),
    ("to: 5", "to: 10", 3, "field 'loops[0].to': range 2..10 is past the run's end (10 calls)"),
    ("to: 5", "to: 1", 3, "field 'loops[0].to': 'to' (1) is before 'from' (2)"),
    ("outcome: failed", "outcome: great", 3, "field 'outcome': expected one of resolved, failed, unknown"),
    ("calls: 10", "calls: ten", 3, "field 'calls': expected an integer >= 0, got 'ten'"),
    ("healthy: false", "healthy: true", 3, "field 'healthy': a healthy run has no loops"),
    ("    format: loopguard\n", "    format: loopguard\n    colour: red\n", 3, "unknown key(s) colour"),
    ("recovered: false", "recovered: 1", 3, "field 'loops[0].recovered': expected true or false"),
])
def test_bad_entries_are_one_line(tmp_path: Path, old: str, new: str, line: int, expected: str) -> None:
    path = tmp_path / "labels.yaml"
    text = GOOD.replace(old, new)
    assert text != GOOD
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LabelsError) as info:
        load_labels(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: runs[0]") and expected in message and "\n" not in message


@pytest.mark.parametrize(("text", "expected"), [
    ("version: 2\nruns: []\n", "field 'version': expected 1, got 2"),
    ("version: 1\nruns: {}\n", "field 'runs': expected a list of runs"),
    ("- 1\n", "expected a mapping with `version: 1` and `runs`"),
    ("version: 1\nruns: [\n", "YAML syntax error"),
    (GOOD + GOOD.split("runs:\n")[1], "runs[1] (a.yaml): the same run as runs[0]"),
])
def test_bad_files_are_one_line(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "labels.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LabelsError) as info:
        load_labels(path)
    assert expected in str(info.value) and str(info.value).startswith(str(path))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match="cannot read"):
        load_labels(tmp_path / "nope.yaml")
