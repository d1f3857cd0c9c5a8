"""A kept prompt view settles old records into compact ones: same entries, same verdicts, no event objects held."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from pytest_loopguard import Guard, ToolCall, ToolResult, resolve_policy
from pytest_loopguard.core._model import LLMCall, Message
from pytest_loopguard.runtime import _guard as runtime
from pytest_loopguard.runtime._guard import Turn

NEVER = 10**9  # a keep no run reaches: nothing is settled


def _run(policy: str, keep: int, monkeypatch: pytest.MonkeyPatch, *, transcript: bool = False,
         read_every: int = 0, overflow_at: int | None = None) -> tuple[Guard, list[Any]]:
    """A live run mixing what view entries are built from: calls with and without token counts, failures,
    blocked repeats with warnings, polling results dedup replaces, messages, model text and none."""
    monkeypatch.setattr(runtime, "_SETTLE_KEEP", keep)
    guard = Guard(resolve_policy(policy), keep_transcript=transcript, context={"window_tokens": 6000})
    view = guard.run.view
    seen: list[Any] = []
    for i in range(300):
        llm = LLMCall(output_tokens=None if i % 3 else 9, text="thinking " * (i % 4) or None)
        seen.append(guard.before_llm(llm))
        if overflow_at is not None and i == overflow_at:
            seen.append(guard.llm_result(LLMCall(error="ContextWindowExceededError: prompt is too long")))
        seen.append(guard.llm_result(llm))
        guard.end_turn()
        if i % 17 == 0:
            seen.append(guard.message(Message("user", f"keep going {i}")))
        calls = [ToolCall.of("read_file", {"path": f"src/m{i % 7}.py", "offset": 1 + 50 * (i // 7), "limit": 50})]
        if i % 5 == 0:
            calls.append(ToolCall.of("browser_snapshot", {}))
        if i % 11 < 4:  # the same command again and again: warnings, then blocks
            calls.append(ToolCall.of("execute_bash", {"command": "make test"}))
        seen.append(guard.start_turn(calls, llm))
        for k, call in enumerate(calls):
            result = (ToolResult(text=f"line {i}\n" * 5, tokens=None if i % 2 else 40) if k == 0 else
                      ToolResult(ok=False, error="exit 2", exit_code=2) if call.tool == "execute_bash" else
                      ToolResult(text=f"page {i}"))
            before = guard.before_call(call)
            seen.append(guard.after_call(call, result if before.runs else None, before))
            seen.append(guard.shown)
        if read_every and i % read_every == 0:
            seen.append((view.size(), view.tokens(), view.tool_results(0, frozenset({"browser_snapshot"}))))
    seen.append((view.size(), view.tokens()))
    return guard, seen


@pytest.mark.parametrize("policy", ["openhands", "default"])
@pytest.mark.parametrize("read_every", [0, 7])
def test_settled_records_give_the_same_entries_tokens_and_verdicts(
        policy: str, read_every: int, monkeypatch: pytest.MonkeyPatch) -> None:
    settled, settled_seen = _run(policy, 4, monkeypatch, read_every=read_every, overflow_at=250)
    kept, kept_seen = _run(policy, NEVER, monkeypatch, read_every=read_every, overflow_at=250)
    assert settled_seen == kept_seen
    assert [v.reason for d in kept_seen if hasattr(d, "verdicts") for v in d.verdicts]  # the run has verdicts
    assert settled.run.view.entries == kept.run.view.entries
    assert settled.run.view.tokens() == kept.run.view.tokens()


def test_the_transcript_is_the_same_when_its_records_were_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    settled, _ = _run("openhands", 4, monkeypatch, transcript=True)
    kept, _ = _run("openhands", NEVER, monkeypatch, transcript=True)
    assert list(settled.run.transcript) == list(kept.run.transcript)
    assert len(list(kept.run.transcript)) > 700


def test_a_view_kept_unread_holds_no_event_objects_past_the_recent_records(monkeypatch: pytest.MonkeyPatch) -> None:
    # openhands reads its view only on an overflow: without one the records pile up for the whole run
    guard, _ = _run("openhands", 4, monkeypatch)
    deferred = guard.run.view.deferred
    assert deferred is not None
    records = deferred.records
    assert len(records) == guard.run.view.size() > 700 and deferred.settled >= len(records) - 2 * 4 - 4
    objects = (ToolCall, ToolResult, Turn, LLMCall)
    held = [r for r in records[:deferred.settled] for o in (r, *gc.get_referents(r)) if isinstance(o, objects)]
    assert held == []
    # and the recent ones are still the cheap records noted per event
    assert any(isinstance(r, Turn) for r in records[deferred.settled:])

