"""Session: a live run under every preset records a trace that replays to the verdicts it was given."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from planted_secrets import PLANTED, assert_no_planted_secret

from pytest_loopguard.errors import SessionError
from pytest_loopguard.model import LLMCall, StepResult, Task, ToolCall, ToolResult
from pytest_loopguard.replay import replay
from pytest_loopguard.session import Session
from pytest_loopguard.traceio import load

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
                result = ToolResult.failure("command failed") if r < 0.3 else text if r < 0.6 else ToolResult(text=text)
            session.after_call(call, result)
            if session.ended:
                return
    session.done(True, "all tests pass")


def timeline(steps: tuple[StepResult, ...]) -> list[tuple[Any, ...]]:
    """Everything about each step's verdicts but the message text (which may quote a redacted secret)."""
    return [(s.index, s.kind, s.tool, s.action, [(v.engine, v.action, v.reason, dict(v.data)) for v in s.verdicts])
            for s in steps]


def live_and_replayed(tmp_path: Path, preset: str, seed: int, *, model_calls: bool = True) -> tuple[Session, Any]:
    path = tmp_path / f"{preset}-{seed}-{model_calls}.jsonl"
    clock = FakeClock()
    task = Task("Fix the failing test", "explore", {"max_tool_calls": 40}) if seed % 3 == 0 else None
    context = {"window_tokens": 16_000} if seed % 2 else None
    with Session(preset, record=path, task=task, context=context, max_turns=30, now_ms=clock) as session:
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
    outcomes: set[str | None] = set()
    for preset in ("default", "qa-agent", "claw-code", "spacebot-channel"):
        for seed in range(6):
            for model_calls in (True, False):
                session, _ = live_and_replayed(tmp_path, preset, seed, model_calls=model_calls)
                seen |= {s.action for s in session.steps}
                outcomes.add(session.outcome)
    assert {"warn", "block", "stop", "retry", "compact_retry", "fail", "not_reached"} <= seen
    assert {"completed", "stopped", "failed", "exhausted"} <= outcomes


def test_the_recording_keeps_no_planted_secret(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    clock = FakeClock()
    with Session("default", record=path, now_ms=clock) as session:
        drive(session, random.Random(3), clock, model_calls=True)
    assert_no_planted_secret(path.read_text(encoding="utf-8"))
