"""Typed steps: one class per kind with its payload required, `Step` their union, and every kind written and
read back as it was."""

from __future__ import annotations

import dataclasses
import pickle
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from steplines import as_tuple

from pytest_loopguard import strategies as lgst
from pytest_loopguard.core._model import (
    STEP_CLASSES,
    STEP_KINDS,
    CompactedStep,
    Compaction,
    Done,
    DoneStep,
    LLMCall,
    LLMStep,
    Message,
    MessageStep,
    NotRun,
    PhaseStep,
    Rejected,
    RejectedStep,
    Step,
    StepExpect,
    StepSource,
    ToolCall,
    ToolResult,
    ToolStep,
    Trace,
    make_step,
)
from pytest_loopguard.io._format import dumps, load, loads

PAYLOADS: dict[str, tuple[type, tuple[str, ...]]] = {
    "tool": (ToolStep, ("call",)),
    "llm": (LLMStep, ("llm",)),
    "phase": (PhaseStep, ("phase",)),
    "message": (MessageStep, ("message",)),
    "done": (DoneStep, ("done",)),
    "rejected": (RejectedStep, ("rejected",)),
    "compacted": (CompactedStep, ("compacted",)),
}
ALL_PAYLOADS = ("call", "result", "llm", "phase", "message", "done", "rejected", "compacted")


def one_of_each() -> list[Step]:
    common: dict[str, Any] = {"t": 5, "agent": "planner", "source": StepSource("run.jsonl", 3, "evt-1"),
                              "extensions": {"x-note": [1, "a"]}}
    return [
        MessageStep(0, Message("user", "fix the bug"), **common),
        LLMStep(1, LLMCall(1200, 40, None, "let me look"), **common),
        ToolStep(2, ToolCall.of("read_file", {"path": "a.py"}), ToolResult(text="x = 1", tokens=4), **common),
        ToolStep(3, ToolCall.of("run", {"cmd": "pytest"}), ToolResult.failure("1 failed"),
                 expect=StepExpect("block", short=True), t=9),
        ToolStep(4, ToolCall.of("ls")),  # no recorded result
        PhaseStep(5, "verify", **common),
        RejectedStep(6, Rejected("no_tool_call", "I think", LLMCall(10, 2)), **common),
        LLMStep(7, LLMCall(error="rate limit")),
        ToolStep(8, ToolCall.of("run", {"cmd": "rm -rf /"}), not_run=NotRun("denied", "user refused", "user"),
                 **common),
        ToolStep(9, ToolCall.of("run", {"cmd": "ls"}), not_run=NotRun("cancelled", "sibling failed")),
        CompactedStep(10, Compaction("auto", 155_000, "the summary"), **common),
        CompactedStep(11, Compaction()),
        DoneStep(12, Done(True, "fixed"), **common),
    ]


@pytest.mark.parametrize("kind", STEP_KINDS)
def test_each_kind_has_its_own_class_whose_payload_is_required_and_never_none(kind: str) -> None:
    cls, required = PAYLOADS[kind]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    assert STEP_CLASSES[kind] is cls and fields["kind"].default == kind and not fields["kind"].init
    for name in required:
        assert fields[name].default is dataclasses.MISSING and fields[name].default_factory is dataclasses.MISSING
        assert "None" not in str(fields[name].type), (kind, name, fields[name].type)
    with pytest.raises(TypeError):
        cls(0)  # the payload cannot be left out
    # the other kinds' payloads read None and take no storage (class attributes, not fields)
    others = set(ALL_PAYLOADS) - set(fields)
    assert others and not others & set(cls.__slots__)
    assert all(getattr(cls, name) is None for name in others)


def test_a_step_reads_none_for_other_kinds_payloads_and_cannot_be_given_one() -> None:
    step = ToolStep(0, ToolCall.of("ls"))
    assert (step.llm, step.phase, step.message, step.done, step.rejected, step.compacted) == (None,) * 6
    assert step.not_run is None and LLMStep(0, LLMCall()).not_run is None
    assert step.outcome == ToolResult() and step.result is None
    llm = LLMStep(1, LLMCall(1, 2))
    assert (llm.call, llm.result) == (None, None)
    with pytest.raises((AttributeError, TypeError)):
        llm.call = ToolCall.of("ls")  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.call = ToolCall.of("cat")  # type: ignore[misc]


@pytest.mark.parametrize("fmt", ["yaml", "json", "jsonl"])
def test_every_kind_round_trips_load_dump_load(fmt: str, tmp_path: Path) -> None:
    trace = Trace(name="every-kind", steps=tuple(one_of_each()))
    path = tmp_path / f"every-kind.{fmt}"
    path.write_text(dumps(trace, fmt), encoding="utf-8")
    once = load(path)  # from a file: a JSONL file's tool and llm lines take the fast path
    [twice] = loads(dumps(once, fmt), fmt=fmt)
    assert {s.kind for s in once.steps} == set(STEP_KINDS)
    for original, read, reread in zip(trace.steps, once.steps, twice.steps, strict=True):
        assert type(read) is type(original) is type(reread)
        assert as_tuple(read) == as_tuple(reread)
        assert as_tuple(dataclasses.replace(read, line=None)) == as_tuple(original)


def test_the_one_class_constructor_builds_the_class_of_its_kind() -> None:
    call = ToolCall.of("read_file", {"path": "a.py"})
    built = [
        Step(0, "tool", call=call, result=ToolResult(), t=1),
        Step(1, "tool", call),  # positions as the one-class Step took them
        Step(2, "llm", llm=LLMCall(1, 2)),
        Step(3, "phase", phase="act"),
        Step(4, "message", message=Message("user", "hi")),
        Step(5, "done", done=Done()),
        Step(6, "rejected", rejected=Rejected("empty")),
        Step(7, "compacted", compacted=Compaction("manual")),
        Step(8, "tool", call=call, not_run=NotRun("denied", "no")),
    ]
    assert [type(s) for s in built] == [ToolStep, ToolStep, LLMStep, PhaseStep, MessageStep, DoneStep, RejectedStep,
                                        CompactedStep, ToolStep]
    assert built[8].not_run == NotRun("denied", "no") and built[8].result is None
    assert as_tuple(built[0]) == as_tuple(ToolStep(0, call, ToolResult(), t=1))
    assert all(isinstance(s, Step) for s in built) and issubclass(DoneStep, Step)
    assert not isinstance(call, Step) and not issubclass(ToolCall, Step)
    assert as_tuple(make_step(3, "phase", phase="act")) == as_tuple(built[3])
    with pytest.raises(TypeError, match="takes `llm`, not call"):
        Step(0, "llm", call=call)
    with pytest.raises(TypeError, match="no call"):
        Step(0, "tool")
    with pytest.raises(ValueError, match="unknown step kind 'thought'"):
        make_step(0, "thought")
    with pytest.raises(TypeError, match=r"never ran \(denied\) has no `result`"):
        make_step(0, "tool", call=call, result=ToolResult(), not_run=NotRun("denied", "no"))
    with pytest.raises(TypeError, match="takes `compacted`, not not_run"):
        make_step(0, "compacted", compacted=Compaction(), not_run=NotRun("cancelled", "x"))


def test_steps_pickle_replace_and_compare_by_identity() -> None:
    for step in one_of_each():
        back = pickle.loads(pickle.dumps(step))
        assert type(back) is type(step) and as_tuple(back) == as_tuple(step)
        moved = dataclasses.replace(step, index=40)
        assert type(moved) is type(step) and moved.index == 40 and step.index != 40
        twin = dataclasses.replace(step)
        assert twin != step and step == step and len({step, twin}) == 2  # eq=False: by identity, as before


@pytest.mark.parametrize("kind", STEP_KINDS)
@settings(max_examples=10, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_strategies_draw_every_kind_as_its_class(kind: str, data: st.DataObject) -> None:
    drawn = data.draw(lgst.steps(kinds=(kind,), additions=True))
    assert type(drawn) is PAYLOADS[kind][0] and drawn.kind == kind


def test_the_strategies_default_kinds_are_each_drawn() -> None:
    seen: set[type] = set()

    @settings(max_examples=60, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(lgst.steps())
    def draw(step: Step) -> None:
        seen.add(type(step))

    draw()
    assert seen == {ToolStep, LLMStep, PhaseStep, MessageStep, DoneStep}


def test_mypy_narrows_the_union_by_kind_and_types_other_payloads_as_optional(tmp_path: Path) -> None:
    from mypy import api as mypy_api
    source = tmp_path / "narrowing.py"
    source.write_text(textwrap.dedent("""
        from pytest_loopguard.core._model import LLMStep, Step, ToolStep

        def read(step: Step) -> None:
            reveal_type(step.call)
            if step.kind == "tool":
                reveal_type(step.call)
            elif step.kind == "llm":
                reveal_type(step.llm)
            match step:
                case ToolStep(call=call):
                    reveal_type(call)
                case _:
                    reveal_type(step.call)

        LLMStep(0)
    """))
    out, _, _ = mypy_api.run([
        "--strict", "--warn-unreachable", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
        "--follow-imports", "silent", str(source),
    ])
    notes = [line.split(": ", 2)[2] for line in out.splitlines() if ": note: Revealed type" in line]
    assert notes == [
        'Revealed type is "pytest_loopguard.core._toolcall.ToolCall | None"',  # on the union: optional
        'Revealed type is "pytest_loopguard.core._toolcall.ToolCall"',  # narrowed by the kind literal
        'Revealed type is "pytest_loopguard.core._payloads.LLMCall"',
        'Revealed type is "pytest_loopguard.core._toolcall.ToolCall"',  # narrowed by match
        'Revealed type is "None"',  # no other kind has a call
    ], out
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1 and 'Missing positional argument "llm"' in errors[0], out
