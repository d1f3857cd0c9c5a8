"""A live session fed any trace it can express gives replay's verdicts, and its recording replays to them too."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import assume, example, given, note
from hypothesis import strategies as st

from pytest_loopguard.core._model import LLMCall, Step, StepResult, ToolCall, ToolResult, Trace
from pytest_loopguard.errors import SessionError
from pytest_loopguard.io._format import load
from pytest_loopguard.live._session import Session
from pytest_loopguard.pytest import _strategies as lgst
from pytest_loopguard.runtime._replay import replay


def timeline(steps: tuple[StepResult, ...]) -> list[tuple[Any, ...]]:
    return [(s.index, s.kind, s.tool, s.action, [v.to_dict() for v in s.verdicts]) for s in steps]


def _expressible(trace: Trace) -> bool:
    """The session API reports a turn's calls after the response that announced them: a trace with `llm`
    steps must not have tool steps before its first one, nor right after a failed one. And a live run
    learns its objective from the first prompt when it comes: replay knows it from the start."""
    if not (trace.task is not None and trace.task.objective):
        for s in trace.steps:
            if s.message is not None and s.message.from_user:
                break
            if s.kind in ("tool", "llm", "rejected"):
                if any(m.message is not None and m.message.from_user for m in trace.steps):
                    return False
                break
    if not any(s.kind == "llm" for s in trace.steps):
        return True
    anchored = False
    for s in trace.steps:
        if s.llm is not None:
            anchored = not s.llm.failed
        elif s.kind == "rejected":
            anchored = False
        elif s.call is not None and not anchored:
            return False
    return True


LOOPING = lgst.build_trace(
    [Step(0, "llm", llm=LLMCall(100, 10)), Step(0, "tool", call=ToolCall.of("read_file", {"path": "a"}),
                                                  result=ToolResult(text="same"))] * 6,
    policy="default",
)


@given(trace=lgst.traces(expectations=False, max_steps=25), redact=st.booleans())
@example(trace=LOOPING, redact=True)
def test_a_fed_session_gives_replays_verdicts_and_records_them(trace: Trace, redact: bool) -> None:
    assume(_expressible(trace))
    note(f"policy={trace.policy!r}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fed.jsonl"
        spec = trace.policy if trace.policy is not None else "default"
        try:
            with Session(spec, record=path, task=trace.task, context=trace.context, now_ms=None,
                         redact=redact) as session:
                session.feed(trace.steps)
        except SessionError as e:  # only what _expressible rules out may be refused
            raise AssertionError(f"an expressible trace was refused: {e}") from None
        original = replay(trace)
        recorded = replay(load(path))
    live = timeline(session.steps)
    reached = [s for s in timeline(original.steps) if s[3] != "not_reached"]
    assert live[: len(reached)] == reached
    assert timeline(recorded.steps) == live
    assert (recorded.outcome, recorded.stopped_at, recorded.stopped_by) == (
        session.outcome, session.stopped_at, session.stopped_by)
    if original.outcome != "incomplete" or session.outcome != "incomplete":
        assert (original.outcome, original.stopped_at, original.stopped_by) == (
            session.outcome, session.stopped_at, session.stopped_by)
