"""`loopguard diff`: exit status as a CI gate, text/JSON/Markdown forms, git:REV:PATH policies, bad input.

`default` warns at the 3rd identical call and blocks from the 5th; `qa-agent` stops at the 4th.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli

ROOT = Path(__file__).resolve().parents[2]


def clicks(folder: Path, name: str, n: int) -> Path:
    steps = "".join("  - {tool: click, args: {index: 3}}\n" for _ in range(n))
    path = folder / f"{name}.yaml"
    path.write_text(f"loopguard: 1\nname: {name}\nsteps:\n{steps}", encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    clicks(folder, "two", 2)  # no intervention under either policy
    clicks(folder, "six", 6)
    return folder


def test_nothing_moved_exits_0(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", str(corpus), "--before", "default", "--after", "default"]) == 0
    assert capsys.readouterr().out.strip() == "loopguard diff: 2 traces, 0 moved (default → default)"


def test_moved_exits_1_and_names_the_changes(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", str(corpus), "--before", "default", "--after", "qa-agent"]) == 1
    out = capsys.readouterr().out
    assert "::six: incomplete → stopped at 3; steps 6 → 4 (2 saved); tokens 0 → 0" in out
    assert "changed   3: warn loop_guard.consecutive_warning  3: stop failure_tracker.repetition" in out
    assert "::two" not in out  # unchanged traces are left out unless --all
    assert out.rstrip().endswith("loopguard diff: 2 traces, 1 moved (default → qa-agent)")


def test_json_form(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", str(corpus), "--before", "default", "--after", "qa-agent", "--json", "--all"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["before"], doc["after"], doc["traces"], doc["moved"]) == ("default", "qa-agent", 2, 1)
    six = next(d for d in doc["diffs"] if d["trace"] == "six")
    assert six["steps_saved"] == 2 and six["after"]["stopped_by"] == "failure_tracker"
    # default: warn 2, 3, block 4, 5; qa-agent: stop at 3. Step 3 changed, the others vanished.
    assert [(c["kind"], (c["before"] or {}).get("step")) for c in six["changes"]] == [
        ("vanished", 2), ("changed", 3), ("vanished", 4), ("vanished", 5)]
    two = next(d for d in doc["diffs"] if d["trace"] == "two")
    assert two["moved"] is False and two["changes"] == []


def test_markdown_form(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", str(corpus), "--before", "default", "--after", "qa-agent", "--markdown"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "## loopguard diff: `default` → `qa-agent`"
    assert "| trace | default | qa-agent | steps | tokens | interventions |" in lines
    row = next(line for line in lines if line.startswith("| `six` |"))
    assert "| incomplete | stopped at 3 | 6 → 4 (2 saved) |" in row


def test_bundled_corpus_under_two_presets() -> None:
    # Real traces: the loop guard's corpus moves between default and spacebot (different thresholds).
    assert cli.main(["diff", str(ROOT / "traces" / "loop_guard"), "--before", "default", "--after", "spacebot"]) == 1


def test_policy_file_before_and_after_an_edit(tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    policy = tmp_path / "strict.yaml"
    policy.write_text("preset: default\nloop_guard: {warn_at: 3, block_at: 5}\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run([*git, "add", "strict.yaml"], check=True)
    subprocess.run([*git, "commit", "-qm", "policy"], check=True)
    assert cli.main(["diff", str(corpus), "--before", "git:HEAD:strict.yaml", "--after", "strict.yaml"]) == 0
    policy.write_text("preset: default\nloop_guard: {warn_at: 2, block_at: 4}\n", encoding="utf-8")
    assert cli.main(["diff", str(corpus), "--before", "git:HEAD:strict.yaml", "--after", "strict.yaml"]) == 1
    out = capsys.readouterr().out
    # warn at 2 now: the 2nd identical click of both traces warns.
    assert len(re.findall(r"appeared +1: warn loop_guard.consecutive_warning", out)) == 2
    assert out.rstrip().endswith("loopguard diff: 2 traces, 2 moved (strict@HEAD → strict)")


@pytest.mark.parametrize(
    ("before", "message"),
    [
        ("nonesuch", "loopguard: error: policy field 'preset': unknown preset 'nonesuch'"),
        ("git:HEAD", "loopguard: error: policy: 'git:HEAD': expected git:REV:PATH"),
    ],
)
def test_bad_policy_is_one_line(corpus: Path, capsys: pytest.CaptureFixture[str], before: str, message: str) -> None:
    assert cli.main(["diff", str(corpus), "--before", before, "--after", "default"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_trace_exits_2_and_the_others_are_compared(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (corpus / "bad.yaml").write_text("loopguard: 1\nname: x\nsteps: [{tool: a, arg: 1}]\n", encoding="utf-8")
    # "six" moves (exit 1 alone), but a bad input wins, as in `loopguard run`
    assert cli.main(["diff", str(corpus), "--before", "default", "--after", "qa-agent"]) == 2
    captured = capsys.readouterr()
    assert "field 'arg': unknown key 'arg'" in captured.err and "Traceback" not in captured.err
    assert captured.out.rstrip().endswith("loopguard diff: 2 traces, 1 moved (default → qa-agent)")
