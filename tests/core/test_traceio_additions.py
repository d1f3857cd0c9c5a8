"""The format additions real runs need: exit codes, rejected turns, message origins, step agent and source."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_loopguard.core._model import LLMCall, Message, Rejected, StepSource
from pytest_loopguard.errors import TraceError
from pytest_loopguard.io._format import dumps, load_file, loads

ADDITIONS = """
loopguard: 1
name: additions
steps:
  - message: {role: user, text: fix the bug}
    agent: orchestrator
    source: {file: run.jsonl, row: 0, index: 0}
  - llm: {input_tokens: 900, output_tokens: 40}
  - tool: bash
    args: {command: grep -n foo a.py}
    result: {text: "", exit_code: 1}
    agent: coder
    source: {file: run.jsonl, row: 3, index: evt-17}
  - rejected: {reason: no tool call, text: "I think we should", llm: {input_tokens: 950, output_tokens: 12}}
    source: {file: run.jsonl, row: null, index: 4}
  - message: {role: user, text: "Your last output did not use any tool calls.", origin: harness}
  - message: {role: assistant, text: "I clicked it.", origin: agent, name: WebSurfer}
  - message: {role: user, text: "done?", origin: agent, name: Orchestrator}
  - message: {role: system, text: "budget low", origin: harness}
  - rejected: {reason: several calls}
  - tool: bash
    args: {command: python t.py}
    result: {ok: true, text: FAILURE, exit_code: 0}
  - tool: bash
    args: {command: make}
    result: {ok: true, exit_code: 2}
  - tool: bash
    args: {command: make}
    result: {error: boom, exit_code: 0}
"""


def one(text: str, fmt: str = "yaml") -> object:
    return loads(textwrap.dedent(text), fmt=fmt)[0]


def test_additions_load_into_the_model() -> None:
    trace = loads(ADDITIONS)[0]
    steps = trace.steps
    assert [s.kind for s in steps] == [
        "message", "llm", "tool", "rejected", "message", "message", "message", "message", "rejected",
        "tool", "tool", "tool",
    ]
    assert steps[0].agent == "orchestrator" and steps[0].source == StepSource("run.jsonl", 0, 0)
    assert steps[2].source == StepSource("run.jsonl", 3, "evt-17") and steps[2].agent == "coder"
    assert steps[3].source == StepSource("run.jsonl", None, 4)
    assert steps[1].agent is None and steps[1].source is None
    # a non-zero code with neither ok nor error is a failure; ok/error, when written, decide
    assert steps[2].outcome.ok is False and steps[2].outcome.exit_code == 1
    assert steps[9].outcome.ok is True and steps[9].outcome.exit_code == 0
    assert steps[10].outcome.ok is True and steps[10].outcome.exit_code == 2
    assert steps[11].outcome.ok is False and steps[11].outcome.error == "boom"
    assert steps[3].rejected == Rejected("no tool call", "I think we should", LLMCall(950, 12))
    assert steps[8].rejected == Rejected("several calls")
    assert steps[3].label() == "rejected: no tool call"
    messages = [s.message for s in steps if s.message is not None]
    assert messages == [
        Message("user", "fix the bug"),
        Message("user", "Your last output did not use any tool calls.", "harness"),
        Message("assistant", "I clicked it.", "agent", "WebSurfer"),
        Message("user", "done?", "agent", "Orchestrator"),
        Message("system", "budget low", "harness"),
    ]
    assert [m.from_user for m in messages] == [True, False, False, False, False]
    assert Message("user", "x", "user").from_user


@pytest.mark.parametrize("fmt", ["yaml", "json", "jsonl"])
def test_additions_round_trip_in_every_format(fmt: str) -> None:
    trace = loads(ADDITIONS)[0]
    again = loads(dumps(trace, fmt), fmt=fmt)[0]
    assert dumps(again, "yaml") == dumps(trace, "yaml")
    for a, b in zip(trace.steps, again.steps, strict=True):
        assert (a.kind, a.result, a.message, a.rejected, a.agent, a.source) == (
            b.kind, b.result, b.message, b.rejected, b.agent, b.source)


def test_failed_exit_code_dumps_without_a_redundant_ok() -> None:
    trace = loads(ADDITIONS)[0]
    text = dumps(trace, "yaml")
    assert "result:\n    text: ''\n    exit_code: 1\n" in text
    assert "ok: true\n    exit_code: 2" in text


def test_objective_is_the_first_message_of_a_person() -> None:
    trace = one("""
        loopguard: 1
        name: objective
        steps:
          - message: {role: user, text: "Please use a tool", origin: harness}
          - message: {role: user, text: "Book the flight"}
    """)
    assert trace.objective == "Book the flight"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("step", "field", "problem"),
    [
        ("{tool: bash, result: {exit_code: one}}", "result.exit_code", "expected an integer exit code"),
        ("{tool: bash, result: {exit_code: true}}", "result.exit_code", "expected an integer exit code"),
        ("{rejected: {text: hi}}", "rejected.reason", "missing 'reason'"),
        ("{rejected: {reason: ''}}", "rejected.reason", "non-empty string"),
        ("{rejected: {reason: x, llm: {error: boom}}}", "rejected.llm.error", "unknown key 'error'"),
        ("{rejected: {reason: x, why: y}}", "rejected.why", "unknown key 'why'"),
        ("{rejected: no}", "rejected", "expected a mapping"),
        ("{message: {role: user, text: x, origin: bot}}", "message.origin", "unknown origin 'bot'"),
        ("{message: {role: system, text: x, origin: user}}", "message.origin", "has role user, got 'system'"),
        ("{message: {role: assistant, text: x, origin: harness}}", "message.origin", "role user or system"),
        ("{message: {role: system, text: x, origin: agent, name: A}}", "message.origin", "user or assistant"),
        ("{message: {role: user, text: x, origin: agent}}", "message.name", "needs 'name'"),
        ("{message: {role: user, text: x, name: Bob}}", "message.name", "needs origin 'agent'"),
        ("{llm: {}, agent: ''}", "agent", "non-empty string"),
        ("{llm: {}, agent: [a]}", "agent", "expected a non-empty string"),
        ("{llm: {}, source: {row: 1}}", "source.file", "missing 'file'"),
        ("{llm: {}, source: {file: a, row: -1}}", "source.row", "integer ≥ 0"),
        ("{llm: {}, source: {file: a, index: [1]}}", "source.index", "integer ≥ 0"),
        ("{llm: {}, source: {file: a, line: 1}}", "source.line", "unknown key 'line'"),
        ("{llm: {}, rejected: {reason: x}}", None,
         "exactly one of tool, llm, phase, message, done, rejected, compacted"),
    ],
)
def test_bad_additions_give_one_clear_error(tmp_path: Path, step: str, field: str | None, problem: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"loopguard: 1\nname: bad\nsteps:\n  - llm: {{}}\n  - {step}\n", encoding="utf-8")
    with pytest.raises(TraceError) as info:
        load_file(path)
    err = info.value
    assert (err.step, err.field, err.line) == (1, field, 5)
    assert problem in str(err) and str(path) in str(err)
