"""The Claude Agent SDK integration driving the real Claude Code CLI (the one bundled in the SDK's wheel), offline:
the model is a scripted Messages API on localhost (`MessagesAPI`), Claude Code's own tools really run in a
temporary folder, and the hooks travel over the SDK's real control protocol. Slow: each run starts Claude Code."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, Message, ResultMessage, query

from pytest_loopguard import load_file, replay
from pytest_loopguard.integrations._messages_api import MessagesAPI, Script, text, tool_use
from pytest_loopguard.integrations.claude_agent_sdk import loopguard_hooks
from pytest_loopguard.live import Session

pytestmark = pytest.mark.slow

FAILING = "echo ran >> counter.txt; echo '1 failed'; exit 1"  # each run of the tool leaves a line in counter.txt


def run(tmp_path: Path, script: Script, session: Session | None) -> tuple[MessagesAPI, list[Message], list[str]]:
    """One `query()` of the real CLI in `tmp_path/work` against `script`; the messages and Claude Code's stderr."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    (work / "app.py").write_text("x = 1\n")
    (work / "counter.txt").write_text("")
    errors: list[str] = []
    api = MessagesAPI(script)
    with api:
        options = ClaudeAgentOptions(
            env=api.env(home=str(home)), cwd=str(work), allowed_tools=["Bash", "Read"], setting_sources=[],
            hooks=loopguard_hooks(session) if session is not None else None, stderr=errors.append)

        async def go() -> list[Message]:
            return [m async for m in query(prompt="Make the tests pass.", options=options)]

        messages = asyncio.run(go())
    return api, messages, errors


def tool_results(api: MessagesAPI) -> list[dict[str, Any]]:
    """Every tool result Claude Code sent the model, in order (the last request holds the whole conversation)."""
    last = api.requests[-1]["messages"]
    return [block for m in last if m["role"] == "user" and isinstance(m["content"], list)
            for block in m["content"] if block.get("type") == "tool_result"]


def same_failing_command(n: int, request: Any) -> list[dict[str, Any]]:
    return [tool_use("Bash", command=FAILING)] if n < 20 else text("I give up.")


def test_a_repeated_failing_command_is_warned_blocked_and_stopped_where_replay_says(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        api, messages, errors = run(tmp_path, same_failing_command, session)
    replayed = replay(load_file(path)[0], "default")
    live = [(s.index, s.kind, s.action) for s in session.steps]
    assert live == [(s.index, s.kind, s.action) for s in replayed.steps], errors
    assert (session.outcome, session.stopped_at, session.stopped_by) == (
        replayed.outcome, replayed.stopped_at, replayed.stopped_by) == ("stopped", 8, "loop_guard")
    assert [a for _, kind, a in live if kind == "tool"] == ["allow"] * 2 + ["warn"] * 2 + ["block"] * 3 + ["stop"]
    # Claude Code really ran the command four times: the blocked calls and the stopped one never ran
    assert (tmp_path / "work" / "counter.txt").read_text().splitlines() == ["ran"] * 4
    # the model was asked 8 times and never again after the stop
    assert len(api.requests) == 8
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    # what the model read: the failures' output, then each block's message as the (error) result of its call
    shown = tool_results(api)
    assert len(shown) == 7 and all(r["is_error"] for r in shown)
    assert "1 failed" in json.dumps(shown[0]["content"])
    assert "Blocked: tool 'Bash' called 5 times with identical parameters" in json.dumps(shown[4]["content"])
    # the warnings reached the model after the 3rd and 4th results (Claude Code adds a hook's context to the turn)
    later = json.dumps(api.requests[3]["messages"][-1])
    assert "called 3 times with identical parameters" in later


def mixed(n: int, request: Any) -> list[dict[str, Any]]:
    """Re-reads one file, repeats a failing command with a read beside it, then answers."""
    if n < 5:
        return [tool_use("Read", file_path="app.py")]
    if n < 8:
        return [tool_use("Bash", command=FAILING), tool_use("Read", file_path=f"log{n % 2}.txt")]
    if n < 13:
        return [tool_use("Bash", command=FAILING)]
    return text("Done.")


@pytest.mark.parametrize("policy", ["default", "gemini-cli", "openhands", "roo"])
def test_the_recording_replays_to_the_live_verdicts_and_messages(tmp_path: Path, policy: str) -> None:
    path = tmp_path / f"{policy}.jsonl"
    with Session(policy, record=path, now_ms=None) as session:
        _, _, errors = run(tmp_path, mixed, session)
    replayed = replay(load_file(path)[0], policy)

    def seen(steps: Any) -> list[Any]:
        return [(s.index, s.kind, s.tool, s.action, [v.to_dict() for v in s.verdicts]) for s in steps]

    assert seen(session.steps) == seen(replayed.steps), errors
    assert (session.outcome, session.stopped_at, session.stopped_by) == (
        replayed.outcome, replayed.stopped_at, replayed.stopped_by)
    assert any(s.verdicts for s in session.steps), "the run drew no verdict: it proves nothing"


def reads_then_answer(n: int, request: Any) -> list[dict[str, Any]]:
    if n == 0:
        return [tool_use("Read", file_path="app.py"), tool_use("Bash", command="ls")]
    if n == 1:
        return [tool_use("Read", file_path="counter.txt")]
    return text("All green.")


def test_an_agent_without_a_loop_runs_to_completion_unchanged(tmp_path: Path) -> None:
    bare_api, bare, _ = run(tmp_path / "bare", reads_then_answer, None)
    path = tmp_path / "guarded.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        api, messages, errors = run(tmp_path / "guarded", reads_then_answer, session)
    assert session.outcome == "completed" and session.stopped_at is None, errors
    assert all(s.action == "allow" and not s.verdicts for s in session.steps)
    assert tool_results(api) == tool_results(bare_api)  # the model read exactly what it read unguarded
    assert [type(m).__name__ for m in messages] == [type(m).__name__ for m in bare]
    steps = load_file(path)[0].steps
    assert [s.kind for s in steps] == ["message", "tool", "tool", "tool", "done"]
    assert [s.call.tool for s in steps if s.call is not None] == ["Read", "Bash", "Read"]
    assert steps[-1].done is not None and steps[-1].done.text == "All green."
