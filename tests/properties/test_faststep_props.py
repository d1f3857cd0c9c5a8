"""The fast JSONL step reader agrees with the loader's full checks on generated lines: well-formed steps of
every kind, and tool and llm steps whose fields (or the keys inside their arguments, result or usage) hold
values at and beyond every bound the loader checks, or any other JSON value."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st
from steplines import as_tuple, same_as_full

from pytest_loopguard import Trace
from pytest_loopguard.core._limits import MAX_DEPTH, MAX_INT, MAX_SETTING, MAX_STEPS
from pytest_loopguard.io._faststep import plain_step, plain_steps
from pytest_loopguard.io._format import dumps
from pytest_loopguard.pytest import _strategies as lgst

_INF = 1e400  # written as the number 1e400 (json.dumps would write the literal Infinity, refused earlier)
_BOUNDS = st.sampled_from((
    0, -1, 3, 2.0, 0.5, _INF, -_INF, MAX_INT, MAX_INT + 1, -MAX_INT, -MAX_INT - 1, MAX_SETTING, MAX_SETTING + 1,
    None, True, False, "", "x", "a\x1fb", [MAX_INT + 1], {"k": _INF}, {"k": [1, [2.5]]},
    json.loads("[" * (MAX_DEPTH - 3) + "]" * (MAX_DEPTH - 3)), json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH),
))
_ANY = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=8)
_VALUES = st.one_of(_BOUNDS, _BOUNDS, _ANY)
_TOOL = {"tool": "read_file", "args": {"path": "a.py"}, "result": {"ok": True, "text": "x"}, "t": 10}
_LLM = {"llm": {"input_tokens": 5}, "t": 11}


def _line(raw: dict[str, Any]) -> str:
    line = json.dumps(raw).replace("Infinity", "1e400")
    note(line)
    return line


def _inside(key: str, keys: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), _VALUES, min_size=1, max_size=3)


@given(_inside("args", ("path", "n", "q")))
def test_tool_arguments_read_as_the_loader_reads_them(args: dict[str, Any]) -> None:
    same_as_full(_line({**_TOOL, "args": args}))


@given(_inside("result", ("ok", "text", "error", "tokens", "bytes", "changed", "exit_code", "x-raw", "status")))
def test_tool_results_read_as_the_loader_reads_them(result: dict[str, Any]) -> None:
    same_as_full(_line({**_TOOL, "result": result}))


@given(_inside("llm", ("input_tokens", "output_tokens", "error", "text", "cost")))
def test_model_usage_reads_as_the_loader_reads_it(llm: dict[str, Any]) -> None:
    same_as_full(_line({**_LLM, "llm": llm}))


_STEP_KEYS = ("tool", "args", "result", "llm", "t", "expect", "agent", "source", "x-id", "phase", "extra")


@given(st.sampled_from((_TOOL, _LLM)), st.dictionaries(st.sampled_from(_STEP_KEYS), _VALUES, min_size=1, max_size=3),
       st.lists(st.sampled_from(_STEP_KEYS), max_size=2))
def test_step_fields_read_as_the_loader_reads_them(base: dict[str, Any], changed: dict[str, Any],
                                                   dropped: list[str]) -> None:
    raw = {k: v for k, v in {**base, **changed}.items() if k not in dropped}
    same_as_full(_line(raw))


@given(lgst.traces(kinds=("tool", "llm", "phase", "message", "done", "rejected"), additions=True))
def test_every_generated_step_line_reads_as_the_loader_reads_it(trace: Trace) -> None:
    for index, line in enumerate(dumps(trace, "jsonl").rstrip("\n").split("\n")[1:]):
        assert same_as_full(line, index) == "step"


def _per_line(text: str, start: int) -> list[Any]:
    return [plain_step(line, i) for i, line in enumerate(text[start:].removesuffix("\n").split("\n"))]


@given(lgst.traces(kinds=("tool", "llm", "phase", "message", "done", "rejected"), additions=True),
       st.sampled_from(("as written", "crlf", "blank line", "split value", "no final newline")))
def test_steps_read_in_place_are_the_lines_steps_or_none(trace: Trace, how: str) -> None:
    # `plain_steps` reads a file's step lines without cutting them out: it gives exactly the steps the lines give
    # one by one, or None where the file is not plain (a blank line, a value over two lines), never other steps
    text = dumps(trace, "jsonl")
    start = text.index("\n") + 1
    body = text[start:]
    if how == "crlf":
        body = body.replace("\n", "\r\n")
    elif how == "blank line" and body:
        body = "\n" + body
    elif how == "split value" and body:
        body = body.replace(", ", ",\n", 1)
    elif how == "no final newline":
        body = body.removesuffix("\n")
    text = text[:start] + body
    note(repr(text[start:][:300]))
    got = plain_steps(text, start, MAX_STEPS)
    lines = _per_line(text, start) if body.strip() else []
    if how in ("as written", "crlf", "no final newline"):
        assert got is not None and all(step is not None for step in lines)
    if got is not None:
        assert [as_tuple(s) for s in got] == [as_tuple(s) for s in lines]
    elif how == "split value" and "," + "\n" in body:
        assert any(step is None for step in lines)  # the line cut in two is no step on its own either
