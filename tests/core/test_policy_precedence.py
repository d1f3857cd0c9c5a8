"""An explicit policy wins over the header's without loading it, and a recording names its policy file so
that it replays from anywhere (issue 26 finding 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core._model import ToolCall, ToolResult
from pytest_loopguard.errors import TraceError
from pytest_loopguard.io._format import load
from pytest_loopguard.live._session import Session
from pytest_loopguard.runtime._replay import replay

TRACE = "loopguard: 1\nname: t\npolicy: policies/agentco.yaml\nsteps:\n" + "  - {tool: grep, args: {q: x}}\n" * 4
POLICY = "preset: default\nloop_guard: {warn_at: 2, block_at: 4}\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_an_explicit_policy_replays_a_trace_whose_own_policy_file_is_missing(tmp_path: Path) -> None:
    trace_path = write(tmp_path / "shared" / "t.yaml", TRACE)  # its policies/ folder did not travel with it
    trace = load(trace_path)  # the header's policy is not loaded when the trace is
    assert replay(trace, "default").counts()["warn"] == 2
    with pytest.raises(TraceError, match=r"policy file 'policies/agentco\.yaml' not found") as info:
        replay(trace)  # the trace's own policy: now it is loaded, and its absence is one located line
    assert info.value.file == str(trace_path) and info.value.field == "policy"


def test_run_with_policy_needs_no_header_policy_but_validate_still_checks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_path = write(tmp_path / "shared" / "t.yaml", TRACE)
    assert cli.main(["run", str(trace_path), "--policy", "default"]) == 0
    capsys.readouterr()
    assert cli.main(["validate", str(trace_path)]) == 2
    err = capsys.readouterr().err
    assert f"{trace_path}: field 'policy': policy file 'policies/agentco.yaml' not found" in err
    assert cli.main(["run", str(trace_path)]) == 2


@pytest.mark.parametrize("marker", [True, False], ids=["in a project", "no project marker"])
def test_a_session_recording_a_policy_file_replays_from_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: bool
) -> None:
    team = tmp_path / "team"
    if marker:
        write(team / "pyproject.toml", "")
    write(team / "policies" / "agentco.yaml", POLICY)
    (team / "recordings").mkdir()
    monkeypatch.chdir(team)
    with Session("policies/agentco.yaml", record="recordings/run.jsonl", name="run") as session:
        for _ in range(4):
            call = ToolCall.of("grep", {"q": "x"})
            runs = session.before_call(call).runs
            session.after_call(call, ToolResult(text="x") if runs else None)
        live = [s.action for s in session.steps]
    header = json.loads((team / "recordings" / "run.jsonl").read_text(encoding="utf-8").split("\n")[0])
    if marker:  # the file, named from the recording's folder: the team's edits to it apply to every replay
        assert header["policy"] == "../policies/agentco.yaml"
    else:  # outside any project the path could not be found from the recording: the policy travels inside it
        assert header["policy"]["loop_guard"] == {"warn_at": 2, "block_at": 4}
    elsewhere = tmp_path / "ci"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    replayed = replay(load(team / "recordings" / "run.jsonl"))
    assert [s.action for s in replayed.steps] == live and replayed.policy == "agentco"
