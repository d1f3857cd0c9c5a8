"""core/_js.py and the Gemini CLI port against real JavaScript: one `node` process judges a batch of awkward
inputs (JSON.stringify, the regular-expression classes, Gemini's markdown patterns, the content check's UTF-16
chunks and hashes) and each answer must be our Python port's.

The Node side is a reference written here from the facts in PRESETS.md's gemini-cli section and the upstream
`loopDetectionService.ts` (its regular-expression literals are the upstream ones; the rest is our own code):
what it shows is how JavaScript strings, regular expressions and `JSON.stringify` behave on these inputs.
tests/core/test_js.py holds the same kinds of answers as literals and runs without Node.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import struct
import subprocess
from typing import Any

import pytest

from pytest_loopguard import Guard, resolve_policy
from pytest_loopguard.core._js import ANY, DIGIT, SPACE, js_number, stringify, stringify_sorted, utf8_form
from pytest_loopguard.core._model import Message
from pytest_loopguard.engines._repeated_text import DIVIDER, STRUCTURE
from pytest_loopguard.engines.stuck_detector import StuckDetector

NODE = shutil.which("node") or "node"  # .ci/run installs Node where it is missing: without it this fails, loudly
# a few seconds of Node and of our engine over 150 runs of text: `python -m pytest -m slow tests/core/test_js_node.py`
pytestmark = pytest.mark.slow

REFERENCE = r"""
const { createHash } = require("node:crypto");
const input = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const sha = (s) => createHash("sha256").update(s).digest("hex");

// Gemini CLI's markdown patterns, as upstream writes them (no flags)
const PATTERNS = [
  /(^|\n)\s*(\|.*\||[|+-]{3,})/, /(^|\n)\s*[*-+]\s/, /(^|\n)\s*\d+\.\s/, /(^|\n)#+\s/, /(^|\n)>\s/,
];
const DIVIDER = /^[+-_=*\u2500-\u257F]+$/;

// the content check as PRESETS.md describes it, on JavaScript strings; the first detection ends the run
function content(texts) {
  let buffer = "", stats = new Map(), scan = 0, inCode = false;
  for (let t = 0; t < texts.length; t++) {
    const text = texts[t];
    const fences = (text.match(/```/g) || []).length;
    const divider = DIVIDER.test(text);
    if (fences || divider || PATTERNS.some((p) => p.test(text))) { buffer = ""; stats = new Map(); scan = 0; }
    const was = inCode;
    if (fences % 2) inCode = !inCode;
    if (was || inCode || divider) continue;
    buffer += text;
    if (buffer.length > 5000) {
      const cut = buffer.length - 5000;
      buffer = buffer.slice(cut);
      scan = Math.max(0, scan - cut);
      for (const [hash, at] of stats) {
        const kept = at.map((i) => i - cut).filter((i) => i >= 0);
        if (kept.length) stats.set(hash, kept); else stats.delete(hash);
      }
    }
    for (; scan + 50 <= buffer.length; scan++) {
      const chunk = buffer.substring(scan, scan + 50);
      const hash = sha(chunk);
      const at = stats.get(hash);
      if (!at) { stats.set(hash, [scan]); continue; }
      if (buffer.substring(at[0], at[0] + 50) !== chunk) continue;  // same hash, other text
      at.push(scan);
      if (at.length < 10) continue;
      const last = at.slice(-10);
      if ((last[9] - last[0]) / 9 > 250) continue;
      const periods = new Set();
      for (let i = 0; i < 9; i++) periods.add(buffer.substring(last[i], last[i + 1]));
      if (periods.size <= 5) return { text: t, chunk, count: at.length };
    }
  }
  return null;
}

const classes = { space: [], digit: [], notAny: [] };
for (let c = 0; c <= 0xffff; c++) {
  const ch = String.fromCharCode(c);
  if (/\s/.test(ch)) classes.space.push(c);
  if (/\d/.test(ch)) classes.digit.push(c);
  if (!/./.test(ch)) classes.notAny.push(c);
}
const sortedText = (p) =>
  "{" + Object.keys(p).sort().map((k) => JSON.stringify(k) + ":" + JSON.stringify(p[k])).join(",") + "}";
process.stdout.write(JSON.stringify({
  classes,
  stringify: input.stringify.map((t) => JSON.stringify(JSON.parse(t))),
  sorted: input.sorted.map((t) => sortedText(JSON.parse(t))),
  replacer: input.flat.map((t) => { const p = JSON.parse(t); return JSON.stringify(p, Object.keys(p).sort()); }),
  numbers: input.numbers.map((t) => JSON.stringify(JSON.parse(t))),
  patterns: input.patterns.map((t) => [...PATTERNS.map((p) => p.test(t)), DIVIDER.test(t)]),
  content: input.content.map(content),
}));
"""

AWKWARD = ["\ufeff", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\r", "\u2028", "\u2029", "\xa0", "\u3000", "\u180e",
           "\u200b", "\t", "\x0b", "\u0663", "\uff13", "\U0001d7d1", "\U0001f600", "\ufffd", " ", "\n"]


def pattern_inputs() -> list[str]:
    """Each markdown marker with an awkward character where `\\s`, `\\d` or `.` is read."""
    templates = ["{c}| a |", "| a {c} b |", "{c}---", "{c}* item", "*{c}item", "{c}- item", "{c}1. item", "1.{c}item",
                 "{c}. item", "#{c}title", ">{c}quote", "x\n{c}| a |", "x{c}# t", "x\n#{c}t", "---{c}", "{c}",
                 "===", "\u2500\u2500{c}", "{c}{c}+ x", "x\n {c}2. y"]
    return [t.format(c=c) for t in templates for c in AWKWARD]


def json_inputs() -> list[str]:
    """Objects whose keys, numbers and strings JavaScript writes otherwise than Python's json."""
    return [
        '{"b": 1, "a": 2, "10": 3, "9": 4, "01": 5, "-1": 6, "1.5": 7, "4294967294": 8, "4294967295": 9, "0": 10}',
        '{"z": {"2": "two", "y": [1.0, {"1": 1, "0": 0, "a": -0.0}], "1": null}, "3": true}',
        '{"": 1, " 1": 2, "1 ": 3, "\u0661": 4, "+1": 5, "1e3": 6, "00": 7, "7": 8}',
        '{"n": [1.0, 1e21, 1e20, 123456789012345678901, 1e-7, 1e-6, 0.000001, 1.5e-5, 12345678901234567890]}',
        '{"n": [9007199254740993, 1e400, -1e400, 5e-324, 1.7976931348623157e308, 0.1, 100, 1.25e+20, -0.0]}',
        '{"s": "\\ud800x\\udc00\\ud83d\\ude00\\u2028\\u007f\\u001f\\b\\f\\u0000\\u00e9\\"\\\\/"}',
        '{"\\ud83d\\ude00": 1, "\\uff01": 2, "a": 3, "\\ud800": 4, "B": 5, "\\u00e9": 6}',
        '{"x": "1", "1": "x", "k": [], "m": {}}',
    ]


def flat_inputs() -> list[str]:
    """Flat objects as Cline's signature sees them (a replacer list over the sorted keys)."""
    return [
        '{"path": "a", "10": "x", "9": "y", "b": "z", "A": "w"}',
        '{"\\ud83d\\ude00": "e", "\\uff01": "f", "\\u00e9": "g", "e": "h"}',
        '{"line": 3, "big": 123456789012345678901, "tiny": 1e-9, "f": 2.50}',
    ]


def number_inputs() -> list[str]:
    """Doubles across every magnitude (and a few integers beyond 2**53), as JSON numbers."""
    rng = random.Random(24)
    # any bit pattern: every exponent, subnormals included
    doubles = [struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(1500)]
    doubles += [rng.randint(1, 10**6) * 10.0 ** rng.randint(-12, 24) for _ in range(300)]  # short digits
    numbers = [repr(d) for d in doubles if math.isfinite(d)]
    return numbers + [str(rng.randint(2**53, 10**30)) for _ in range(100)] + ["5e-324", "1e21", "999999999999999900000"]


EMOJI_ALPHABET = ["a", "b", " ", "\U0001f600", "\U0001f601", "\U0001f680", "\xe9", "\ufffd", "\ufeff"]


def content_inputs() -> list[list[str]]:
    """Runs of assistant texts that chant (or nearly): emoji-heavy units whose lengths in code points and in
    UTF-16 code units fall on either side of the chunk size and the distance limit, and long runs that cut
    the 5,000-unit buffer."""
    rng = random.Random(6)
    runs = []
    for _ in range(100):
        unit = "".join(rng.choice(EMOJI_ALPHABET) for _ in range(rng.randint(20, 260)))
        runs.append([unit] * rng.randint(9, 16))
    for _ in range(30):  # a repeated unit with a little noise between some copies
        unit = "".join(rng.choice(EMOJI_ALPHABET) for _ in range(rng.randint(30, 150)))
        runs.append([unit + ("" if rng.random() < 0.7 else rng.choice(EMOJI_ALPHABET) * rng.randint(1, 60))
                     for _ in range(rng.randint(10, 20))])
    for _ in range(8):  # long texts: the buffer's front is cut
        unit = "".join(rng.choice(EMOJI_ALPHABET) for _ in range(rng.randint(40, 120)))
        noise = "".join(rng.choice(EMOJI_ALPHABET) for _ in range(rng.randint(3000, 6000)))
        runs.append([noise, unit * 3, noise[:2500], *([unit] * 12)])
    # a chunk ending inside an emoji hashes as one ending inside another (U+FFFD for the lone half): Node records
    # the loop's first chunk under the preamble's hash, finds other text there and never counts it, so the
    # detection comes one chunk later (its data differs: the chunk that chanted)
    emoji = "".join(chr(0x1F601 + i) for i in range(30))
    runs.append(["a" + emoji[:24] + "\U0001f300", *(["a" + emoji] * 10)])
    return runs


def python_content(texts: list[str]) -> dict[str, Any] | None:
    """Our gemini-cli engine over the texts as assistant messages: its first content detection."""
    guard = Guard(resolve_policy("gemini-cli"))
    engine = guard.run.engines["stuck_detector"]
    assert isinstance(engine, StuckDetector)
    for i, text in enumerate(texts):
        verdicts = [v for v in guard.message(Message("assistant", text)).verdicts if v.reason.endswith("content_loop")]
        if verdicts:
            return {"text": i, "chunk": verdicts[0].data["chunk"], "count": verdicts[0].data["count"]}
    return None


def members(pattern: str) -> list[int]:
    compiled = re.compile(pattern)
    return [c for c in range(0x10000) if compiled.match(chr(c))]


@pytest.fixture(scope="module")
def node() -> dict[str, Any]:
    request = {"stringify": json_inputs(), "sorted": json_inputs(), "flat": flat_inputs(), "numbers": number_inputs(),
               "patterns": pattern_inputs(), "content": content_inputs()}
    done = subprocess.run([NODE, "-e", REFERENCE], input=json.dumps(request), capture_output=True, text=True,
                          encoding="utf-8", check=True, timeout=60)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_regular_expression_classes_are_javascripts(node: dict[str, Any]) -> None:
    assert members(SPACE) == node["classes"]["space"]
    assert members(DIGIT) == node["classes"]["digit"]
    matched = set(members(ANY))
    assert [c for c in range(0x10000) if c not in matched] == node["classes"]["notAny"]


def test_geminis_markdown_patterns_read_awkward_text_as_javascript_does(node: dict[str, Any]) -> None:
    inputs = pattern_inputs()
    ours = [[p.search(t) is not None for p in STRUCTURE] + [DIVIDER.fullmatch(t) is not None] for t in inputs]
    differ = [(t, o, j) for t, o, j in zip(inputs, ours, node["patterns"], strict=True) if o != j]
    assert not differ


def test_json_stringify_of_parsed_json(node: dict[str, Any]) -> None:
    for text, written, sorted_text in zip(json_inputs(), node["stringify"], node["sorted"], strict=True):
        assert stringify(json.loads(text)) == written, text
        assert stringify_sorted(json.loads(text)) == sorted_text, text
    for text, written in zip(flat_inputs(), node["replacer"], strict=True):
        assert stringify_sorted(json.loads(text)) == written, text


def test_numbers_are_written_as_javascript_writes_them(node: dict[str, Any]) -> None:
    ours = [stringify(json.loads(n)) for n in number_inputs()]
    differ = [(n, o, j) for n, o, j in zip(number_inputs(), ours, node["numbers"], strict=True) if o != j]
    assert not differ[:5]
    assert js_number(-0.0) == "0"


def test_the_content_check_counts_utf16_code_units_and_hashes_as_node(node: dict[str, Any]) -> None:
    runs = content_inputs()
    js = node["content"]
    assert sum(j is not None for j in js) >= 90 and sum(j is None for j in js) >= 25  # both outcomes well covered
    differ = []
    for texts, expected in zip(runs, js, strict=True):
        if expected is not None:
            expected = dict(expected, chunk=utf8_form(expected["chunk"]))
        if python_content(texts) != expected:
            differ.append((texts[0][:40], expected))
    assert not differ[:3], f"{len(differ)} runs differ"
