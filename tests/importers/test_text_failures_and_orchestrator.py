"""Issue 19's two importer fixes: an OpenAI-chat log of the OpenHands SDK's tools counts the failures its
results mark in text only, and a Magentic-One orchestrator's termination line is its message, not a call.

`fixtures/openhands_sdk_completion.json` is written as software-agent-sdk's telemetry writes a completion log
(`log_completions`: the request context `messages`, `tools`, `kwargs`, `context_window`, then `response`,
`cost`, `timestamp`, `latency_sec`, `usage_summary`): the chat of a `file_editor`/`terminal` agent whose
results carry the file editor's ToolError texts as they are, "Ran into [Errno 2] …" and "Invalid `path`
parameter: …", and a terminal output that says "error" with exit code 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from files import write

from pytest_loopguard.importers import import_runs, to_trace
from pytest_loopguard.importers.openai_chat import SDK_ERROR_HEADERS, SDK_ERROR_MARKERS
from pytest_loopguard.io._runner import execute

FIXTURE = Path(__file__).parent / "fixtures" / "openhands_sdk_completion.json"

# one text per marker, as the SDK's tools write it (file_editor/editor.py, exceptions.py, impl.py; agent.py)
SAMPLES = {
    r"Ran into .+ while trying to (?:read|write to) ":
        "Ran into [Errno 13] Permission denied: '/w/x.py' while trying to write to /w/x.py",
    r"Invalid `[^`]+` parameter: ":
        "Invalid `view_range` parameter: [0, 5]. Its first element `0` should be within the range of lines "
        "of the file: [1, 20].",
    r"Parameter `[^`]+` is required for command: ": "Parameter `old_str` is required for command: str_replace.",
    r"No replacement was performed": "No replacement was performed, old_str `foo` did not appear verbatim in /w/a.py.",
    r"Unrecognized command \S+\. The allowed commands for ":
        "Unrecognized command paste. The allowed commands for FileEditor tool are: view, create, str_replace",
    r"No edit history found for ": "No edit history found for /w/a.py.",
    r"File validation failed for ":
        "File validation failed for /w/big.bin: File is too large (12.0MB). Maximum allowed size is 10MB.",
    r"Failed to read image file ": "Failed to read image file /w/a.png: cannot identify image file",
    r"Cannot view .+: file contains binary content":
        "Cannot view /w/a.bin: file contains binary content that cannot be decoded as text. Error: 'utf-8'",
    r"Operation '[^']+' is not allowed on file '":
        "Operation 'create' is not allowed on file '/w/b.py'. Only the following files can be edited: ['/w/a.py']",
    r"Error validating args .+ for tool '":
        "Error validating args {\"command\": 3} for tool 'terminal': 1 validation error for TerminalAction",
    r"ERROR:\n": "ERROR:\nInvalid `path` parameter: /w/x. The path /w/x does not exist. Please provide a valid path.",
    "[An error occurred during execution.]": "[An error occurred during execution.]\nbash: syntax error",
    "Tool Execution Error.": "Tool Execution Error. The tool raised TimeoutError",
}


def _chat(tool: str, text: str, command: str = "view") -> dict[str, Any]:
    args = json.dumps({"command": command, "path": "/w/x.py"})
    return {"messages": [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool, "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": text}]},
    ]}


def _call(tmp_path: Path, tool: str, text: str) -> dict[str, Any]:
    (run,) = import_runs(write(tmp_path, "chat.json", json.dumps(_chat(tool, text))), "openai-chat")
    (call,) = [s for s in run.trace["steps"] if "tool" in s]
    return call  # type: ignore[no-any-return]


def test_every_marker_has_a_sample() -> None:
    assert set(SAMPLES) == {m.pattern for m in SDK_ERROR_MARKERS} | set(SDK_ERROR_HEADERS)


def test_the_sdk_log_counts_its_two_failures_at_the_calls_that_failed() -> None:
    (run,) = import_runs(FIXTURE)
    calls = [s for s in run.trace["steps"] if "tool" in s]
    assert [(c["tool"], "error" in c["result"]) for c in calls] == [
        ("file_editor", True), ("terminal", False), ("file_editor", True), ("file_editor", False)]
    assert run.counts["failed"] == 2
    assert calls[0]["result"]["error"].startswith("Ran into [Errno 2]")
    assert calls[2]["result"]["error"].startswith("Invalid `path` parameter")
    assert calls[1]["result"]["exit_code"] == 0  # its output says "config error": still a success
    execute(to_trace(run))


@pytest.mark.parametrize("pattern", sorted(SAMPLES))
@pytest.mark.parametrize("tool", ["file_editor", "terminal", "str_replace_editor", "execute_bash"])
def test_each_marker_fails_a_call_of_the_openhands_tools(tmp_path: Path, pattern: str, tool: str) -> None:
    call = _call(tmp_path, tool, SAMPLES[pattern])
    assert call["result"]["error"] == SAMPLES[pattern]


@pytest.mark.parametrize("pattern", sorted(SAMPLES))
def test_the_same_text_from_another_agents_tool_is_no_failure(tmp_path: Path, pattern: str) -> None:
    call = _call(tmp_path, "read_file", SAMPLES[pattern])
    assert "error" not in call["result"] and "exit_code" not in call["result"]


@pytest.mark.parametrize("text", [
    "I ran into [Errno 2] while trying to read the docs, so here is the file:\n1 import os",  # not at the start
    "Here's the result of running `cat -n` on /w/x.py:\n     1\tInvalid `path` parameter: is a string here",
    "error: unused variable\nwarning: 3 errors found\n[Command finished with exit code 0]",  # "error" in output
    "Traceback (most recent call last):\n  ...\n[Command finished with exit code -1]",  # still running
    "The file /w/x.py has been edited. No replacement was performed earlier, now it was.",
])
def test_near_misses_in_an_sdk_log_are_no_failure(tmp_path: Path, text: str) -> None:
    call = _call(tmp_path, "terminal", text)
    assert "error" not in call["result"] and call["result"].get("exit_code", 0) == 0


def test_the_terminal_exit_code_is_read_from_its_closing_line(tmp_path: Path) -> None:
    call = _call(tmp_path, "terminal", "FAILED tests/test_a.py::test_x\n[Command finished with exit code 1]")
    assert call["result"]["exit_code"] == 1 and "error" not in call["result"]
    assert "exit_code" not in _call(tmp_path, "bash", "x\n[Command finished with exit code 1]")["result"]


# ---- Magentic-One --------------------------------------------------------------------------------------
def _magentic(tmp_path: Path) -> Any:
    history = [
        {"role": "human", "content": "What is the capital of France?"},
        {"role": "Orchestrator (thought)", "content": "Updated Ledger: ask WebSurfer."},
        {"role": "Orchestrator (-> WebSurfer)", "content": "Search for the capital of France."},
        {"role": "WebSurfer", "content": "I typed 'capital of France' into the search bar.\nParis."},
        {"role": "Orchestrator (termination condition)", "content": "No agent selected."},
    ]
    (run,) = import_runs(write(tmp_path, "3.json", json.dumps({"question_ID": "q1", "history": history})))
    return run


def test_the_orchestrators_termination_line_is_its_message_not_a_call(tmp_path: Path) -> None:
    run = _magentic(tmp_path)
    steps = run.trace["steps"]
    assert [s["tool"] for s in steps if "tool" in s] == ["WebSurfer"] and run.counts["calls"] == 1
    last = steps[-1]
    assert last["message"] == {"role": "assistant", "text": "No agent selected.", "origin": "agent",
                               "name": "Orchestrator"}
    assert last["x-event"] == "termination condition" and last["source"]["index"] == 4
    execute(to_trace(run))
