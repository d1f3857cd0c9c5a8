"""Trace loading, validation errors (file, step, line, field), JSONL tearing and round trips."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path

import pytest

from pytest_loopguard.errors import LoopguardWarning, NotATraceError, TraceError
from pytest_loopguard.io._format import dump, dumps, load, load_file, loads, trace_to_mapping, validate_paths


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_error(path: Path) -> TraceError:
    with pytest.raises(TraceError) as info:
        load_file(path)
    return info.value


GOOD = """
loopguard: 1
name: good
description: two clicks and a read
tags: [browser]
source: {kind: synthetic}
policy: default
task: {objective: Buy the cheapest flight, phase: act, budget: {max_tool_calls: 10, allowed_domains: [example.com]}}
context: {window_tokens: 32000}
strict: true
steps:
  - tool: browser_click
    args: {index: 12, button: left}
    result: {error: Element not found}
  - llm: {input_tokens: 1200, output_tokens: 30}
  - tool: read_file
    args: {path: a.py, offset: 1.0}
    result: {ok: true, text: "print(1)", tokens: 3, bytes: 8, changed: true}
    expect: {action: warn, engine: read_tracker, reason: read_tracker.repeat_warning, message: "3 times", data: {n: 3}}
    t: 1500
  - phase: verify
  - message: {role: user, text: keep going}
  - done: {success: false, text: gave up}
    expect: allow
    x-note: kept as an extension
expect: {outcome: completed, stopped_by: null, counts: {warn: 1}}
x-origin: hand written
"""


# ---- validation errors: every one names file, step, line and field -----------------------------------
def test_unknown_step_key_names_file_step_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "typo.yaml", """
        loopguard: 1
        name: typo
        steps:
          - tool: a
          - tool: b
            argz: {x: 1}
        """)
    err = load_error(path)
    assert (err.file, err.step, err.line, err.field) == (str(path), 1, 6, "argz")
    assert str(err).startswith(f"{path}:6: step 1: field 'argz': unknown key 'argz'")


def test_unknown_nested_key_points_at_its_own_line(tmp_path: Path) -> None:
    path = write(tmp_path, "nested.yaml", """
        loopguard: 1
        name: nested
        steps:
          - tool: a
            result:
              ok: true
              txt: hello
        """)
    err = load_error(path)
    assert (err.step, err.line, err.field) == (0, 7, "result.txt")


def test_unknown_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path, "top.yaml", "loopguard: 1\nname: t\nstep: []\n")
    err = load_error(path)
    assert (err.step, err.line, err.field) == (None, 3, "step")


def test_missing_loopguard_version(tmp_path: Path) -> None:
    path = write(tmp_path, "nover.yaml", "name: t\nsteps: []\n")
    err = load_error(path)
    assert err.field == "loopguard" and err.file == str(path)
    assert "missing 'loopguard'" in str(err)


def test_unsupported_version(tmp_path: Path) -> None:
    err = load_error(write(tmp_path, "v2.yaml", "loopguard: 2\nname: t\nsteps: []\n"))
    assert err.field == "loopguard" and err.line == 1 and "expected 1" in err.problem


@pytest.mark.parametrize("version", ["true", "1.0", "'1'", "0x1"])
def test_only_the_integer_1_is_version_1(version: str, tmp_path: Path) -> None:
    # YAML `true` and `1.0` compare equal to 1 in Python; `0x1` is the integer 1 written in hex: accepted
    text = f"loopguard: {version}\nname: t\nsteps: []\n"
    if version == "0x1":
        assert load(write(tmp_path, "v.yaml", text)).version == 1
        return
    err = load_error(write(tmp_path, "v.yaml", text))
    assert (err.field, err.line) == ("loopguard", 1)
    assert err.problem.startswith("unsupported format version") and "expected 1 (the integer)" in err.problem
    with pytest.raises(TraceError, match="unsupported format version"):
        loads(json.dumps({"loopguard": 1.0 if version == "1.0" else True, "name": "t", "steps": []}), fmt="json")


@pytest.mark.parametrize("name", ["file::case", "case[1]", "case]", "[case"])
def test_a_name_that_is_no_usable_test_id_is_rejected(name: str, tmp_path: Path) -> None:
    err = load_error(write(tmp_path, "n.yaml", f"loopguard: 1\nname: '{name}'\nsteps: []\n"))
    assert (err.field, err.line) == ("name", 2)
    assert "cannot contain '::', '[', ']'" in err.problem and repr(name) in err.problem


def test_missing_name(tmp_path: Path) -> None:
    err = load_error(write(tmp_path, "noname.yaml", "loopguard: 1\nsteps: []\n"))
    assert err.field == "name" and "missing 'name'" in err.problem


def test_unknown_action_in_expect(tmp_path: Path) -> None:
    path = write(tmp_path, "act.yaml", """
        loopguard: 1
        name: t
        steps:
          - tool: a
          - tool: a
            expect: blok
        """)
    err = load_error(path)
    assert (err.step, err.line, err.field) == (1, 6, "expect")
    assert "unknown action 'blok'" in err.problem


def test_unknown_action_in_expect_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "act2.yaml", """
        loopguard: 1
        name: t
        steps:
          - tool: a
            expect:
              action: halt
        """)
    err = load_error(path)
    assert (err.step, err.line, err.field) == (0, 6, "expect.action")


def test_reason_must_be_dotted(tmp_path: Path) -> None:
    path = write(tmp_path, "reason.yaml", """
        loopguard: 1
        name: t
        steps:
          - tool: a
            expect: {action: warn, reason: consecutive_warning}
        """)
    assert load_error(path).field == "expect.reason"


def test_step_needs_exactly_one_kind(tmp_path: Path) -> None:
    path = write(tmp_path, "two.yaml", """
        loopguard: 1
        name: t
        steps:
          - tool: a
          - tool: b
            phase: act
        """)
    err = load_error(path)
    assert err.step == 1 and err.line == 5 and "exactly one of" in err.problem


def test_yaml_syntax_error_gives_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "syntax.yaml", """
        loopguard: 1
        name: t
        steps:
          - tool: a
            args: {index: 1
          - tool: b
        """)
    err = load_error(path)
    assert err.file == str(path)
    assert err.line == 6  # the parser notices the unclosed flow mapping where the next item begins
    assert "YAML syntax error" in err.problem


def test_nan_in_args_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "nan.yaml", """
        loopguard: 1
        name: t
        steps:
          - tool: scroll
            args: {amount: .nan}
        """)
    err = load_error(path)
    assert (err.step, err.field) == (0, "args.amount")
    assert "NaN" in err.problem


def test_nan_in_json_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    path.write_text('{"loopguard": 1, "name": "t", "steps": [{"tool": "s", "args": {"x": NaN}}]}')
    err = load_error(path)
    assert "NaN" in str(err) and err.file == str(path)


def test_json_syntax_error_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "loopguard": 1,\n  "name": "t"\n  "steps": []\n}\n')
    err = load_error(path)
    assert err.line == 4 and "JSON syntax error" in err.problem


def test_unknown_suffix(tmp_path: Path) -> None:
    path = tmp_path / "trace.txt"
    path.write_text("loopguard: 1\n")
    assert "unknown trace file type" in load_error(path).problem


def test_policy_errors_are_trace_errors_on_the_policy_field(tmp_path: Path) -> None:
    path = write(tmp_path, "pol.yaml", "loopguard: 1\nname: t\npolicy: {preset: default, loop_gard: {}}\nsteps: []\n")
    err = load_error(path)
    assert err.field == "policy" and err.line == 3 and "loop_gard" in err.problem


def test_result_error_cannot_be_ok(tmp_path: Path) -> None:
    path = write(tmp_path, "res.yaml", """
        loopguard: 1
        name: t
        steps:
          - tool: a
            result: {ok: true, error: boom}
        """)
    assert load_error(path).field == "result.ok"


# ---- JSONL ------------------------------------------------------------------------------------------
def jsonl(*rows: str) -> str:
    return "\n".join(rows) + "\n"


HEADER = '{"loopguard": 1, "name": "j", "policy": "default"}'


def test_jsonl_torn_last_line_warns_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_text(jsonl(HEADER, '{"tool": "a"}', '{"tool": "b", "args": {"x": 1}}', '{"tool": "c", "ar'))
    with pytest.warns(LoopguardWarning, match=r"torn.jsonl:4: torn last line ignored"):
        trace = load(path)
    assert [s.call.tool for s in trace.steps if s.call] == ["a", "b"]
    assert len(trace.warnings) == 1 and ":4:" in trace.warnings[0]


def test_jsonl_bad_middle_line_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "mid.jsonl"
    path.write_text(jsonl(HEADER, '{"tool": "a"}', '{"tool": "b", oops}', '{"tool": "c"}'))
    err = load_error(path)
    assert err.line == 3 and err.file == str(path) and "JSON syntax error" in err.problem


def test_jsonl_step_error_names_the_steps_line(tmp_path: Path) -> None:
    path = tmp_path / "step.jsonl"
    path.write_text(jsonl(HEADER, '{"tool": "a"}', "", '{"tool": "b", "argz": {}}'))
    err = load_error(path)
    assert (err.step, err.line, err.field) == (1, 4, "argz")


def test_jsonl_header_must_not_carry_steps(tmp_path: Path) -> None:
    path = tmp_path / "hdr.jsonl"
    path.write_text(jsonl('{"loopguard": 1, "name": "j", "steps": []}'))
    err = load_error(path)
    assert err.line == 1 and err.field == "steps"


# ---- round trips and multi-document YAML -------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["yaml", "json", "jsonl"])
def test_round_trip_load_dumps_loads(tmp_path: Path, fmt: str) -> None:
    original = load(write(tmp_path, "good.yaml", GOOD))
    text = dumps(original, fmt)
    (again,) = loads(text, fmt=fmt)
    assert trace_to_mapping(again) == trace_to_mapping(original)
    assert dumps(again, fmt) == text
    assert [s.call.ordered_fingerprint for s in again.steps if s.call] == [
        s.call.ordered_fingerprint for s in original.steps if s.call
    ]
    # the details that a lossy dump would drop
    read = again.steps[2]
    assert read.result is not None and read.result.changed and read.t == 1500
    assert read.expect is not None and read.expect.data == {"n": 3} and not read.expect.short
    assert again.steps[5].extensions == {"x-note": "kept as an extension"}
    assert again.extensions == {"x-origin": "hand written"}
    assert again.expect is not None and again.expect.has_stopped_by and again.expect.stopped_by is None
    assert again.task is not None and again.task.budget["allowed_domains"] == ("example.com",)


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".jsonl"])
def test_dump_writes_the_format_its_suffix_names(tmp_path: Path, suffix: str) -> None:
    original = load(write(tmp_path, "good.yaml", GOOD))
    out = tmp_path / f"copy{suffix}"
    dump(original, out)
    if suffix == ".json":
        assert json.loads(out.read_text())["name"] == "good"
    if suffix == ".jsonl":
        assert len(out.read_text().splitlines()) == 1 + len(original.steps)
    assert trace_to_mapping(load(out)) == trace_to_mapping(original)


def test_argument_order_is_kept_and_canonical_identity_ignores_it(tmp_path: Path) -> None:
    path = write(tmp_path, "order.yaml", """
        loopguard: 1
        name: t
        steps:
          - {tool: a, args: {b: 1.0, a: 2}}
          - {tool: a, args: {a: 2, b: 1}}
        """)
    first, second = (s.call for s in load(path).steps)
    assert first is not None and second is not None
    assert list(first.args) == ["b", "a"]
    assert first.fingerprint == second.fingerprint
    assert first.ordered_fingerprint != second.ordered_fingerprint
    assert '"args": {"b": 1.0, "a": 2}' in dumps(load(path), "jsonl")


def test_multi_document_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "multi.yaml", """
        loopguard: 1
        name: first
        steps: [{tool: a}]
        ---
        loopguard: 1
        name: second
        steps: [{tool: b}, {tool: c}]
        """)
    traces = load_file(path)
    assert [t.name for t in traces] == ["first", "second"]
    assert [len(t.steps) for t in traces] == [1, 2]
    with pytest.raises(TraceError, match="holds 2 traces"):
        load(path)


def test_multi_document_error_line_is_in_its_document(tmp_path: Path) -> None:
    path = write(tmp_path, "multi_bad.yaml", """
        loopguard: 1
        name: first
        steps: [{tool: a}]
        ---
        loopguard: 1
        name: second
        steps:
          - tool: b
            bogus: 1
        """)
    err = load_error(path)
    assert (err.step, err.line, err.field) == (0, 9, "bogus")


# ---- validate_paths: every bad file, duplicates ------------------------------------------------------
def test_validate_paths_reports_every_bad_file_and_duplicates(tmp_path: Path) -> None:
    write(tmp_path, "a_good.yaml", "loopguard: 1\nname: one\nsteps: []\n")
    write(tmp_path, "b_bad.yaml", "loopguard: 1\nname: two\nsteps: [{tol: a}]\n")
    write(tmp_path, "c_bad.json", '{"name": "three", "steps": []}')
    write(tmp_path, "d_dup.yaml", "loopguard: 1\nname: one\nsteps: []\n")
    (tmp_path / "notes.txt").write_text("not a trace")
    skipped: list[NotATraceError] = []
    traces, errors = validate_paths([tmp_path, tmp_path / "missing.yaml"], skipped=skipped)
    assert [t.name for t in traces] == ["one"]
    assert [Path(e.file or "").name for e in errors] == ["b_bad.yaml", "d_dup.yaml", "missing.yaml"]
    assert "duplicate trace name 'one'" in str(errors[1])
    assert "no such file" in str(errors[2])
    # no top-level `loopguard` key: not a trace, so a folder skips it (and says which)
    assert [Path(e.file or "").name for e in skipped] == ["c_bad.json"]
    # it never says loopguard, but it says `steps`: parsed to look for a misspelt version key (there is none),
    # and the document is kept for the importers that name its format
    assert (skipped[0].parsed, skipped[0].document) == (True, {"name": "three", "steps": []})
    _, named = validate_paths([tmp_path / "c_bad.json"])  # named on its own, it must be a trace
    assert [type(e) for e in named] == [NotATraceError] and "missing 'loopguard'" in str(named[0])


@pytest.mark.parametrize(("name", "text", "parsed"), [
    ("export.json", '{"resourceSpans": []}', False),  # never says loopguard: decided without parsing
    ("list.json", '[{"loopguard": 1}]', True),
    ("mentions.json", '{"about": "loopguard"}', True),
    ("config.yaml", "loopguard_paths: [traces]\n", True),
    ("rows.jsonl", '{"kind": "loopguard-log"}\n{"tool": "a"}\n{"broken', True),  # only the header is read
    ("torn.jsonl", '{"kind": "x", "torn', False),
    ("empty.yaml", "", False),
])
def test_files_without_a_top_level_loopguard_key_are_not_traces(
    tmp_path: Path, name: str, text: str, parsed: bool
) -> None:
    with pytest.raises(NotATraceError) as err:
        load_file(write(tmp_path, name, text))
    assert err.value.parsed is parsed and err.value.field == "loopguard"


def test_a_file_that_claims_to_be_a_trace_and_is_broken_is_still_an_error(tmp_path: Path) -> None:
    for name, text in [("torn.json", '{"loopguard": 1, "name": '), ("head.jsonl", '{"loopguard": 1, "na\n{}\n'),
                       ("second.yaml", "loopguard: 1\nname: a\nsteps: []\n---\nname: b\nsteps: []\n")]:
        with pytest.raises(TraceError) as err:
            load_file(write(tmp_path, name, text))
        assert not isinstance(err.value, NotATraceError), name


def test_loading_a_good_file_emits_no_warning(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = load(write(tmp_path, "good.yaml", GOOD))
    assert trace.warnings == () and len(trace.steps) == 6


# ---- more fields: each error names its field and line ---------------------------------------------------
@pytest.mark.parametrize(
    ("body", "step", "line", "field", "problem"),
    [
        ("tags: browser\nsteps: []\n", None, 3, "tags", "expected a list of strings"),
        ("source: {kind: scraped}\nsteps: []\n", None, 3, "source.kind", "unknown kind 'scraped'"),
        ("source: {kind: synthetic, author: me}\nsteps: []\n", None, 3, "source.author", "unknown key 'author'"),
        ("task: {objective: x, phase: plan}\nsteps: []\n", None, 3, "task.phase", "unknown phase 'plan'"),
        ("task: {budget: {max_calls: 3}}\nsteps: []\n", None, 3, "task.budget.max_calls", "unknown key"),
        ("task: {budget: {allowed_domains: example.com}}\nsteps: []\n", None, 3, "task.budget.allowed_domains",
         "expected a list of domain names"),
        ("context: {window_tokens: 0}\nsteps: []\n", None, 3, "context.window_tokens", "expected an integer ≥ 1"),
        ("strict: yes please\nsteps: []\n", None, 3, "strict", "expected true or false"),
        ("steps: {tool: a}\n", None, 3, "steps", "expected a list of steps"),
        ("steps:\n  - tool: a\n    t: -5\n", 0, 5, "t", "expected an integer ≥ 0"),
        ("steps:\n  - phase: planning\n", 0, 4, "phase", "unknown phase 'planning'"),
        ("steps:\n  - message: {role: tool, text: x}\n", 0, 4, "message.role", "unknown role 'tool'"),
        ("steps:\n  - llm: {input_tokens: many}\n", 0, 4, "llm.input_tokens", "expected an integer"),
        ("steps:\n  - tool: a\n    result: {tokens: 1.5}\n", 0, 5, "result.tokens", "expected an integer"),
        ("steps:\n  - done: {success: maybe}\n", 0, 4, "done.success", "expected true or false"),
        ("steps: []\nexpect: {outcome: crashed}\n", None, 4, "expect.outcome", "unknown outcome 'crashed'"),
        ("steps: []\nexpect: {counts: {blocked: 1}}\n", None, 4, "expect.counts.blocked", "unknown action"),
        ("steps: []\nexpect: {stopped_at: -1}\n", None, 4, "expect.stopped_at", "expected an integer ≥ 0"),
    ],
)
def test_field_errors(tmp_path: Path, body: str, step: int | None, line: int, field: str, problem: str) -> None:
    path = write(tmp_path, "field.yaml", "loopguard: 1\nname: t\n" + body)
    err = load_error(path)
    assert (err.file, err.step, err.line, err.field) == (str(path), step, line, field)
    assert problem in err.problem


def test_shorthand_steps(tmp_path: Path) -> None:
    text = "loopguard: 1\nname: t\nsteps: [{llm: null}, {tool: a}, {done: true}]\n"
    trace = load(write(tmp_path, "short.yaml", text))
    assert [s.kind for s in trace.steps] == ["llm", "tool", "done"]
    assert trace.steps[0].llm is not None and not trace.steps[0].llm.failed
    assert trace.steps[1].outcome.ok and trace.steps[1].result is None  # no result: a plain success
    assert trace.steps[2].done is not None and trace.steps[2].done.success is None
