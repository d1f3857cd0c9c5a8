"""Importers on small fixtures written from FORMATS.md: the formats without a real file here (OpenHands V1,
AG2 group chats) and the pitfalls of FORMATS.md §9 (invalid arguments, reused ids, orphans, parallel calls,
stripped fields, older files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import ImportedRun, Source, available, detect, import_runs, to_trace
from pytest_loopguard.io._runner import execute


def write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def one(path: Path, fmt: str | None = None) -> ImportedRun:
    (run,) = import_runs(path, fmt)
    to_trace(run)  # every imported run loads as a trace
    return run


def tools(run: ImportedRun) -> list[dict[str, Any]]:
    return [s for s in run.trace["steps"] if "tool" in s]


# ---- OpenHands V1 SDK event folder ------------------------------------------------------------------
def v1_folder(root: Path) -> Path:
    folder = root / "conv-1234"
    events: list[dict[str, Any]] = [
        {"kind": "SystemPromptEvent", "id": "e0", "source": "agent", "system_prompt": {"text": "You are OpenHands."}},
        {"kind": "MessageEvent", "id": "e1", "source": "user",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "Fix the bug"}]}},
        # two parallel calls from one model response
        {"kind": "ActionEvent", "id": "a1", "source": "agent", "tool_name": "terminal", "tool_call_id": "c1",
         "llm_response_id": "r1", "thought": [{"type": "text", "text": "look around"}],
         "tool_call": {"id": "c1", "name": "terminal", "arguments": '{"command": "ls"}'},
         "action": {"kind": "ExecuteBashAction", "command": "ls"}},
        {"kind": "ActionEvent", "id": "a2", "source": "agent", "tool_name": "terminal", "tool_call_id": "c2",
         "llm_response_id": "r1", "tool_call": {"id": "c2", "name": "terminal", "arguments": '{"command": "grep'},
         "action": {"kind": "ExecuteBashAction", "command": "grep"}},
        # results arrive out of order
        {"kind": "ObservationEvent", "id": "o2", "source": "environment", "tool_name": "terminal",
         "tool_call_id": "c2", "action_id": "a2",
         "observation": {"kind": "ExecuteBashObservation", "content": [{"type": "text", "text": "usage"}],
                         "exit_code": 2}},
        {"kind": "ObservationEvent", "id": "o1", "source": "environment", "tool_name": "terminal",
         "tool_call_id": "c1", "action_id": "a1",
         "observation": {"kind": "ExecuteBashObservation", "content": [{"type": "text", "text": "a.py"}],
                         "exit_code": 0}},
        {"kind": "ActionEvent", "id": "a3", "source": "agent", "tool_name": "file_editor", "tool_call_id": "c3",
         "llm_response_id": "r2", "action": {"kind": "FileEditorAction", "command": "view", "path": "a.py"}},
        {"kind": "UserRejectObservation", "id": "o3", "source": "user", "tool_name": "file_editor",
         "tool_call_id": "c3", "action_id": "a3", "rejection_reason": "not that file"},
        {"kind": "AgentErrorEvent", "id": "x1", "source": "agent", "tool_name": "nope", "tool_call_id": "c9",
         "error": "Tool 'nope' not found"},
        {"kind": "ObservationEvent", "id": "o9", "source": "environment", "tool_name": "terminal",
         "tool_call_id": "c42", "action_id": "a42", "observation": {"content": []}},
        {"kind": "PauseEvent", "id": "p1", "source": "user"},
        {"kind": "ActionEvent", "id": "a4", "source": "agent", "tool_name": "finish", "tool_call_id": "c4",
         "llm_response_id": "r3", "action": {"kind": "FinishAction", "message": "Fixed."}},
    ]
    for n, event in enumerate(events):
        write(folder / f"event-{n:05d}-{event['id']}.json", event)
    return folder


def test_openhands_v1_folder(tmp_path: Path) -> None:
    folder = v1_folder(tmp_path)
    assert detect(Source.from_path(folder), available()).name == "openhands-v1"
    run = one(folder)
    steps = run.trace["steps"]
    kinds = [next(k for k in ("tool", "llm", "message", "done") if k in s) for s in steps]
    assert kinds == ["message", "message", "llm", "tool", "tool", "llm", "tool", "message", "llm", "done"]
    ls, grep, view = tools(run)
    assert ls["args"] == {"command": "ls"} and ls["result"] == {"exit_code": 0, "text": "a.py"}
    assert ls["x-thought"] == "look around"
    # invalid JSON arguments: empty args, the raw text and the parse error kept
    assert grep["args"] == {} and grep["x-arguments"] == '{"command": "grep'
    assert grep["x-arguments-error"].startswith("invalid JSON")
    assert grep["result"]["exit_code"] == 2
    assert view["result"]["error"] == "rejected by the user: not that file"
    assert steps[7]["message"] == {"role": "user", "text": "Tool 'nope' not found", "origin": "harness"}
    assert steps[-1]["done"]["text"] == "Fixed."
    assert any("orphan observation" in w for w in run.warnings)
    assert "PauseEvent" in " ".join(run.unmapped)
    assert run.counts["failed"] == 2
    assert [s["source"]["index"] for s in tools(run)] == [2, 3, 6]


def test_openhands_v1_bad_event_file_is_named(tmp_path: Path) -> None:
    folder = v1_folder(tmp_path)
    (folder / "event-00003-a2.json").write_text('{"kind": "ActionEvent", ', encoding="utf-8")
    with pytest.raises(TraceError, match=r"event-00003-a2\.json:1: invalid JSON"):
        import_runs(folder)


# ---- AG2 group chat ---------------------------------------------------------------------------------
def test_ag2_group_chat(tmp_path: Path) -> None:
    chat = {"question_ID": "q-7", "history": [
        {"name": "user_proxy", "role": "human", "content": "Count the lines of data.csv"},
        {"name": "Data_Expert", "role": "user",
         "content": "Run this:\n```python\nprint(len(open('data.csv').read()))\n```"},
        {"name": "Computer_terminal", "role": "user",
         "content": "exitcode: 1 (execution failed)\nCode output: FileNotFoundError: data.csv"},
        {"name": "Data_Expert", "role": "user", "content": "Retry:\n```python\nprint(1)\n```"},
        {"name": "Computer_terminal", "role": "user", "content": "exitcode: 0 (execution succeeded)\nCode output: 1"},
        {"name": "Data_Expert", "role": "user", "content": "The answer is 1. TERMINATE"},
    ]}
    src = write(tmp_path / "chat.json", chat)
    assert detect(Source.from_path(src), available()).name == "ag2-groupchat"
    run = one(src)
    first, second = tools(run)
    assert first["tool"] == "execute_code" and first["args"] == {"code": "print(len(open('data.csv').read()))"}
    assert first["result"]["exit_code"] == 1 and first["agent"] == "Computer_terminal"
    assert first["x-proposed_by"] == "Data_Expert"
    assert second["result"]["exit_code"] == 0
    assert run.counts["failed"] == 1
    messages = [s["message"] for s in run.trace["steps"] if "message" in s]
    assert messages[0]["origin"] == "user"
    assert all(m["origin"] == "agent" and m["name"] == "Data_Expert" for m in messages[1:])
    assert run.trace["steps"][-1]["done"]["text"].endswith("TERMINATE")
    result = execute(to_trace(run))
    assert result.outcome == "completed"


# ---- mini-swe-agent 1.1 pitfalls: parallel calls, reused ids, orphans --------------------------------
def test_tool_calling_pitfalls(tmp_path: Path) -> None:
    def call(i: str, command: str) -> dict[str, Any]:
        arguments = json.dumps({"command": command})
        return {"id": i, "type": "function", "function": {"name": "bash", "arguments": arguments}}

    log = {"trajectory_format": "mini-swe-agent-1.1", "instance_id": "p-1", "info": {}, "messages": [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "", "tool_calls": [call("a", "ls"), call("b", "pwd")]},
        {"role": "tool", "tool_call_id": "b", "content": "<returncode>0</returncode><output>/</output>"},
        {"role": "tool", "tool_call_id": "a", "content": "<returncode>2</returncode><output>no</output>"},
        {"role": "tool", "tool_call_id": "zzz", "content": "<returncode>0</returncode>"},
        {"role": "assistant", "content": "", "tool_calls": [call("a", "cat x"), call("a", "cat y")]},
        {"role": "tool", "tool_call_id": "a", "content": "<returncode>0</returncode>"},
        {"role": "tool", "tool_call_id": "a", "content": "<returncode>1</returncode>"},
    ]}
    run = one(write(tmp_path / "p.json", log))
    calls = tools(run)
    assert [c["args"]["command"] for c in calls] == ["ls", "pwd", "cat x", "cat y"]
    assert [c["result"]["exit_code"] for c in calls] == [2, 0, 0, 1]  # paired by id, then by position
    assert calls[0]["x-call"] == "1/2"
    assert any("orphan result" in w for w in run.warnings)
    assert any("reused" in w for w in run.warnings)


# ---- SWE-agent: the oldest files have only action/observation/response/state/thought ------------------
def test_swe_agent_old_fields_and_enigma_flag(tmp_path: Path) -> None:
    traj = {"info": {"exit_status": "submitted"}, "trajectory": [
        {"action": "open f.py\n", "observation": "File f.py not found", "response": "", "state": "", "thought": ""},
        {"action": "submit picoCTF{no}\n", "observation": "Wrong flag!", "response": "", "state": "", "thought": ""},
        {"action": "edit 1:1\nx\nend_of_edit\n",
         "observation": "Your proposed edit has introduced new syntax error(s). Please understand the fixes",
         "response": "", "state": "", "thought": ""},
        {"action": "submit\n", "observation": "diff", "response": "", "state": "", "thought": ""},
    ]}
    run = one(write(tmp_path / "old.traj", traj))
    calls = tools(run)
    assert [c["args"]["command"] for c in calls] == ["open f.py", "submit picoCTF{no}", "edit 1:1\nx\nend_of_edit"]
    assert "error" not in calls[0]["result"]  # no error signal SWE-agent documents: not guessed
    assert calls[1]["result"]["error"] == "Wrong flag!"
    assert calls[2]["result"]["error"].startswith("Your proposed edit has introduced new syntax error(s)")
    assert "done" in run.trace["steps"][-1]
    assert run.trace["name"] == "old"


def test_a_stored_rejected_turn_is_one_rejected_step_at_the_assistant_message(tmp_path: Path) -> None:
    log = {"trajectory_format": "mini-swe-agent-1.1", "instance_id": "rj", "info": {}, "messages": [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "I will think first.",
         "extra": {"response": {"usage": {"prompt_tokens": 10, "completion_tokens": 5}}}},
        {"role": "user", "content": "No tool calls found in the response. Every response MUST include a tool call."},
        {"role": "user", "content": "Reminder: 3 steps left."},
    ]}
    run = one(write(tmp_path / "rj.json", log))
    rejected, reminder = run.trace["steps"][1:]
    assert rejected["rejected"] == {"reason": log["messages"][2]["content"], "text": "I will think first.",  # type: ignore[index]
                                    "llm": {"input_tokens": 10, "output_tokens": 5}}
    assert rejected["source"]["index"] == 1
    assert reminder["message"] == {"role": "user", "text": "Reminder: 3 steps left.", "origin": "harness"}
    assert run.counts["rejected"] == 1 and run.counts["calls"] == 0


# ---- OpenHands V0: cause pairing, parallel calls, stripped browser payloads, orphans --------------------
def test_openhands_v0_event_list_pitfalls(tmp_path: Path) -> None:
    response = {"id": "resp-1", "usage": {"prompt_tokens": 900, "completion_tokens": 40},
                "choices": [{"message": {"content": "Open both pages.", "tool_calls": [
                    {"id": "t1", "function": {"name": "browser", "arguments": '{"code": "goto(\\"a\\")"}'}},
                    {"id": "t2", "function": {"name": "browser", "arguments": "{not json"}}]}}]}
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "Compare two pages"}},
        {"id": 1, "source": "agent", "action": "browse_interactive",
         "args": {"browser_actions": 'goto("a")', "thought": "first"},
         "tool_call_metadata": {"function_name": "browser", "tool_call_id": "t1", "model_response": response}},
        {"id": 2, "source": "agent", "action": "browse_interactive", "args": {"browser_actions": "?"},
         "tool_call_metadata": {"function_name": "browser", "tool_call_id": "t2", "model_response": response}},
        # answered out of order; the browser payloads (screenshot, axtree) were stripped by event_to_trajectory
        {"id": 3, "source": "environment", "cause": 2, "observation": "browse", "content": "ERROR:\nbad code",
         "extras": {"url": "about:blank"}},
        {"id": 4, "source": "environment", "cause": 1, "observation": "browse", "content": "page a",
         "extras": {"url": "a", "error": False}},
        {"id": 5, "source": "environment", "cause": 99, "observation": "run", "content": "?", "extras": {}},
        {"id": 6, "source": "agent", "action": "run", "args": {"command": "false"}},
        {"id": 7, "source": "agent", "cause": 6, "observation": "run", "content": "",
         "extras": {"metadata": {"exit_code": 1}}, "success": False},
        {"id": 8, "source": "agent", "action": "finish", "args": {"final_thought": "Done", "task_completed": "true"}},
    ]
    src = write(tmp_path / "events.json", events)
    assert detect(Source.from_path(src), available()).name == "openhands-v0"
    run = one(src)
    steps = run.trace["steps"]
    assert [next(k for k in ("tool", "llm", "message", "done") if k in s) for s in steps] == [
        "message", "llm", "tool", "tool", "tool", "done"]
    assert steps[1]["llm"] == {"input_tokens": 900, "output_tokens": 40, "text": "Open both pages."}
    a, b, false = tools(run)
    assert a["args"] == {"code": 'goto("a")'} and a["result"] == {"text": "page a"}
    assert b["args"] == {} and b["x-arguments"] == "{not json" and b["result"]["error"] == "bad code"
    assert false["tool"] == "run" and false["args"] == {"command": "false"} and false["result"]["exit_code"] == 1
    assert steps[-1]["done"] == {"text": "Done", "success": True}
    assert any("orphan observation" in w for w in run.warnings)
    assert [s["source"]["index"] for s in tools(run)] == [1, 2, 6]
