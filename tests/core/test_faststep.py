"""The fast JSONL step reader gives exactly what the loader's full checks give: the same Step for a good line,
the same one-line error for a bad one; and it really takes its fast path for ordinary lines."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest
from steplines import as_tuple, same_as_full

from pytest_loopguard.bench._replay import synthetic_trace
from pytest_loopguard.core._limits import MAX_DEPTH, MAX_INT, MAX_SETTING, MAX_STEPS, MAX_STRING
from pytest_loopguard.core._model import LLMCall, LLMStep, Step, ToolCall, ToolResult, ToolStep, Trace
from pytest_loopguard.importers import import_traces
from pytest_loopguard.io import _faststep as faststep
from pytest_loopguard.io import _twins as twins
from pytest_loopguard.io._format import dumps, load_file, validate_paths

ROOT = Path(__file__).parents[2]
REAL = ROOT / ".." / "shared" / "corpus" / "real"


def step_lines(text: str) -> list[str]:
    return [line for line in text.split("\n")[1:] if line.strip()]


def test_every_step_of_the_corpus_reads_the_same() -> None:
    traces = [t for t in validate_paths([ROOT / "traces"])[0] if t.mode != "simulate"]
    lines = [line for t in traces for line in step_lines(dumps(t, "jsonl"))]
    assert len(lines) > 1000
    for i, line in enumerate(lines):
        assert same_as_full(line, i) == "step"


def test_every_step_of_the_real_agent_runs_reads_the_same() -> None:
    logs = sorted(p for p in REAL.rglob("*") if p.suffix in (".traj", ".json", ".jsonl"))
    traces = [t for log in logs for t in import_traces(log)]
    lines = [line for t in traces for line in step_lines(dumps(t, "jsonl"))]
    assert len(traces) >= 10 and len(lines) > 500
    fast = 0
    for i, line in enumerate(lines):
        assert same_as_full(line, i) == "step"
        fast += isinstance(faststep._fast(line, i), Step)
    assert fast > len(lines) // 2  # tool and llm steps take the direct construction


def test_ordinary_tool_and_llm_lines_take_the_fast_path() -> None:
    lines = step_lines(dumps(synthetic_trace("s", random.Random(3), steps=400), "jsonl"))
    kinds = {json.loads(line).keys().isdisjoint({"tool", "llm"}) for line in lines}
    assert kinds == {False, True}  # both tool/llm steps and other kinds are in the sample
    for i, line in enumerate(lines):
        raw = json.loads(line)
        got = faststep._fast(line, i)
        if "tool" in raw or "llm" in raw:
            assert isinstance(got, Step), line
        else:
            assert got == raw  # other shapes: values checked here, the step reader decides
        assert same_as_full(line, i) == "step"


BAD_OR_ODD = [
    f'{{"tool": "a", "args": {{"n": {(MAX_INT + 1)}}}}}',
    f'{{"tool": "a", "args": {{"n": {-(MAX_INT + 1)}}}}}',
    f'{{"tool": "a", "args": {{"n": {MAX_INT}}}}}',
    '{"tool": "a", "args": {"n": 1e400}}',
    '{"tool": "a", "args": {"n": [1, {"x": -1e400}]}}',
    '{"tool": "a", "args": {"n": NaN}}',
    '{"tool": "a", "args": {"n": Infinity}}',
    '{"tool": "a", "args": {"n": 1.5, "m": 2.0, "k": [1, 2.0, {"z": null}]}}',
    f'{{"tool": "a", "args": {("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))}}}',
    f'{{"tool": "a", "args": {{"d": {("[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2))}}}}}',
    f'{{"tool": "a", "args": {{"d": {("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))}}}}}',
    f'{{"tool": "a", "args": {{"d": {("[" * 5000 + "]" * 5000)}}}}}',
    f'{{"tool": "a", "args": {{"d": [[{(MAX_INT * 4)}]]}}}}',
    '{"tool": "a", "args": []}',
    '{"tool": "a", "args": null, "result": null, "t": null}',
    '{"tool": "", "args": {}}',
    '{"tool": 3}',
    '{"tool": "a\\u001fb"}',
    '{"tool": "a", "t": -1}',
    '{"tool": "a", "t": 5.0}',
    '{"tool": "a", "t": true}',
    f'{{"tool": "a", "t": {(MAX_INT + 1)}}}',
    '{"tool": "a", "extra": 1}',
    '{"tool": "a", "x-note": 1}',
    '{"tool": "a", "expect": "block"}',
    f'{{"tool": "a", "expect": {{"action": "warn", "data": {{"n": {(MAX_INT + 1)}}}}}}}',
    '{"tool": "a", "llm": {}}',
    '{"tool": "a", "result": {"ok": true, "error": "boom"}}',
    '{"tool": "a", "result": {"ok": null}}',
    '{"tool": "a", "result": {"ok": 1}}',
    '{"tool": "a", "result": {"error": 3}}',
    '{"tool": "a", "result": {"exit_code": 2}}',
    '{"tool": "a", "result": {"exit_code": 0, "text": "x"}}',
    '{"tool": "a", "result": {"exit_code": true}}',
    f'{{"tool": "a", "result": {{"exit_code": {(MAX_INT + 1)}}}}}',
    '{"tool": "a", "result": {"tokens": -1}}',
    f'{{"tool": "a", "result": {{"tokens": {(MAX_SETTING + 1)}}}}}',
    '{"tool": "a", "result": {"tokens": 4.0, "bytes": 2}}',
    '{"tool": "a", "result": {"changed": null}}',
    '{"tool": "a", "result": {"changed": true, "text": null}}',
    '{"tool": "a", "result": {"text": 5}}',
    '{"tool": "a", "result": {"x-raw": 5}}',
    '{"tool": "a", "result": {"status": 5}}',
    '{"tool": "a", "result": []}',
    '{"llm": null}',
    '{"llm": {}, "t": 4}',
    '{"llm": {"input_tokens": 3, "output_tokens": 4, "error": "rate limit", "text": "hi"}}',
    '{"llm": {"input_tokens": -3}}',
    '{"llm": {"input_tokens": 3.5}}',
    '{"llm": {"input_tokens": 3.0}}',
    '{"llm": {"error": 3}}',
    '{"llm": {"text": false}}',
    '{"llm": {"cost": 1}}',
    '{"llm": []}',
    '{"llm": {}, "t": "soon"}',
    '{"llm": {}, "phase": "act"}',
    '{"phase": "act"}',
    '{"phase": "nap"}',
    '{"message": {"role": "user", "text": "go"}}',
    '{"done": null}',
    '{"rejected": {"reason": "no tool call"}}',
    "[1, 2]",
    '"tool"',
    "{}",
    '{"tool": "a",}',
    '{"tool": "a"} trailing',
    ' {"tool": "a"} ',
    '{"tool": "a"}\r',
    '{"tool": "a"} \t\r ',
    '{"tool": "a"}\x0b',
    '{"tool": "a"}\u2028',
    '{"tool": "a"} {}',
    '',
    '\ufeff{"tool": "a"}',
    '{"tool": "a", "tool": 3}',
    f'{{"tool": "a", "args": {{"n": 1{("0" * 5000)}}}}}',
]


@pytest.mark.parametrize("line", BAD_OR_ODD)
def test_bad_and_unusual_lines_read_as_the_loader_reads_them(line: str) -> None:
    same_as_full(line)


def test_a_string_beyond_the_limit_is_refused_as_the_loader_refuses_it() -> None:
    line = json.dumps({"tool": "a", "result": {"text": "x" * (MAX_STRING + 1)}})
    assert "at most" in same_as_full(line)
    near = json.dumps({"tool": "a", "result": {"text": "\\" * (MAX_STRING // 2 + 1)}})  # escapes: long line
    assert same_as_full(near) == "step"


def test_the_hostile_repro_lines_read_as_the_loader_reads_them() -> None:
    for path in sorted((ROOT / ".." / "shared" / "fuzz-repros").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").split("\n")[1:]:
            if line.strip():
                same_as_full(line)


def test_jsonl_files_load_alike_through_the_fast_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_loopguard.io import _format as traceio

    traces = [t for t in validate_paths([ROOT / "traces"])[0] if t.mode != "simulate"]
    texts = [dumps(t, "jsonl") for t in traces]
    fast = [traceio.loads(text, fmt="jsonl", path="t.jsonl")[0] for text in texts]
    with monkeypatch.context() as m:
        m.setattr(traceio, "_plain_jsonl", lambda header, rows, path: None)
        full = [traceio.loads(text, fmt="jsonl", path="t.jsonl")[0] for text in texts]
    taken = sum(traceio._plain_jsonl(json.loads(text.split("\n")[0]), [
        (i, line) for i, line in enumerate(text.split("\n")[1:], 2) if line.strip()], "t.jsonl") is not None
        for text in texts)
    assert taken == len(texts)  # every corpus trace is plain enough for the fast reader
    for a, b in zip(fast, full, strict=True):
        assert dumps(a, "jsonl") == dumps(b, "jsonl")
        assert [s.call and s.call.fingerprint for s in a.steps] == [s.call and s.call.fingerprint for s in b.steps]
        assert (a.path, a.warnings, a.policy) == (b.path, b.warnings, b.policy)


def test_the_direct_builders_set_every_field_as_the_constructors_do() -> None:
    # the model's frozen classes are Python in both builds (the compiled build leaves core/_steps and
    # core/_payloads out), so both build twins; the constructors are what a compiled model would take
    builders = [(twins._built_tool_step, twins._built_llm_step, ToolResult, LLMCall)]
    assert twins._TWINS
    builders.append((twins._twin_tool_step, twins._twin_llm_step, twins._twin_result, twins._twin_llm))
    assert twins.new_tool_step is twins._twin_tool_step
    assert twins.new_llm_step is twins._twin_llm_step
    for new_tool_step, new_llm_step, new_result, new_llm in builders:
        call = ToolCall.of("run", {"cmd": "ls"})
        step = new_tool_step(4, call, new_result(False, "t", "e", 3, 9, True, 2), None, 7, {"x-a": 1}, "bot", None)
        assert step.result == ToolResult(False, "t", "e", 3, 9, True, 2)
        assert as_tuple(step) == as_tuple(ToolStep(4, call, step.result, t=7, extensions={"x-a": 1}, agent="bot"))
        llm_step = new_llm_step(5, new_llm(1, 2, "x", "y"), None, 9, {}, None, None)
        assert llm_step.llm == LLMCall(1, 2, "x", "y")
        assert as_tuple(llm_step) == as_tuple(LLMStep(5, llm_step.llm, t=9))
        for built in (step, llm_step, step.result, llm_step.llm):
            assert type(built) in (ToolStep, LLMStep, ToolResult, LLMCall)
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(built, dataclasses.fields(built)[0].name, None)  # type: ignore[arg-type]
        assert dataclasses.replace(step, t=8).t == 8 and step.t == 7
        assert (step.kind, step.llm, llm_step.kind, llm_step.call) == ("tool", None, "llm", None)


def test_a_model_field_the_builders_do_not_know_stops_the_import() -> None:
    with pytest.raises(RuntimeError, match="LLMCall"):
        twins._twinnable(LLMCall, ("input_tokens", "output_tokens", "error"))
    with pytest.raises(RuntimeError, match="ToolResult"):
        twins._twinnable(ToolResult, ("ok", "error", "text", "tokens", "bytes", "changed", "exit_code"))

    class Native:  # as a compiled class: the fields, no slots
        __dataclass_fields__ = LLMCall.__dataclass_fields__

    assert not twins._twinnable(Native, twins._LLM_FIELDS)


def test_json_whitespace_after_the_value_keeps_the_fast_path_and_other_text_leaves_it() -> None:
    # a JSONL file written with CRLF line ends is read as fast as one with LF
    assert isinstance(faststep._fast('{"tool": "a"}\r', 0), Step)
    assert isinstance(faststep._fast('{"llm": {}} \t ', 0), Step)
    for line in ('{"tool": "a"}\x0b', '{"tool": "a"} x', ' {"tool": "a"}'):
        assert faststep._fast(line, 0) is None  # the full checks read (and word) these


def test_steps_read_in_place_or_left_to_the_lines() -> None:
    tool = '{"tool": "read_file", "args": {"path": "a.py"}, "result": {"ok": true, "text": "x"}}'
    llm = '{"llm": {"output_tokens": 3}}'
    head = '{"loopguard": 1, "name": "t"}\n'
    start = len(head)
    for body in (f"{tool}\n{llm}\n", f"{tool}\n{llm}", f"{tool}\r\n{llm}\r\n", f"{tool} \t\n{llm}\n"):
        got = faststep.plain_steps(head + body, start, MAX_STEPS)
        assert got is not None and [s.kind for s in got] == ["tool", "llm"], repr(body)
        assert [s.index for s in got] == [0, 1]
    assert faststep.plain_steps(head, start, MAX_STEPS) == []
    # left to the line-by-line reader, which skips blank lines, reads a lone surrogate as U+FFFD and words errors
    for body in (f"{tool}\n\n{llm}\n", f"{tool}\n   \n", tool.replace(", ", ",\n", 1), f"{tool} {llm}\n",
                 f"{tool}\n" + '{"llm": {"text": "\\ud800"}}\n', f"{tool}\nnot json\n"):
        assert faststep.plain_steps(head + body, start, MAX_STEPS) is None, repr(body)
    assert faststep.plain_steps(head + f"{tool}\n{llm}\n", start, 1) is None  # more steps than the bound
    # a surrogate escape before `start` (the header's) is not the steps' business
    surrogate_head = '{"loopguard": 1, "name": "\\ud800"}\n'
    assert faststep.plain_steps(surrogate_head + tool, len(surrogate_head), MAX_STEPS) is not None


def test_a_file_read_in_place_loads_as_the_same_file_read_line_by_line(tmp_path: Path) -> None:
    # the blank line sends the second file the line-by-line way; both give the same trace
    text = dumps(Trace(name="t", steps=(Step(0, "tool", call=ToolCall.of("run", {"cmd": "ls"})),
                                        Step(1, "llm", llm=LLMCall(output_tokens=2)))), "jsonl")
    plain, spaced = tmp_path / "plain.jsonl", tmp_path / "spaced.jsonl"
    plain.write_text(text, encoding="utf-8")
    first, rest = text.split("\n", 1)
    spaced.write_text(f"{first}\n\n{rest}", encoding="utf-8")
    a, b = load_file(plain)[0], load_file(spaced)[0]
    assert [as_tuple(s) for s in a.steps] == [as_tuple(s) for s in b.steps] and len(a.steps) == 2
