"""`loopguard eval` as a command: the side-by-side table, --json, --markdown, --sweep, and bad input as one
line with exit 2. The corpus and its expected verdicts are in eval_corpus.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_corpus import LABELS, write_corpus

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.eval._labels import load_labels


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


def test_side_by_side_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = write_corpus(tmp_path)
    status, out, err = run(capsys, "eval", str(tmp_path), "--labels", str(labels),
                           "--policy", "default", "--policy", "spacebot")
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["metric", "default", "spacebot"]
    caught = next(line for line in lines if line.startswith("flag loops caught"))
    assert caught.split()[-2:] == ["2/2", "2/2"]
    lag = next(line for line in lines if line.startswith("lag, calls"))
    assert lag.split()[-6:] == ["2", "/", "2", "3", "/", "3"]  # default warns at call 3, spacebot skips call 4
    stops = next(line for line in lines if line.startswith("false stops"))
    assert stops.split()[-2:] == ["1", "1"]  # both block inside tolerate.yaml's loop
    row = next(line for line in lines if line.startswith("loop.yaml"))
    assert "warn +2 loop_guard.consecutive_warning" in row and "block +3 loop_guard.consecutive_warning" in row
    row = next(line for line in lines if line.startswith("tolerate.yaml"))
    assert row.count("FALSE STOP") == 2


def test_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = write_corpus(tmp_path)
    status, out, _ = run(capsys, "eval", str(tmp_path), "--labels", str(labels), "--json")
    assert status == 0
    data = json.loads(out)
    assert (data["runs"], data["labelled"]) == (6, 5)
    (policy,) = data["policies"]
    assert (policy["policy"], policy["caught"], policy["flag_loops"], policy["false_stops"]) == ("default", 2, 2, 1)
    loop = next(r for r in policy["runs"] if r["run"] == "loop.yaml")["loops"][0]
    assert (loop["caught"], loop["lag"], loop["first"]["call"]) == (True, 2, 3)
    assert policy["outcomes"]["resolved"] == {"runs": 3, "warned": 1, "blocked": 1, "stopped": 0}


def test_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = write_corpus(tmp_path)
    status, out, _ = run(capsys, "eval", str(tmp_path), "--labels", str(labels), "--markdown")
    assert status == 0
    assert out.splitlines()[0].startswith("| metric") and "| flag loops caught" in out


def test_sweep_frontier(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = write_corpus(tmp_path)
    status, out, _ = run(capsys, "eval", str(tmp_path), "--labels", str(labels), "--sweep",
                         "loop_guard.block_at=4..7")
    assert status == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:]}
    # block at 4 and 5 falls inside tolerate.yaml's loop (calls 1..5); from 6 on there is no false stop
    assert [rows[v][5] for v in "4567"] == ["1", "1", "0", "0"]
    assert rows["4"][1] == "2/2"  # value, caught, lag "2 / 2", false stops, ...
    # 6 and 7 catch as much with no false stop: on the frontier; 4 and 5 are dominated
    assert [rows[v][-1] == "*" for v in "4567"] == [False, False, True, True]


@pytest.mark.parametrize("spec", ["loop_guard.warn_at", "loop_guard.warn_at=a..b", "nope.x=1..2",
                                  "loop_guard.nope=1..2", "loop_guard.warn_at=5..2"])
def test_bad_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    labels = write_corpus(tmp_path)
    status, out, err = run(capsys, "eval", str(tmp_path), "--labels", str(labels), "--sweep", spec)
    assert status == 2 and out == "" and len(err.splitlines()) == 1


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("shape: identical-repeat, expect: flag, recovered: false", "shape: loopy, expect: flag",
     "runs[0] (loop.yaml): field 'loops[0].shape': expected one of"),
    ("expect: tolerate", "expect: ignore", "runs[2] (tolerate.yaml): field 'loops[0].expect'"),
    ("{from: 1, to: 5, shape: identical-repeat, expect: flag",
     "{from: 1, to: 8, shape: identical-repeat, expect: flag",
     "runs[0] (loop.yaml): field 'loops[0].to': range 1..8 is past the run's end (8 calls)"),
])
def test_bad_labels_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str,
                                    expected: str) -> None:
    text = LABELS.replace(old, new, 1)
    assert text != LABELS
    labels = write_corpus(tmp_path, text)
    status, out, err = run(capsys, "eval", str(tmp_path), "--labels", str(labels))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and str(labels) in err and expected in err


def test_unknown_policy_and_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "eval", str(tmp_path), "--policy", "no-such-preset")
    assert status == 2 and "unknown preset 'no-such-preset'" in err and err.count("\n") == 1
    status, _, err = run(capsys, "eval", str(tmp_path / "nope"))
    assert status == 2 and "no such file or folder" in err and err.count("\n") == 1


# ---- the runs given, with a corpus's labels (issue 26 finding 4) ----------------------------------------------
REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "real"


def test_eval_scores_the_runs_given_and_names_the_labelled_runs_absent(capsys: pytest.CaptureFixture[str]) -> None:
    labels = REAL / "labels.yaml"
    status, out, err = run(capsys, "eval", str(REAL / "swe-agent"), "--labels", str(labels), "--json")
    assert status == 0  # it exited 2 on the first label whose run was not given
    data = json.loads(out)
    assert (data["runs"], data["labelled"]) == (2, 2)
    total = len(load_labels(labels).runs)
    assert len(data["absent"]) == total - 2 and "swe-agent/pydicom__pydicom-1458.traj" not in data["absent"]
    assert err.splitlines() == [f"loopguard: eval: {total - 2} labelled runs of {labels} were not among the runs "
                                f"given (not scored): {', '.join(data['absent'][:3])}, ..."]


def test_imported_traces_are_matched_to_labels_by_their_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REAL.parent)  # the import runs where the logs are, as a team's would
    assert cli.main(["import", "real/swe-agent", "-o", str(tmp_path / "traces")]) == 0
    capsys.readouterr()
    status, out, _ = run(capsys, "eval", str(tmp_path / "traces"), "--labels", str(REAL / "labels.yaml"), "--json")
    assert status == 0
    data = json.loads(out)
    assert (data["runs"], data["labelled"]) == (2, 2)  # a trace file is not the log the labels name: its source is
    (policy,) = data["policies"]
    scored = {r["run"]: r for r in policy["runs"]}  # named as the labels name them
    assert scored["swe-agent/pydicom__pydicom-1458.traj"]["loops"][0]["caught"] is True
