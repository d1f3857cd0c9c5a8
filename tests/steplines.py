"""Reading one JSONL step line both ways, the fast reader (`faststep.step_from_line`) and the loader's full
checks (`safeload.parse_json` then `_read.read_step`, as `load_file` reads a line), and comparing the two."""

from __future__ import annotations

import dataclasses
from typing import Any

from pytest_loopguard.core._model import Step
from pytest_loopguard.core._safeload import parse_json
from pytest_loopguard.errors import TraceError
from pytest_loopguard.io._faststep import step_from_line
from pytest_loopguard.io._read import read_step


def full_path(text: str, index: int, path: str = "t.jsonl", line: int = 7) -> Step:
    """The loader's own reading of one step line."""
    raw = parse_json(text, path, line)
    try:
        return read_step(raw, index)
    except TraceError as exc:
        raise exc.located(file=path, line=line) from None


def as_tuple(step: Step) -> tuple[Any, ...]:
    """Every field of a step, the call by its identities (ToolCall compares only the as-written one)."""
    out: list[tuple[str, Any]] = [("kind", step.kind)]
    for f in dataclasses.fields(step):
        value = getattr(step, f.name)
        if f.name == "call" and value is not None:
            value = (value.tool, value.args, value.canonical, value.fingerprint, value.ordered)
        out.append((f.name, value))
    return tuple(out)


def same_as_full(text: str, index: int = 3) -> str:
    """Both readings of `text` must give equal steps or equal errors; returns "step" or the error."""
    try:
        expected: Step | str = full_path(text, index)
    except TraceError as exc:
        expected = str(exc)
    try:
        got: Step | str = step_from_line(text, index, "t.jsonl", 7)
    except TraceError as exc:
        got = str(exc)
    if isinstance(expected, str):
        assert got == expected
        return expected
    assert isinstance(got, Step) and as_tuple(got) == as_tuple(expected)
    return "step"
