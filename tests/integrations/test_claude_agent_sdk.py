"""The Claude Agent SDK integration against the real SDK: its `query()` and control protocol over a scripted
`Transport` that plays Claude Code's side (ScriptedCLI), offline: no CLI process, no network, no key."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, Message, ResultMessage, query

from pytest_loopguard import load_file, replay
from pytest_loopguard.integrations._claude_agent_sdk_cli import Script
from pytest_loopguard.integrations.claude_agent_sdk import LoopguardHooks, ScriptedCLI, loopguard_hooks, tool_result
from pytest_loopguard.live import Session
from pytest_loopguard.runtime._policy import preset_names


def use(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": args}


def say(words: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": words}]


def failing_bash(args: dict[str, Any]) -> Any:
    raise RuntimeError("Exit code 1\n1 failed")  # Claude Code's Bash reports a non-zero exit as an error


def read(args: dict[str, Any]) -> str:
    return f"contents of {args['file_path']}"


TOOLS = {"Bash": failing_bash, "Read": read}


def run(session: Session | None, script: Script, *, parallel: bool = False,
        options: ClaudeAgentOptions | None = None) -> tuple[ScriptedCLI, list[Message]]:
    cli = ScriptedCLI(script, TOOLS, parallel=parallel)
    if options is None:
        options = ClaudeAgentOptions(hooks=loopguard_hooks(session)) if session is not None else ClaudeAgentOptions()

    async def go() -> list[Message]:
        return [m async for m in query(prompt="Make the tests pass.", options=options, transport=cli)]

    return cli, asyncio.run(go())


def guarded(tmp_path: Path, policy: str, script: Script, **kw: Any) -> tuple[Session, ScriptedCLI, list[Message], Path]:
    path = tmp_path / f"{policy}.jsonl"
    with Session(policy, record=path, now_ms=None) as session:
        cli, messages = run(session, script, **kw)
    return session, cli, messages, path


def same_failing_command(n: int) -> list[dict[str, Any]]:
    return [use("Bash", command="pytest -x")] if n < 20 else say("I give up.")


def test_a_repeated_call_is_warned_then_blocked_then_stopped_where_replay_says(tmp_path: Path) -> None:
    session, cli, messages, path = guarded(tmp_path, "default", same_failing_command)
    replayed = replay(load_file(path)[0], "default")
    live = [(s.index, s.kind, s.action) for s in session.steps]
    assert live == [(s.index, s.kind, s.action) for s in replayed.steps]
    assert (session.outcome, session.stopped_at, session.stopped_by) == (
        replayed.outcome, replayed.stopped_at, replayed.stopped_by) == ("stopped", 8, "loop_guard")
    assert [a for _, kind, a in live if kind == "tool"] == ["allow"] * 2 + ["warn"] * 2 + ["block"] * 3 + ["stop"]
    # what Claude was given: warnings as the hook's additionalContext, blocks as the deny reason
    assert [bool(s.context) for s in cli.shown] == [False, False, True, True, False, False, False, False]
    assert "called 3 times with identical parameters" in cli.shown[2].context
    assert cli.shown[4].content == ("Blocked: tool 'Bash' called 5 times with identical parameters. "
                                    "Try a different approach or different parameters.")
    assert cli.shown[4].is_error
    # the stop: `continue: false` ended the run, its message the result's stop reason; Claude was not asked again
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.stop_reason is not None and result.stop_reason.startswith("Stopped: tool 'Bash' was called 8 times")
    assert result.num_turns == 8


def test_a_blocked_tool_never_runs(tmp_path: Path) -> None:
    session, cli, _, _ = guarded(tmp_path, "default", same_failing_command)
    assert len(cli.shown) == 8
    assert cli.ran == [("Bash", {"command": "pytest -x"})] * 4  # three blocked calls and the stopped one never ran
    assert sum(s.action == "block" for s in session.steps) == 3


def mixed(n: int) -> list[dict[str, Any]]:
    """Re-reads one file, repeats a failing command, two calls per message at times; then answers."""
    if n < 6:
        return [use("Read", file_path="/repo/app.py")]
    if n < 9:
        return [use("Bash", command="make test"), use("Read", file_path=f"/repo/log{n % 2}.txt")]
    if n < 16:
        return [use("Bash", command="make test")]
    return say("Done.")


@pytest.mark.parametrize("policy", preset_names())
def test_the_recording_replays_to_the_live_verdicts_and_messages(tmp_path: Path, policy: str) -> None:
    session, _, _, path = guarded(tmp_path, policy, mixed)
    replayed = replay(load_file(path)[0], policy)

    def seen(steps: Any) -> list[Any]:
        return [(s.index, s.kind, s.tool, s.action, [v.to_dict() for v in s.verdicts]) for s in steps]

    assert seen(session.steps) == seen(replayed.steps)
    assert (session.outcome, session.stopped_at, session.stopped_by) == (
        replayed.outcome, replayed.stopped_at, replayed.stopped_by)


def test_a_policy_that_acts_on_the_mixed_run_is_among_them(tmp_path: Path) -> None:
    """The preset loop above proves something only if the run draws verdicts of every kind under some preset."""
    actions = set()
    for policy in ("default", "gemini-cli"):
        session, _, _, _ = guarded(tmp_path, policy, mixed)
        actions |= {s.action for s in session.steps}
    assert {"warn", "block", "stop"} <= actions


def two_reads_at_once_then_answer(n: int) -> list[dict[str, Any]]:
    if n == 0:
        return [use("Read", file_path="/repo/a.py"), use("Read", file_path="/repo/b.py")]
    if n == 1:
        return [use("Read", file_path="/repo/c.py")]
    return say("All green.")


def test_an_agent_without_a_loop_runs_to_completion_unchanged(tmp_path: Path) -> None:
    bare_cli, bare = run(None, two_reads_at_once_then_answer, parallel=True)
    session, cli, messages, path = guarded(tmp_path, "default", two_reads_at_once_then_answer, parallel=True)
    assert session.outcome == "completed" and session.stopped_at is None
    assert all(s.action == "allow" and not s.verdicts for s in session.steps)
    assert cli.ran == bare_cli.ran and cli.shown == bare_cli.shown
    assert [type(m).__name__ for m in messages] == [type(m).__name__ for m in bare]
    assert isinstance(messages[-1], ResultMessage) and messages[-1].stop_reason is None
    steps = load_file(path)[0].steps
    assert [s.kind for s in steps] == ["message", "tool", "tool", "tool", "done"]
    assert steps[-1].done is not None and steps[-1].done.text == "All green."
    assert [s.call.args for s in steps if s.call is not None] == [
        {"file_path": "/repo/a.py"}, {"file_path": "/repo/b.py"}, {"file_path": "/repo/c.py"}]


def test_your_own_hooks_run_after_the_guards(tmp_path: Path) -> None:
    heard: list[str] = []

    async def audit(hook_input: Any, tool_use_id: str | None, context: Any) -> Any:
        heard.append(hook_input["tool_name"])
        return {}

    with Session("default", record=tmp_path / "r.jsonl", now_ms=None) as session:
        hooks = loopguard_hooks(session, {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[audit])]})
        run(session, same_failing_command, options=ClaudeAgentOptions(hooks=hooks))
    assert heard == ["Bash"] * 8 and session.outcome == "stopped"


def test_tool_responses_become_results() -> None:
    assert tool_result("x").text == "x"
    assert tool_result({"stdout": "ok", "stderr": "", "interrupted": False}).ok is True
    failed = tool_result([{"type": "text", "text": "no"}])
    assert failed.ok and failed.text == '[{"type": "text", "text": "no"}]'
    assert tool_result({"isError": True, "content": []}).ok is False
    assert tool_result({"error": "boom"}).error == "boom"


def test_importing_the_package_imports_no_framework() -> None:
    code = ("import sys, pytest_loopguard, pytest_loopguard.integrations, pytest_loopguard.live; "
            "assert 'claude_agent_sdk' not in sys.modules, 'claude_agent_sdk imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_call_a_permission_rule_refused_is_recorded_as_denied(tmp_path: Path) -> None:
    def script(n: int) -> list[dict[str, Any]]:
        return [[use("Read", file_path="/repo/a.py"), use("Bash", command="rm -rf build")],
                [use("Read", file_path="/repo/b.py")]][n] if n < 2 else say("Done.")

    path = tmp_path / "refused.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        cli = ScriptedCLI(script, TOOLS, refuse={"Bash"})

        async def go() -> None:
            # calls come one by one here, so none has to wait for the one before: a call still holding the
            # turn when the next arrives was refused (wait_s=0 settles it at once, with no clock involved)
            options = ClaudeAgentOptions(hooks=loopguard_hooks(session, wait_s=0))
            async for _ in query(prompt="Clean up.", options=options, transport=cli):
                pass

        asyncio.run(go())
    assert cli.ran == [("Read", {"file_path": "/repo/a.py"}), ("Read", {"file_path": "/repo/b.py"})]
    assert session.outcome == "completed"
    steps = load_file(path)[0].steps
    assert [(s.call.tool, s.not_run.how if s.not_run else None) for s in steps if s.call is not None] == [
        ("Read", None), ("Bash", "denied"), ("Read", None)]
    assert [s.action for s in replay(load_file(path)[0], "default").steps] == [s.action for s in session.steps]


def test_without_a_session_the_hooks_build_one_from_policy_and_record(tmp_path: Path) -> None:
    guard = LoopguardHooks(policy="default", record=tmp_path / "own.jsonl")
    with guard.session:
        run(None, same_failing_command, options=ClaudeAgentOptions(hooks=guard.hooks()))
    replayed = replay(load_file(tmp_path / "own.jsonl")[0])
    assert (replayed.outcome, replayed.stopped_at) == (guard.session.outcome, guard.session.stopped_at) == (
        "stopped", 8)
