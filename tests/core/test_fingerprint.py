"""Identity of a call (DESIGN.md §5): canonical vs as-written arguments, numbers, dates, NaN, unicode."""

from __future__ import annotations

import datetime as dt
import math
from typing import get_args

import pytest

from pytest_loopguard.core import _identity as fingerprint_module
from pytest_loopguard.core._identity import (
    IDENTITIES,
    IDENTITY_MODES,
    IdentityMode,
    canonical_args,
    canonical_json,
    fingerprint,
    flat_canonical_json,
    ordered_args_json,
    ordered_fingerprint,
    ordered_js_json,
    sorted_typed_json,
    top_sorted_js_json,
)
from pytest_loopguard.core._model import ToolCall
from pytest_loopguard.runtime._policy import resolve_policy


def test_canonical_sorts_keys_and_drops_whitespace() -> None:
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'
    assert canonical_json({"a": [1, 2], "b": 1}) == canonical_json({"b": 1, "a": [1, 2]})


def test_ordered_keeps_the_order_as_written() -> None:
    assert ordered_args_json({"b": 1, "a": 2}) == '{"b":1,"a":2}'
    assert ordered_args_json({"b": 1, "a": 2}) != ordered_args_json({"a": 2, "b": 1})


def test_key_order_is_the_same_call_canonically_but_not_as_written() -> None:
    x, y = ToolCall.of("click", {"x": 1, "y": 2}), ToolCall.of("click", {"y": 2, "x": 1})
    assert x.fingerprint == y.fingerprint
    assert x.ordered_fingerprint != y.ordered_fingerprint


def test_integral_float_equals_int_canonically_but_not_as_written() -> None:
    assert canonical_json({"index": 1.0}) == canonical_json({"index": 1}) == '{"index":1}'
    assert fingerprint("click", {"index": 1.0}) == fingerprint("click", {"index": 1})
    assert ordered_fingerprint("click", {"index": 1.0}) != ordered_fingerprint("click", {"index": 1})
    # a non-integral float stays a float, and nested integral floats are normalised too
    assert canonical_json({"ratio": 0.5, "xs": [2.0, {"k": 3.0}]}) == '{"ratio":0.5,"xs":[2,{"k":3}]}'


def test_booleans_are_not_numbers() -> None:
    assert canonical_json({"a": True}) != canonical_json({"a": 1})


def test_dates_are_iso_strings() -> None:
    when = dt.date(2026, 3, 18)
    assert canonical_json({"since": when}) == '{"since":"2026-03-18"}'
    assert fingerprint("log", {"since": when}) == fingerprint("log", {"since": "2026-03-18"})
    stamp = dt.datetime(2026, 3, 18, 12, 30, tzinfo=dt.UTC)
    assert canonical_args({"at": stamp}) == {"at": "2026-03-18T12:30:00+00:00"}
    assert ordered_args_json({"at": stamp}) == '{"at":"2026-03-18T12:30:00+00:00"}'


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="NaN and Infinity"):
        canonical_json({"x": [1, {"y": bad}]})
    with pytest.raises(ValueError):
        ToolCall.of("t", {"x": bad})


def test_unsupported_values_are_rejected() -> None:
    with pytest.raises(ValueError, match="unsupported argument value"):
        canonical_json({"x": object()})


def test_unicode_is_kept_as_written() -> None:
    args = {"query": "café ☕ 東京"}
    assert canonical_json(args) == '{"query":"café ☕ 東京"}'
    assert ordered_args_json(args) == '{"query":"café ☕ 東京"}'
    # composed and decomposed forms are different text: strings are compared unchanged
    assert fingerprint("search", {"q": "\u00e9"}) != fingerprint("search", {"q": "e\u0301"})


def test_tool_name_is_part_of_the_identity_and_cannot_run_into_the_arguments() -> None:
    assert fingerprint("a", {}) != fingerprint("b", {})
    assert ToolCall.of("ab", {}).fingerprint.split("\x1f") == ["ab", "{}"]


def test_tool_call_computes_both_identities_once() -> None:
    call = ToolCall.of("browser_click", {"index": 3.0, "button": "left"})
    assert call.canonical == '{"button":"left","index":3}'
    assert call.ordered == '{"index":3.0,"button":"left"}'
    assert call.fingerprint == "browser_click\x1f" + call.canonical
    assert call.ordered_fingerprint == "browser_click\x1f" + call.ordered
    assert ToolCall.of("done").args == {} and ToolCall.of("done").canonical == "{}"


def test_key_part_keeps_scalars_and_keys_containers_by_canonical_json() -> None:
    from pytest_loopguard.core._identity import key_part

    assert key_part("src/a.py") == "src/a.py" and key_part(3) == 3 and key_part(None) is None
    assert key_part({"b": 1, "a": [1.0]}) == key_part({"a": [1], "b": 1})
    assert key_part(["a", "b"]) != key_part(["b", "a"])
    assert hash(key_part({"a": [1]})) == hash(key_part({"a": [1.0]}))


@pytest.mark.parametrize(
    ("args", "canonical", "ordered"),
    [
        # flat and already sorted: one serialisation serves both
        ({"a": 1, "b": "x", "c": None, "d": True}, '{"a":1,"b":"x","c":null,"d":true}',
         '{"a":1,"b":"x","c":null,"d":true}'),
        # flat, keys out of order: the as-written form keeps the order
        ({"path": "a.py", "offset": 1, "limit": 5}, '{"limit":5,"offset":1,"path":"a.py"}',
         '{"path":"a.py","offset":1,"limit":5}'),
        # a float, a nested value, a date: the general path
        ({"a": 2.0, "b": 1}, '{"a":2,"b":1}', '{"a":2.0,"b":1}'),
        ({"b": [1.0, {"z": 1, "y": 2}], "a": "é"}, '{"a":"é","b":[1,{"y":2,"z":1}]}',
         '{"b":[1.0,{"z":1,"y":2}],"a":"é"}'),
        ({"when": dt.date(2026, 1, 2)}, '{"when":"2026-01-02"}', '{"when":"2026-01-02"}'),
    ],
)
def test_fast_and_general_paths_give_the_documented_forms(args: dict[str, object], canonical: str,
                                                           ordered: str) -> None:
    call = ToolCall.of("t", args)
    assert (call.canonical, call.ordered) == (canonical, ordered)
    assert (canonical_json(args), ordered_args_json(args)) == (canonical, ordered)
    assert call == ToolCall.of("t", dict(args)) and hash(call) == hash(ToolCall.of("t", dict(args)))



@pytest.mark.parametrize("accelerated", [True, False])
def test_canonical_text_is_the_same_with_or_without_the_c_encoder(monkeypatch: pytest.MonkeyPatch,
                                                                   accelerated: bool) -> None:
    # without json's C accelerator (another interpreter) the encoder built per call is used instead
    if not accelerated:
        monkeypatch.setattr(fingerprint_module, "_C_CANONICAL", None)
    flat = {"path": "é.py", "n": -3, "ok": False, "none": None, "q": 'a"\\b\n'}
    expected = '{"n":-3,"none":null,"ok":false,"path":"é.py","q":"a\\"\\\\b\\n"}'
    assert canonical_json(flat) == flat_canonical_json(flat) == expected
    assert canonical_json({"b": [1.0, {"z": 1, "y": 2}], "a": 1.5}) == '{"a":1.5,"b":[1,{"y":2,"z":1}]}'
    assert flat_canonical_json({}) == canonical_json({}) == "{}"


# ---- the three identity modes one system each uses (PRESETS.md, common rules) ----------------------------

NESTED_A = {"q": "x", "filter": {"lang": "py", "stars": 10}}
NESTED_B = {"filter": {"stars": 10, "lang": "py"}, "q": "x"}  # the same data, every mapping reordered
TOP_ONLY = {"filter": {"lang": "py", "stars": 10}, "q": "x"}  # top level reordered, nested as in A


def same(mode: str, a: dict[str, object], b: dict[str, object]) -> bool:
    return IDENTITIES[mode](a) == IDENTITIES[mode](b)


def test_every_mode_has_a_function_and_the_loop_guard_accepts_it() -> None:
    assert set(IDENTITIES) == set(IDENTITY_MODES) == set(get_args(IdentityMode))
    for mode in IDENTITY_MODES:  # each is a valid loop_guard setting
        policy = resolve_policy({"preset": "roo", "loop_guard": {"identity": mode}})
        assert policy.settings("loop_guard").identity == mode


@pytest.mark.parametrize(
    ("mode", "top_order", "nested_order", "one_point_zero"),
    [
        # key order matters at every level; 1.0 is written 1 (JSON.stringify of parsed JSON)
        ("ordered_js", True, True, False),
        # only the top level is sorted; 1.0 is written 1 (Roo)
        ("top_sorted_js", False, True, False),
        # sorted at every level; 1.0 and 1 are different values (serde_json)
        ("sorted_typed", False, False, True),
        # for comparison: the two older modes
        ("canonical", False, False, False),
        ("ordered", True, True, True),
    ],
)
def test_what_distinguishes_each_mode(mode: str, top_order: bool, nested_order: bool, one_point_zero: bool) -> None:
    assert (not same(mode, NESTED_A, TOP_ONLY)) == top_order
    assert (not same(mode, TOP_ONLY, NESTED_B)) == nested_order
    assert (not same(mode, {"page": 1}, {"page": 1.0})) == one_point_zero
    # in every mode lists keep their order, strings compare as written, and bools are not numbers
    assert not same(mode, {"a": [1, 2]}, {"a": [2, 1]})
    assert not same(mode, {"s": "caf\u00e9"}, {"s": "cafe\u0301"})
    assert not same(mode, {"v": True}, {"v": 1})


def test_the_texts_themselves() -> None:
    assert ordered_js_json({"b": 1.0, "a": {"y": 2.5, "x": 1}}) == '{"b":1,"a":{"y":2.5,"x":1}}'
    assert top_sorted_js_json({"b": 1.0, "a": {"y": 2.5, "x": 1}}) == '{"a":{"y":2.5,"x":1},"b":1}'
    assert sorted_typed_json({"b": 1.0, "a": {"y": 2.5, "x": 1}}) == '{"a":{"x":1,"y":2.5},"b":1.0}'
    assert sorted_typed_json({"d": dt.date(2026, 1, 2)}) == '{"d":"2026-01-02"}'


def test_tool_calls_do_not_carry_the_extra_modes() -> None:
    # per-event cost: a ToolCall computes canonical and ordered only; the other modes are the engines' job
    call = ToolCall.of("t", {"a": 1})
    # (the as-written form is computed on first use and kept in `_ordered`)
    # (a mypyc-compiled ToolCall has no __slots__: it lists its fields in __mypyc_attrs__)
    fields = getattr(ToolCall, "__mypyc_attrs__", None) or ToolCall.__slots__
    assert set(fields) == {"tool", "args", "canonical", "fingerprint", "_ordered"}
    assert call.canonical == '{"a":1}'


def test_the_as_written_form_is_computed_on_first_use() -> None:
    call = ToolCall.of("t", {"b": 1.0, "a": 2})
    assert call._ordered is None  # building a call writes only its canonical identity
    assert call.ordered == '{"b":1.0,"a":2}' and call._ordered is call.ordered  # then kept
