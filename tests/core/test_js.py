"""The presets that copy a JavaScript system follow JavaScript where it differs from Python (issue 24, item 6):
regular-expression classes, lengths in UTF-16 code units, `JSON.stringify`'s key order, numbers and escapes.

Every expected value here is JavaScript's answer, captured from Node v20.20.2 (`node -e ...` over the same
input; the content-check runs through the Node reference in tests/core/test_js_node.py, which re-checks these
kinds of input against a live `node` under `-m slow`). Where Python's own semantics answer otherwise, the
comment says what the port gave before.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_loopguard import Guard, replay, resolve_policy
from pytest_loopguard.core._identity import is_flat, ordered_js_json, top_sorted_js_json
from pytest_loopguard.core._js import (
    ANY,
    DIGIT,
    SPACE,
    is_array_index,
    js_number,
    js_sorted,
    stringify,
    stringify_sorted,
    utf8_form,
    utf8_slices,
    utf16,
)
from pytest_loopguard.core._model import Message, ToolCall
from pytest_loopguard.engines._repeated_text import DIVIDER, STRUCTURE, ChunkIndex
from pytest_loopguard.io._format import trace_from_mapping

# ---- regular expressions ------------------------------------------------------------------------------------
# /\s/, /\d/ and /./ over every code unit 0..0xFFFF in Node
JS_SPACE = [0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F,
            0x3000, 0xFEFF]
JS_DIGIT = list(range(0x30, 0x3A))
JS_NOT_ANY = [0xA, 0xD, 0x2028, 0x2029]


def members(pattern: str) -> list[int]:
    compiled = re.compile(pattern)
    return [c for c in range(0x10000) if compiled.match(chr(c))]


def test_the_classes_are_javascripts() -> None:
    assert members(SPACE) == JS_SPACE
    assert members(DIGIT) == JS_DIGIT
    matched = set(members(ANY))
    assert [c for c in range(0x10000) if c not in matched] == JS_NOT_ANY
    # what Python's own classes say otherwise: a BOM is no space, U+001C..U+001F and U+0085 are, any digit is \d
    assert not re.match(r"\s", "\ufeff") and re.match(r"\s", "\x1c") and re.match(r"\d", "\u0663")
    assert re.match(".", "\r") and re.match(".", "\u2028")


# Gemini's patterns (table, list, numbered, heading, blockquote, divider) on text where the classes differ:
# JavaScript's answers; Python's `re` gave the opposite in each row
@pytest.mark.parametrize(("text", "js"), [
    ("\ufeff| a | b |", [True, False, False, False, False, False]),  # a BOM is \s: a table
    ("\x1c* item", [False] * 6),  # U+001C is no \s: no list item
    ("\x85- --", [False] * 6),  # nor U+0085: no table rule
    ("\u0663. item", [False] * 6),  # an Arabic-Indic three is no \d
    ("x\n\uff13. item", [False] * 6),  # nor a fullwidth three
    ("| a \r b |", [False] * 6),  # `.` stops at \r ...
    ("| a \u2028 b |", [False] * 6),  # ... and at U+2028
    ("#\x85title", [False] * 6),
    ("#\ufefftitle", [False, False, False, True, False, False]),
    (">\ufeffquote", [False, False, False, False, True, False]),
    ("1.\ufeffitem", [False, False, True, False, False, False]),
])
def test_geminis_markdown_patterns_answer_as_javascript(text: str, js: list[bool]) -> None:
    assert [p.search(text) is not None for p in STRUCTURE] + [DIVIDER.fullmatch(text) is not None] == js


# ---- UTF-16 -------------------------------------------------------------------------------------------------
def test_strings_are_utf16_code_units() -> None:
    assert len(utf16("a\U0001f600b")) == 3 + 1  # "a😀b".length is 4 in JavaScript
    assert utf16("a\U0001f600b")[1:2] == "\ud83d"  # and "a😀b".substring(1, 2) is a lone high surrogate
    text = "plain ascii"
    assert utf16(text) is text and utf16("é") == "é"
    # Node's UTF-8 (what it hashes): lone surrogates are U+FFFD, so these three hash alike, a pair does not
    assert utf8_form("a\ud83d") == utf8_form("a\ud83e") == utf8_form("a\ufffd") == "a\ufffd"
    assert utf8_form("\ud83d\ude00") == "\U0001f600" and utf8_form("\ude00\ud83d") == "\ufffd\ufffd"
    units = utf16("\U0001f600x\U0001f601x")
    # slices 1 ("\ude00x") and 4 ("\ude01x") are other text but hash alike; a pair stays two surrogates here
    assert utf8_slices(units, 2) == ["\ud83d\ude00", "\ufffdx", "x\ufffd", "\ud83d\ude01", "\ufffdx"]
    assert utf8_form(units[1:3]) == utf8_form(units[4:6]) and units[1:3] != units[4:6]


def test_slices_compare_equal_exactly_when_nodes_utf8_of_them_does() -> None:
    rng = random.Random(24)
    alphabet = ["a", "\U0001f600", "\U0001f601", "\U0001f300", "\ufffd", "\ud800", "\udc00"]
    for _ in range(400):
        units = utf16("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20))))
        size = rng.randint(1, 6)
        slices = utf8_slices(units, size)
        assert len(slices) == max(0, len(units) - size + 1)
        forms = [utf8_form(units[j:j + size]) for j in range(len(slices))]
        assert [a == b for a in slices for b in slices] == [a == b for a in forms for b in forms], units


def test_chunks_sharing_a_hash_count_as_gemini_counts_them() -> None:
    # chunks of 2 units; "\ude00x" and "\ude01x" hash alike (U+FFFD x): the second is other text under the
    # first's hash, so Node records nothing for it and it never reaches 2 positions
    index = ChunkIndex(size=2, limit=100)
    offered: list[list[int]] = []
    assert index.add(utf16("\U0001f600x\U0001f601x\U0001f601x"), 2,
                     lambda positions, buffer, base: offered.append(list(positions)) or False) is None
    # "x\ud83d" at 2 and 5, the pair "\ud83d\ude01" at 3 and 6; "\ude01x" at 4 and 7 is never counted (it would
    # be offered as [4, 7] if chunks were told apart by their text)
    assert offered == [[2, 5], [3, 6]]


# ---- JSON.stringify -----------------------------------------------------------------------------------------
def test_stringify_orders_array_index_keys_first() -> None:
    parsed = json.loads('{"b":1,"a":2,"10":3,"9":4,"01":5,"-1":6,"1.5":7,"4294967294":8,"4294967295":9,'
                        '"1e3":10," 1":11,"":12,"0":13}')
    # JSON.stringify(JSON.parse(...)) in Node; Python's json kept the written order
    assert stringify(parsed) == ('{"0":13,"9":4,"10":3,"4294967294":8,"b":1,"a":2,"01":5,"-1":6,"1.5":7,'
                                 '"4294967295":9,"1e3":10," 1":11,"":12}')
    assert ordered_js_json({"z": {"2": "two", "y": 1}, "1": None}) == '{"1":null,"z":{"2":"two","y":1}}'
    assert [k for k in ("0", "7", "10", "4294967294") if is_array_index(k)] == ["0", "7", "10", "4294967294"]
    assert not any(is_array_index(k) for k in ("01", "-1", "1.5", "4294967295", "", " 1", "\u0661", "+1", "1e3"))


def test_stringify_writes_numbers_as_javascript() -> None:
    numbers = json.loads("[1.0, -0, -0.0, 1e21, 1e20, 123456789012345678901, 1e-7, 1e-6, 0.000001, 1.5e-5, "
                         "12345678901234567890, 9007199254740993, 1e400, 5e-324, 1.7976931348623157e308, 100, "
                         "1.25e+20, 2.5]")
    assert stringify(numbers) == ("[1,0,0,1e+21,100000000000000000000,123456789012345680000,1e-7,0.000001,0.000001,"
                                  "0.000015,12345678901234567000,9007199254740992,null,5e-324,"
                                  "1.7976931348623157e+308,100,125000000000000000000,2.5]")
    assert js_number(float("nan")) == "null" and js_number(-1e-7) == "-1e-7" and js_number(0.1) == "0.1"


def test_stringify_escapes_lone_surrogates_and_nothing_else_new() -> None:
    text = json.loads('"\\ud800x\\udc00\\ud83d\\ude00\\u2028\\u007f\\u001f\\b\\f\\u0000\\u00e9"')
    assert stringify(text) == '"\\ud800x\\udc00\U0001f600\u2028\x7f\\u001f\\b\\f\\u0000é"'
    assert stringify("\ud83d\ude00") == '"\U0001f600"'  # a pair written as two characters is one character


def test_top_sorted_js_is_clines_replacer_list() -> None:
    # JSON.stringify({b: 1, "10": 2, "9": 3}, ["10", "9", "b"]): the list's order, no array index first
    assert stringify_sorted({"b": 1, "10": 2, "9": 3}) == '{"10":2,"9":3,"b":1}'
    # Array.prototype.sort compares UTF-16 code units: an emoji (a surrogate pair) sorts before U+FF01
    assert js_sorted(["\uff01", "\U0001f600", "a", "B", "é"]) == ["B", "a", "é", "\U0001f600", "\uff01"]
    assert top_sorted_js_json({"\uff01": 1, "\U0001f600": 2, "n": {"2": 0, "1": 0}}) == (
        '{"n":{"1":0,"2":0},"\U0001f600":2,"\uff01":1}')


def test_flat_arguments_take_the_shortcut_only_where_javascript_writes_them_as_python() -> None:
    # loop_guard and stuck_detector read a call's precomputed identity where `is_flat` holds (FLAT_SAME_AS)
    assert is_flat({"path": "a.py", "line": 3, "all": True, "x": None, "é": "ü"})
    for args in ({"1": "a"}, {"n": 2**53 + 1}, {"s": "\ud800"}, {"\U0001f600": 1}, {"\uff01": 1}):
        assert not is_flat(args), args
    call = ToolCall.of("t", {"b": 1, "1": 2})
    assert (call.ordered, ordered_js_json(call.args)) == ('{"b":1,"1":2}', '{"1":2,"b":1}')
    call = ToolCall.of("t", {"n": 2**53 + 1, "\U0001f600": 1, "\uff01": 1})
    assert call.canonical == '{"n":9007199254740993,"\uff01":1,"\U0001f600":1}'
    assert top_sorted_js_json(call.args) == '{"n":9007199254740992,"\U0001f600":1,"\uff01":1}'


# ---- the gemini-cli preset on such input --------------------------------------------------------------------
def timeline(policy: str, steps: Sequence[Mapping[str, Any]]) -> list[str]:
    result = replay(trace_from_mapping({"loopguard": 1, "name": "t", "steps": list(steps)}), policy)
    return [s.action if not s.verdicts else f"{s.action} {s.verdicts[0].reason.split('.', 1)[1]}"
            for s in result.steps]


@pytest.mark.parametrize("preset", ["gemini-cli", "gemini-cli-2026-06"])
def test_geminis_tool_key_is_json_stringify(preset: str) -> None:
    # {"b":1,"1":2} and {"1":2,"b":1} are one key to Gemini (both stringify as {"1":2,"b":1}); so are two
    # integers that JSON.parse reads as the same double. The port saw different calls in both (allow x6).
    for first, second in (({"b": 1, "1": 2}, {"1": 2, "b": 1}), ({"n": 2**53}, {"n": 2**53 + 1})):
        steps = [{"tool": "t", "args": first if i % 2 else second} for i in range(6)]
        assert timeline(preset, steps) == ["allow"] * 4 + ["block tool_loop", "stop tool_loop"]


CHANT = "The build failed again, so I will retry the build now. "  # 55 characters


def first_content_loop(texts: Sequence[str]) -> tuple[int, int, str] | None:
    """gemini-cli over the texts as assistant messages: (text, count, chunk) of its first content detection."""
    guard = Guard(resolve_policy("gemini-cli"))
    for i, text in enumerate(texts):
        for v in guard.message(Message("assistant", text)).verdicts:
            if v.reason == "stuck_detector.content_loop":
                return i, v.data["count"], v.data["chunk"]
    return None


@pytest.mark.parametrize(("between", "js"), [
    ("\ufeff| a | b |", None),  # a table to JavaScript: tracking starts again (the port: detected, text 10)
    ("\x1c* item", 10),  # no list item to JavaScript: nothing resets (the port: reset, never detected)
    ("\u0663. item", 10),  # no numbered item
    ("| a \r b |", 10),  # no table
    ("| a \u2028 b |", 10),
    ("#\x85title", 10),  # no heading
])
def test_a_marker_resets_the_content_check_only_as_javascript_reads_it(between: str, js: int | None) -> None:
    found = first_content_loop([CHANT] * 9 + [between] + [CHANT] * 2)
    assert (found[0] if found else None) == js


ANIMALS = "".join(chr(0x1F400 + i) for i in range(130))  # 130 characters, 260 UTF-16 code units
FACES = "".join(chr(0x1F601 + i) for i in range(30))  # 30 characters, 60 code units


def test_the_content_check_counts_utf16_code_units() -> None:
    # a period of 260 code units is more than 250 apart: never a loop (the port counted 130: detected on text 9)
    assert first_content_loop([ANIMALS] * 12) is None
    # 50 code units are 25 emoji: detected a text earlier than by 50 characters (the port: text 10)
    assert first_content_loop([FACES] * 12) == (9, 10, FACES[:25])


def test_a_chunk_sharing_a_hash_with_other_text_is_never_counted() -> None:
    # the loop's first chunk ("a" + 24 faces + half of the 25th) hashes as the preamble's ("a" + 24 faces + half
    # of U+1F300): Node keeps the preamble's text under that hash, so the loop is found one chunk later
    loop = "a" + FACES
    assert first_content_loop(["a" + FACES[:24] + "\U0001f300", *([loop] * 10)]) == (10, 10, FACES[:25])
    assert first_content_loop([loop] * 10) == (9, 10, loop[:25] + "\ufffd")  # without it: the first chunk
