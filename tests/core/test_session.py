"""Session: a live run under every preset records a trace that replays to the verdicts it was given."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from planted_secrets import PLANTED, assert_no_planted_secret

from pytest_loopguard.core._model import LLMCall, StepResult, Task, ToolCall, ToolResult
from pytest_loopguard.errors import SessionError
from pytest_loopguard.io._format import load
from pytest_loopguard.live._session import Session
from pytest_loopguard.runtime._replay import replay

PRESETS = sorted(p.stem for p in (Path(__file__).parents[2] / "pytest_loopguard" / "presets").glob("*.yaml"))

# A small tool set so that repeats (loops) are common; two calls carry secrets that the recording redacts.
TOOLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "src/app.py"}),
    ("read_file", {"path": "src/util.py", "offset": 10}),
    ("search_files", {"pattern": "TODO"}),
    ("write_file", {"path": "src/app.py", "content": "x = 1"}),
    ("browser_snapshot", {}),
    ("browser_click", {"index": 12}),
    ("navigate", {"url": "https://example.com/login"}),
    ("terminal", {"command": "pytest -x"}),
    ("terminal", {"command": f"curl -H 'Authorization: Bearer {PLANTED['bearer-token']}' https://api.example.com"}),
    ("terminal", {"command": f"OPENAI_API_KEY={PLANTED['openai-key']} python run.py"}),
    ("todo", {"todos": [{"id": 1, "content": "fix", "status": "in_progress"}]}),
]
LLM_ERRORS = ["Rate limit reached (429), please retry", "This model's maximum context length is 8192 tokens",
              "Internal server error"]


class FakeClock:
    """A time source that moves only when told (the run's `t` values, deterministic)."""

    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def drive(session: Session, rng: random.Random, clock: FakeClock, *, model_calls: bool, turns: int = 30) -> None:
    """A seeded agent: repeats its last call often, fails calls, hits model errors, honours every verdict."""
    session.message("user", f"Fix the failing test; the key is {PLANTED['anthropic-key']}")
    last = ToolCall.of(*TOOLS[0])
    for turn in range(turns):
        clock.now += rng.choice([0, 150, 2_000, 40_000])
        if turn % 9 == 8:
            session.phase(rng.choice(["act", "verify", "recover"]))
        calls = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            last = last if rng.random() < 0.55 else ToolCall.of(*rng.choice(TOOLS))
            calls.append(last)
        if turn % 5 == 4:
            session.message("user", f"Harness: {turn} turns used", origin="harness")
        if rng.random() < 0.12:  # the harness refuses the response: no usable call
            if model_calls and rng.random() < 0.5:
                session.before_llm(rng.choice([None, 2_000]))
            usage = LLMCall(rng.randint(500, 9_000), rng.randint(1, 50)) if rng.random() < 0.5 else None
            session.rejected("no tool call", "I think I am done?", usage)
            if session.ended:
                return
            continue
        if model_calls:
            while True:
                session.before_llm(rng.choice([None, 900, 12_000, 60_000]))
                error = rng.choice(LLM_ERRORS) if rng.random() < 0.12 else None
                llm = LLMCall(rng.randint(500, 70_000), None if error else rng.randint(5, 400), error,
                              None if error else f"turn {turn}")
                decision = session.llm_result(llm, () if error else calls)
                if session.ended or error is None or decision.action not in ("retry", "compact_retry"):
                    break
            if session.ended:
                return
            if error is not None:
                continue
        for call in calls:
            clock.now += rng.choice([0, 300])
            decision = session.before_call(call, changed=rng.random() < 0.05)
            result: ToolResult | str | None = None
            if decision.runs:
                r = rng.random()
                text = f"output {rng.randint(0, 3)} " * rng.randint(0, 600)
                result = (ToolResult.failure("command failed") if r < 0.25
                          else ToolResult(ok=False, text=text, exit_code=2) if r < 0.35
                          else text if r < 0.6 else ToolResult(text=text, exit_code=0))
            session.after_call(call, result)
            if session.ended:
                return
    session.done(True, "all tests pass")


def timeline(steps: tuple[StepResult, ...]) -> list[tuple[Any, ...]]:
    """Everything about each step's verdicts, their messages included (the Guard saw the redacted text too)."""
    return [(s.index, s.kind, s.tool, s.action, [v.to_dict() for v in s.verdicts]) for s in steps]


def live_and_replayed(tmp_path: Path, preset: str, seed: int, *, model_calls: bool = True) -> tuple[Session, Any]:
    path = tmp_path / f"{preset}-{seed}-{model_calls}.jsonl"
    clock = FakeClock()
    objective = f"Fix the failing test; deploy with {PLANTED['github-token']}"
    task = Task(objective, "explore", {"max_tool_calls": 40}) if seed % 3 == 0 else None
    context = {"window_tokens": 16_000} if seed % 2 else None
    with Session(preset, record=path, task=task, context=context, max_turns=30, now_ms=clock,
                 agent="coder" if seed % 2 else None) as session:
        drive(session, random.Random(seed), clock, model_calls=model_calls)
    return session, replay(load(path))


@pytest.mark.parametrize("preset", PRESETS)
def test_a_recorded_live_run_replays_to_the_live_verdicts(tmp_path: Path, preset: str) -> None:
    actions: set[str] = set()
    for seed in range(6):
        for model_calls in (True, False):
            session, result = live_and_replayed(tmp_path, preset, seed, model_calls=model_calls)
            assert timeline(session.steps) == timeline(result.steps), (seed, model_calls)
            assert (session.outcome, session.stopped_at, session.stopped_by) == (
                result.outcome, result.stopped_at, result.stopped_by), (seed, model_calls)
            actions |= {s.action for s in session.steps}
    # the runs are rough enough that every preset intervenes somewhere (else this proves little)
    assert actions - {"allow"}, preset


def test_the_preset_runs_cover_every_kind_of_intervention(tmp_path: Path) -> None:
    seen: set[str] = set()
    kinds: set[str] = set()
    outcomes: set[str | None] = set()
    for preset in ("default", "qa-agent", "claw-code", "spacebot-channel"):
        for seed in range(6):
            for model_calls in (True, False):
                session, _ = live_and_replayed(tmp_path, preset, seed, model_calls=model_calls)
                seen |= {s.action for s in session.steps}
                kinds |= {s.kind for s in session.steps}
                outcomes.add(session.outcome)
    assert {"warn", "block", "stop", "retry", "compact_retry", "fail", "not_reached"} <= seen
    assert {"rejected", "message", "phase", "done"} <= kinds
    assert {"completed", "stopped", "failed"} <= outcomes  # exhausted: see the turn-start stop test


def test_the_recording_keeps_no_planted_secret(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    clock = FakeClock()
    with Session("default", record=path, now_ms=clock) as session:
        drive(session, random.Random(3), clock, model_calls=True)
    assert_no_planted_secret(path.read_text(encoding="utf-8"))


def read(path: str) -> ToolCall:
    return ToolCall.of("read_file", {"path": path})


def test_a_warned_call_returns_the_agents_own_result_with_the_warning_appended(tmp_path: Path) -> None:
    secret = PLANTED["openai-key"]
    with Session("default", record=tmp_path / "run.jsonl", now_ms=None) as session:
        replies = []
        for _ in range(3):  # default: identical reads warn at the third
            assert session.before_call(read("a.py")).runs
            replies.append(session.after_call(read("a.py"), f"KEY={secret}"))
    assert [r.action for r in replies] == ["allow", "allow", "warn"]
    assert replies[0].content == f"KEY={secret}" and not replies[0].is_error
    warnings = [v.message for v in replies[2].decision.verdicts if v.action == "warn"]
    assert warnings and replies[2].content == f"KEY={secret}\n\n" + "\n".join(warnings)
    recorded = load(tmp_path / "run.jsonl")
    assert [s.outcome.text for s in recorded.steps] == ["KEY=<redacted:openai-key:1>"] * 3


def test_a_blocked_call_is_not_run_and_its_reply_is_the_block_as_an_error(tmp_path: Path) -> None:
    with Session("default", record=tmp_path / "run.jsonl", now_ms=None) as session:
        for _ in range(3):
            session.before_call(read("a.py"))
            session.after_call(read("a.py"), "same")
        decision = session.before_call(read("a.py"))
        assert decision.action == "block" and not decision.runs
        reply = session.after_call(read("a.py"), "ignored: the call did not run")
    assert reply.is_error and not reply.ran
    assert reply.content == f"Error: {decision.message}"
    assert load(tmp_path / "run.jsonl").steps[-1].result is None  # a blocked call has no result


def test_a_stop_at_a_turns_start_records_the_turns_calls_as_not_reached(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    two_turns = {"preset": "default", "context": {"max_turns": 1}}  # the second turn's start stops the run
    with Session(two_turns, record=path, now_ms=None) as session:
        session.llm_result(LLMCall(100, 10), [read("a.py")])
        session.before_call(read("a.py"))
        session.after_call(read("a.py"), "x")
        assert session.llm_result(LLMCall(200, 10), [read("b.py"), read("c.py")]).action == "stop"
        with pytest.raises(SessionError, match=r"after the run ended \(exhausted at step 2 by context\)"):
            session.before_call(read("b.py"))
    assert session.ended
    result = replay(load(path))
    assert timeline(session.steps) == timeline(result.steps)
    assert [s.action for s in session.steps][-2:] == ["not_reached", "not_reached"]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (lambda s: s.before_call(read("b.py")),
         r"call read_file \{\"path\":\"b\.py\"\} was not announced by the model's response; "
         r"expected read_file \{\"path\":\"a\.py\"\}"),
        (lambda s: s.after_call(read("a.py"), "x"), r"after_call for read_file.* without its before_call"),
        (lambda s: s.before_llm(), r"before_llm while calls of the last response were never reported"),
        (lambda s: (s.before_call(read("a.py")), s.message("user", "hi")), r"message before after_call reported"),
    ],
)
def test_events_out_of_replays_order_are_refused(events: Any, message: str) -> None:
    with Session("default", now_ms=None) as session:
        session.llm_result(LLMCall(100, 10), [read("a.py")])
        with pytest.raises(SessionError, match=message):
            events(session)


def test_a_session_that_started_without_model_calls_cannot_report_one_later() -> None:
    with Session("default", now_ms=None) as session:
        session.before_call(read("a.py"))
        session.after_call(read("a.py"), "x")
        with pytest.raises(SessionError, match="report model calls from the start"):
            session.before_llm()


def test_an_exception_in_the_loop_records_the_pending_call_and_an_unsuccessful_end(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with pytest.raises(RuntimeError, match="tool crashed"), Session("default", record=path, now_ms=None) as session:
        session.message("user", "go")
        session.llm_result(LLMCall(100, 10), [read("a.py")])
        session.before_call(read("a.py"))
        raise RuntimeError("tool crashed")
    trace = load(path)
    assert [s.kind for s in trace.steps] == ["message", "llm", "tool", "done"]
    assert trace.steps[2].outcome.error == "the run ended before the call returned: RuntimeError: tool crashed"
    assert trace.steps[3].done is not None and trace.steps[3].done.success is False
    assert session.outcome == "completed" == replay(trace).outcome
    with pytest.raises(SessionError, match="after the session was closed"):
        session.message("user", "more")


def test_a_run_that_just_ends_is_incomplete_or_exhausted_as_replay_says(tmp_path: Path) -> None:
    for max_turns, expected in ((None, "incomplete"), (2, "exhausted")):
        path = tmp_path / f"run-{max_turns}.jsonl"
        with Session("default", record=path, max_turns=max_turns, now_ms=None) as session:
            for name in ("a.py", "b.py"):
                session.llm_result(LLMCall(100, 10), [read(name)])
                session.before_call(read(name))
                session.after_call(read(name), "x")
            assert session.outcome is None
        assert session.outcome == expected == replay(load(path)).outcome


def test_a_done_kind_call_completes_the_run() -> None:
    with Session("default", now_ms=None) as session:
        session.llm_result(LLMCall(100, 10), [ToolCall.of("done", {"answer": "42"}), read("late.py")])
        session.before_call(ToolCall.of("done", {"answer": "42"}))
        session.after_call(ToolCall.of("done", {"answer": "42"}), "ok")
    assert session.outcome == "completed"
    assert [s.action for s in session.steps] == ["allow", "allow", "not_reached"]


def test_the_prompt_count_given_before_the_call_is_what_the_recording_says(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session("hermes", record=path, now_ms=None) as session:
        session.before_llm(prompt_tokens=5_000)
        session.llm_result(LLMCall(input_tokens=5_400, output_tokens=12))
        session.llm_result(LLMCall(input_tokens=6_000, output_tokens=12))  # no before_llm: the provider's count
    steps = load(path).steps
    assert steps[0].llm is not None and steps[0].llm.input_tokens == 5_000
    assert steps[0].extensions == {"x-input_tokens": 5_400}
    assert steps[1].llm is not None and steps[1].llm.input_tokens == 6_000 and steps[1].extensions == {}


def test_the_clock_gives_each_step_its_time_since_the_start(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    clock = FakeClock()
    with Session("default", record=path, now_ms=clock) as session:
        clock.now += 250
        session.message("user", "go")
        clock.now += 1_000
        session.phase("act")
    assert [s.t for s in load(path).steps] == [250, 1_250]


def test_a_phase_must_be_known() -> None:
    with Session("default", now_ms=None) as session, pytest.raises(ValueError, match="unknown phase 'testing'"):
        session.phase("testing")


def test_messages_keep_their_origin_and_steps_their_agent(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session("default", record=path, agent="planner", now_ms=None) as session:
        session.message("user", "feedback", origin="harness")
        session.message("user", "the real task")
        session.agent = "coder"
        session.message("assistant", "over to you", origin="agent", name="planner")
    trace = load(path)
    assert [(s.message.origin, s.message.name, s.agent) for s in trace.steps if s.message] == [
        ("harness", None, "planner"), (None, None, "planner"), ("agent", "planner", "coder")]
    assert trace.objective == "the real task" == session.guard.run.objective  # harness feedback is not the task


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"role": "system", "origin": "user"}, "a message with origin 'user' has role user, got 'system'"),
        ({"role": "user", "origin": "agent"}, "`name` names the other agent"),
        ({"role": "user", "name": "bob"}, "`name` names the other agent"),
        ({"role": "user", "origin": "robot"}, "unknown origin 'robot'"),
    ],
)
def test_a_message_that_the_format_cannot_hold_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with Session("default", now_ms=None) as session, pytest.raises(ValueError, match=message):
        session.message(**kwargs)


def test_a_rejected_response_after_before_llm_records_its_usage(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session("browser-use", record=path, now_ms=None) as session:
        session.before_llm(prompt_tokens=700)
        session.rejected("no tool call", "Thinking out loud", LLMCall(900, 30))
        session.rejected("several calls where one is required")
    steps = load(path).steps
    assert steps[0].rejected is not None and steps[0].rejected.llm == LLMCall(700, 30)
    assert steps[1].rejected is not None and steps[1].rejected.llm is None
    assert timeline(session.steps) == timeline(replay(load(path)).steps)
