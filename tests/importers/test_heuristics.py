"""Each heuristic docs/import.md lists per format, on a fixture that holds exactly that signal.

The real-corpus tests cover the signals the 14 real files contain; these cover the documented ones they
do not (SWE-agent `Error:` and `command not found`, mini-swe-agent timeouts, `extra.returncode` and
`FormatError`, OpenHands `[Error`, `success: false`, `partial`, a cause-less error, top-level exit codes,
Magentic-One's exit-code line, the V1 SDK's `is_error` and `metadata.exit_code`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.importers import ImportedRun, import_runs, to_trace


def one(path: Path, value: Any) -> ImportedRun:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    (run,) = import_runs(path)
    to_trace(run)
    return run


def steps(run: ImportedRun, kind: str) -> list[dict[str, Any]]:
    return [s for s in run.trace["steps"] if kind in s]


# ---- SWE-agent: result.error from the observation ---------------------------------------------------
@pytest.mark.parametrize(("observation", "error"), [
    ("Error: File 'x.py' not found\nmore", "Error: File 'x.py' not found"),
    ("ERROR: no such line", "ERROR: no such line"),
    ("/bin/bash: line 12: pytset: command not found", "/bin/bash: line 12: pytset: command not found"),
    ("Your proposed edit has introduced new syntax error(s). Please read this error message carefully",
     "Your proposed edit has introduced new syntax error(s)"),
    ("Errors found: 0", None),           # a word that starts like Error is no error
    ("No matches found for \"Error:\"", None),
])
def test_swe_agent_error_signals(tmp_path: Path, observation: str, error: str | None) -> None:
    traj = {"info": {"exit_status": "submitted"}, "trajectory": [
        {"action": "do it\n", "observation": observation, "response": "", "state": "", "thought": ""}]}
    (call,) = steps(one(tmp_path / "t.traj", traj), "tool")
    assert call["result"].get("error") == error


# ---- mini-swe-agent ---------------------------------------------------------------------------------
def mini(fmt: str, *messages: dict[str, Any]) -> dict[str, Any]:
    return {"trajectory_format": fmt, "instance_id": "m", "info": {},
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}, *messages]}


def test_mini_swe_agent_timeout_is_an_error(tmp_path: Path) -> None:
    run = one(tmp_path / "m.json", mini(
        "mini-swe-agent-1",
        {"role": "assistant", "content": "THOUGHT\n```bash\nsleep 999\n```"},
        {"role": "user", "content": "The last command <command>sleep 999</command> timed out and has been killed.\n"
                                    "The output of the command was:\n<output>\n</output>"}))
    (call,) = steps(run, "tool")
    assert call["result"]["error"] == "The last command <command>sleep 999</command> timed out and has been killed."


def test_mini_swe_agent_exit_code_from_extra_returncode_when_the_text_has_none(tmp_path: Path) -> None:
    def call(i: str) -> dict[str, Any]:
        return {"id": i, "type": "function", "function": {"name": "bash", "arguments": '{"command": "false"}'}}
    run = one(tmp_path / "m.json", mini(
        "mini-swe-agent-1.1",
        {"role": "assistant", "content": "", "tool_calls": [call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "nothing printed", "extra": {"returncode": 1}},
        {"role": "assistant", "content": "", "tool_calls": [call("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "<returncode>0</returncode>", "extra": {"returncode": 1}}))
    first, second = steps(run, "tool")
    assert first["result"] == {"exit_code": 1, "text": "nothing printed"}
    assert second["result"]["exit_code"] == 0  # the text's <returncode> comes first
    assert run.counts["failed"] == 1


def test_mini_swe_agent_format_error_interrupt_is_a_rejected_turn(tmp_path: Path) -> None:
    run = one(tmp_path / "m.json", mini(
        "mini-swe-agent-1.1",
        {"role": "assistant", "content": "Let me think."},
        {"role": "user", "content": "Your last output could not be used.", "extra": {"interrupt_type": "FormatError"}}))
    (rejected,) = steps(run, "rejected")
    assert rejected["rejected"] == {"reason": "Your last output could not be used.", "text": "Let me think."}
    assert not steps(run, "message")[2:]  # the harness reply is the rejected step's reason, not a message


# ---- OpenHands V0 -----------------------------------------------------------------------------------
def v0(*events: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": 0, "source": "user", "action": "message", "args": {"content": "task"}}, *events]


@pytest.mark.parametrize(("observation", "expected"), [
    ({"observation": "read", "content": "[Error opening file x.py]", "extras": {}},
     {"error": "[Error opening file x.py]"}),
    ({"observation": "run", "content": "killed", "extras": {}, "success": False}, {"error": "killed"}),
    ({"observation": "run", "content": "no match", "extras": {"metadata": {"exit_code": 1}}, "success": False},
     {"exit_code": 1}),                  # success: false with an exit code: the code says it
    ({"observation": "error", "content": "Timeout\nmore", "extras": {}}, {"error": "Timeout"}),
])
def test_openhands_v0_error_signals(tmp_path: Path, observation: dict[str, Any], expected: dict[str, Any]) -> None:
    run = one(tmp_path / "e.json", v0({"id": 1, "source": "agent", "action": "run", "args": {"command": "x"}},
                                      {"id": 2, "source": "environment", "cause": 1, **observation}))
    (call,) = steps(run, "tool")
    assert {k: v for k, v in call["result"].items() if k != "text"} == expected
    assert run.counts["failed"] == 1


@pytest.mark.parametrize(("completed", "success"), [("true", True), ("false", False), ("partial", None)])
def test_openhands_v0_finish_success(tmp_path: Path, completed: str, success: bool | None) -> None:
    run = one(tmp_path / "e.json", v0({"id": 1, "source": "agent", "action": "finish",
                                       "args": {"final_thought": "ok", "task_completed": completed}}))
    (done,) = steps(run, "done")
    assert done["done"].get("success") == success


def test_openhands_v0_an_error_with_no_cause_is_harness_feedback_not_a_call(tmp_path: Path) -> None:
    run = one(tmp_path / "e.json", v0({"id": 1, "source": "agent", "observation": "error",
                                       "content": "Invalid tool call: missing 'command'", "extras": {}}))
    assert not steps(run, "tool")
    assert steps(run, "message")[-1]["message"] == {
        "role": "user", "text": "Invalid tool call: missing 'command'", "origin": "harness"}


def test_openhands_v0_older_rows_pair_by_position_and_read_a_top_level_exit_code(tmp_path: Path) -> None:
    row = {"instance_id": "old-1", "history": [
        {"source": "user", "action": "message", "args": {"content": "task"}},
        {"source": "agent", "action": "run", "args": {"command": "make"}},
        {"source": "agent", "observation": "run", "content": "make: *** [all] Error 2", "exit_code": 2},
    ]}
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "instance_id": "old-2"}) + "\n", encoding="utf-8")
    first, second = import_runs(path)
    (call,) = steps(first, "tool")
    assert call["result"]["exit_code"] == 2 and call["source"] == {"file": str(path), "row": 0, "index": 1}
    assert second.run_id == "old-2"


# ---- Magentic-One -----------------------------------------------------------------------------------
def test_magentic_one_exit_code_line(tmp_path: Path) -> None:
    log = {"question_ID": "q", "history": [
        {"role": "human", "content": "task"},
        {"role": "Orchestrator (-> ComputerTerminal)", "content": "run it"},
        {"role": "ComputerTerminal", "content": "The script ran, then exited with Unix exit code: 1\nIts output was:"},
        {"role": "Orchestrator (-> ComputerTerminal)", "content": "again"},
        {"role": "ComputerTerminal", "content": "The script ran, then exited with Unix exit code: 0\nIts output was:"},
    ]}
    run = one(tmp_path / "w.json", log)
    assert [c["result"]["exit_code"] for c in steps(run, "tool")] == [1, 0]
    assert [c["agent"] for c in steps(run, "tool")] == ["ComputerTerminal"] * 2
    assert run.counts["failed"] == 1


# ---- OpenHands V1 SDK -------------------------------------------------------------------------------
@pytest.mark.parametrize(("observation", "expected"), [
    ({"content": [{"type": "text", "text": "boom\nmore"}], "is_error": True}, {"error": "boom"}),
    ({"content": [], "error": "File not found"}, {"error": "File not found"}),
    ({"content": [{"type": "text", "text": "x"}], "metadata": {"exit_code": 3}}, {"exit_code": 3}),
])
def test_openhands_v1_error_signals(tmp_path: Path, observation: dict[str, Any], expected: dict[str, Any]) -> None:
    folder = tmp_path / "conv"
    folder.mkdir()
    events = [
        {"kind": "ActionEvent", "id": "a", "tool_name": "terminal", "tool_call_id": "c",
         "action": {"kind": "ExecuteBashAction", "command": "x"}},
        {"kind": "ObservationEvent", "id": "o", "tool_call_id": "c", "action_id": "a", "observation": observation},
    ]
    for n, event in enumerate(events):
        (folder / f"event-{n:05d}-{event['id']}.json").write_text(json.dumps(event), encoding="utf-8")
    (run,) = import_runs(folder)
    (call,) = steps(run, "tool")
    assert {k: v for k, v in call["result"].items() if k != "text"} == expected
