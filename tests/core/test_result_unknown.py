"""A call the live policy blocked never ran: the recording marks its result unknown (`blocked`), a replay under
a looser policy feeds no result for it (not a success), and every output says the replay is a what-if
(issue 26 finding 5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core._model import ToolCall, ToolResult
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.io._format import load
from pytest_loopguard.live._session import Session
from pytest_loopguard.runtime._replay import replay

STRICT = {"preset": "default", "loop_guard": {"warn_at": 2, "block_at": 3}}
LOOSE = "{preset: default, loop_guard: false}"


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    with Session(STRICT, record=path, name="run") as session:
        for _ in range(4):
            call = ToolCall.of("run_tests", {"k": "x"})
            runs = session.before_call(call).runs
            session.after_call(call, ToolResult.failure("1 failed") if runs else None)
    return path


def test_the_recording_marks_a_blocked_call_result_unknown(recording: Path) -> None:
    lines = [json.loads(line) for line in recording.read_text(encoding="utf-8").splitlines()]
    assert [line.get("blocked") for line in lines[1:]] == [
        None, None, {"reason": "loop_guard.consecutive_block"}, {"reason": "loop_guard.consecutive_block"}]
    trace = load(recording)
    assert replay(trace).unknown_results == ()  # under its own policy nothing is unknown: blocked again
    assert trace.steps[2].label() == "run_tests {\"k\":\"x\"}"  # a table shows the call; a what-if says more


def test_a_what_if_replay_feeds_no_success_for_a_call_blocked_live(recording: Path) -> None:
    seen: list[Any] = []

    class AfterCalls:
        @hookimpl
        def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> None:
            seen.append(result)

    result = replay(load(recording), {"preset": "default", "loop_guard": False}, plugins=[AfterCalls()])
    assert result.unknown_results == (2, 3)
    # the two failures it recorded, and nothing for the two calls whose results it never had (a success before)
    assert [r.ok if r is not None else None for r in seen] == [False, False]


def test_every_output_says_a_replay_is_a_what_if(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    note = "what-if: 2 calls the recording's policy blocked ran under default+overrides (step 2, 3); the recording " \
        "has no result for them (result unknown)"
    assert cli.main(["replay", str(recording), "--policy", LOOSE]) == 0  # streamed (JSONL)
    assert note in capsys.readouterr().out
    assert cli.main(["replay", f"{recording}::run", "--policy", LOOSE]) == 0  # loaded whole
    text = capsys.readouterr().out
    assert note in text
    assert cli.main(["replay", str(recording), "--policy", LOOSE, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["result_unknown"] == [2, 3] and data["steps"][2]["result_unknown"] is True
    assert data["steps"][2]["not_run"] == {"how": "blocked", "reason": "loop_guard.consecutive_block"}
    assert cli.main(["run", str(recording), "--policy", LOOSE]) in (0, 1)
    assert note in capsys.readouterr().out
    assert cli.main(["run", str(recording), "--policy", LOOSE, "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)[0]["result_unknown"] == [2, 3]
    strict, loose = recording.parent / "strict.yaml", recording.parent / "loose.yaml"
    strict.write_text(json.dumps(STRICT), encoding="utf-8")
    loose.write_text("preset: default\nloop_guard: false\n", encoding="utf-8")
    assert cli.main(["diff", str(recording), "--before", str(strict), "--after", str(loose)]) == 1
    assert note.replace("default+overrides", "loose") in capsys.readouterr().out
    report = recording.parent / "report.md"
    assert cli.main(["run", str(recording), "--policy", LOOSE, "--report", str(report)]) in (0, 1)
    capsys.readouterr()
    assert "## What-if replays (results unknown)" in report.read_text(encoding="utf-8")
