"""`parse_json` parses first and checks only what looks wrong; it must refuse and accept exactly what the
ordered checks (nesting scan, parse, value bounds: `safeload._checked_json`) refuse and accept, with the
same error, on generated JSON texts near every bound."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from pytest_loopguard.core._limits import MAX_DEPTH, MAX_INT
from pytest_loopguard.core._safeload import _checked_json, parse_json
from pytest_loopguard.errors import TraceError

_LEAVES = st.one_of(
    st.sampled_from((MAX_INT, MAX_INT + 1, -MAX_INT - 1, 1e400, -1e400, 0.5, None, True, "s", "[{", "\\")),
    st.integers(), st.floats(allow_nan=False), st.text(max_size=3),
)
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=2), inner, max_size=3)), max_leaves=10)


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def _texts(draw: st.DrawFn) -> str:
    value = _nest(draw(_VALUES), draw(st.sampled_from((0, 1, MAX_DEPTH - 3, MAX_DEPTH - 1, MAX_DEPTH, 200))))
    text = json.dumps(value).replace("Infinity", "1e400")
    if draw(st.integers(0, 4)) == 0:  # a syntax error somewhere
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.sampled_from(("", ",", "}", "NaN", "]]"))) + text[cut:]
    return text


def _outcome(parse: Any, text: str) -> Any:
    try:
        return ("value", parse(text, "f.json", None))
    except TraceError as exc:
        return ("error", str(exc))


@given(_texts())
def test_parse_json_agrees_with_the_ordered_checks(text: str) -> None:
    note(text)
    got, want = _outcome(parse_json, text), _outcome(_checked_json, text)
    assert got[0] == want[0]
    if got[0] == "error":
        assert got == want
    else:  # 1e400 parses to inf, which is not equal to itself only as NaN would be: compare the text form
        assert json.dumps(got[1]) == json.dumps(want[1])
