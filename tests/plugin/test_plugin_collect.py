"""Trace files as pytest items: collection, passing and failing traces, collection errors, warnings."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

# Under `default`, identical calls: the 3rd and 4th warn, the 5th blocks (PRESETS.md, default: warn 3 / block 5).
FIVE_CLICKS = """\
loopguard: 1
name: {name}
description: >-
  Five identical clicks: the third and fourth
  warn, the fifth is blocked.
policy: default
strict: true
steps:
  - {{tool: browser_click, args: {{index: 4}}}}
  - {{tool: browser_click, args: {{index: 4}}}}
  - {{tool: browser_click, args: {{index: 4}}, expect: {{action: warn, reason: loop_guard.consecutive_warning}}}}
  - {{tool: browser_click, args: {{index: 4}}, expect: {step3}}}
  - {{tool: browser_click, args: {{index: 4}}, expect: {{action: block, reason: loop_guard.consecutive_block}}}}
  - {{tool: browser_type, args: {{index: 2, text: hi}}}}
expect: {{outcome: {outcome}, counts: {{warn: 2, block: 1}}}}
"""


def write(pytester: pytest.Pytester, relpath: str, text: str) -> None:
    path = pytester.path / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    return pytester


def test_a_trace_whose_expectations_hold_passes(project: pytest.Pytester) -> None:
    write(project, "traces/loops/clicks.yaml", FIVE_CLICKS.format(name="clicks", step3="warn", outcome="incomplete"))
    result = project.runpytest("-v")
    result.stdout.fnmatch_lines(
        ["traces/loops/clicks.yaml::clicks PASSED*", "loopguard: 1 traces replayed, 0 mismatched"]
    )
    result.assert_outcomes(passed=1)


def test_a_failing_trace_shows_the_mismatch_table_without_a_traceback(project: pytest.Pytester) -> None:
    # Step 3 really warns (4th identical call); expecting block there, and a stopped run, must fail.
    write(project, "traces/clicks.yaml", FIVE_CLICKS.format(name="clicks-wrong", step3="block", outcome="stopped"))
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*trace clicks-wrong*",
            "traces/clicks.yaml: trace clicks-wrong under default: incomplete: 2 mismatches",
            "Five identical clicks: the third and fourth warn, the fifth is blocked.",
            "*step*call*expected*got*engine*reason*message*",
            "*1*browser_click {\"index\":4}*allow*",
            ">*3*browser_click {\"index\":4}*block*warn*loop_guard*loop_guard.consecutive_warning*",
            "*5*browser_type*allow*",
            "run: outcome: expected 'stopped', got 'incomplete'",
            "loopguard: 1 traces replayed, 1 mismatched",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert "plugin.py" not in result.stdout.str()


def test_a_strict_trace_fails_on_an_unannotated_intervention(project: pytest.Pytester) -> None:
    write(
        project,
        "traces/strict.yaml",
        """\
        loopguard: 1
        name: strict-unannotated
        policy: default
        strict: true
        steps:
          - {tool: grep, args: {q: x}}
          - {tool: grep, args: {q: x}}
          - {tool: grep, args: {q: x}}
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([">*2*grep*allow (strict)*warn*loop_guard.consecutive_warning*"])


BAD_STEP = """\
loopguard: 1
name: bad
policy: default
steps:
  - {tool: browser_click}
  - tool: browser_click
    reslt: {ok: true}
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_bad_step_fails_its_trace_with_the_loaders_one_line(project: pytest.Pytester, workers: str) -> None:
    # collection reads names and tags only; the steps are judged when the trace runs, so the rest still runs
    write(project, "traces/bad.yaml", BAD_STEP)
    write(project, "traces/good.yaml", "loopguard: 1\nname: good\nsteps: [{tool: a}]\n")
    project.runpytest("--collect-only", "-q").stdout.fnmatch_lines(["traces/bad.yaml::bad", "traces/good.yaml::good"])
    result = project.runpytest("-n", workers)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["traces/bad.yaml:7: step 1: field 'reslt': unknown key 'reslt'; "
         "expected one of agent, args, blocked, cancelled, denied, expect, result, source, t, tool"]
    )
    assert "Traceback" not in result.stdout.str()
    assert "TraceError" not in result.stdout.str() and "TraceNotLoaded" not in result.stdout.str()


def test_a_bad_step_fails_every_trace_of_its_file(project: pytest.Pytester) -> None:
    # the loader judges a file as a whole: its other traces are not replayed from a file it refuses
    write(project, "traces/two.yaml", "loopguard: 1\nname: fine\nsteps: [{tool: a}]\n---\n" + BAD_STEP)
    result = project.runpytest("-v", "-rN")  # no short summary: its lines are cut or not by CI/terminal width
    result.assert_outcomes(failed=2)
    assert result.stdout.str().count("traces/two.yaml:11: step 1: field 'reslt': unknown key 'reslt'") == 2


def test_an_unknown_policy_in_a_trace_fails_it_when_it_runs(project: pytest.Pytester) -> None:
    write(project, "traces/p.yaml", "loopguard: 1\nname: p\npolicy: nosuchpreset\nsteps: []\n")
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["traces/p.yaml:3: field 'policy': *unknown preset 'nosuchpreset'*"])


@pytest.mark.parametrize("workers", ["0", "2"])
@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("v.yaml", "loopguard: 2\nname: v\nsteps: []\n",
         "traces/v.yaml:1: field 'loopguard': unsupported format version 2; expected 1 (the integer)"),
        ("n.yaml", "loopguard: 1\nname: [a]\nsteps: []\n",
         "traces/n.yaml:2: field 'name': expected a non-empty string, got list"),
        ("s.yaml", "loopguard: 1\nname: s\ntags: [a\nsteps: []\n",
         "traces/s.yaml:4: YAML syntax error: did not find expected ',' or *"),
        ("h.jsonl", '{"loopguard": 1, "name": "a::b"}\n{"tool": "a"}\n',
         "traces/h.jsonl:1: field 'name': a name cannot contain '::', * (it is a pytest test id); got 'a::b'"),
        ("j.json", '{"loopguard": 1, "steps": []}', "traces/j.json: field 'name': missing 'name'*"),
    ],
)
def test_a_bad_header_is_a_one_line_collection_error(
    project: pytest.Pytester, workers: str, name: str, text: str, line: str
) -> None:
    # what collection reads (the version, the name, the tags; the whole file where the header reader is unsure,
    # as for a syntax error in these lines) is judged at collection
    write(project, f"traces/{name}", text)
    result = project.runpytest("-n", workers)
    assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED)
    result.stdout.fnmatch_lines([f"*ERROR collecting traces/{name}*", line])
    assert "Traceback" not in result.stdout.str()


def test_a_trace_the_header_reader_passes_over_is_loaded_at_collection(project: pytest.Pytester) -> None:
    write(project, "traces/flow.yaml", "{loopguard: 1, name: flow, tags: [t], steps: [{tool: a}]}\n")
    result = project.runpytest("-v", "-k", "t")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["traces/flow.yaml::flow PASSED*"])


def test_a_file_changed_between_collection_and_run_fails_in_one_line(project: pytest.Pytester) -> None:
    write(project, "traces/a.yaml", "loopguard: 1\nname: before\nsteps: [{tool: a}]\n")
    project.makeconftest(
        "from pathlib import Path\n\n"
        "def pytest_collection_finish(session):\n"
        "    Path('traces/a.yaml').write_text('loopguard: 1\\nname: after\\nsteps: [{tool: a}]\\n')\n"
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["traces/a.yaml: collected trace 'before' as trace 1 of the file, which now holds "
                                 "trace 'after' there; collect again"])


def test_every_trace_of_a_multi_document_file_is_an_item(project: pytest.Pytester) -> None:
    write(
        project,
        "traces/many.yaml",
        """\
        loopguard: 1
        name: first
        steps: [{tool: a}]
        ---
        loopguard: 1
        name: second
        steps: [{tool: b}]
        """,
    )
    result = project.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["traces/many.yaml::first", "traces/many.yaml::second"])


def test_reportinfo_names_the_trace_and_its_first_line(project: pytest.Pytester) -> None:
    write(
        project,
        "traces/many.yaml",
        "loopguard: 1\nname: first\nsteps: [{tool: a}]\n---\nloopguard: 1\nname: second\nsteps: [{tool: b}]\n",
    )
    items, _ = project.inline_genitems()
    assert [item.reportinfo() for item in items] == [
        (project.path / "traces/many.yaml", 0, "trace first"),
        (project.path / "traces/many.yaml", 4, "trace second"),
    ]


def test_duplicate_names_in_one_file_are_a_collection_error(project: pytest.Pytester) -> None:
    write(project, "traces/dup.yaml", "loopguard: 1\nname: same\nsteps: []\n---\nloopguard: 1\nname: same\nsteps: []\n")
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["traces/dup.yaml: field 'name': duplicate trace name 'same' in one file"])


def test_only_files_under_loopguard_paths_are_collected(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nloopguard_paths =\n    corpus\n")
    write(pytester, "corpus/a.json", '{"loopguard": 1, "name": "in-corpus", "steps": [{"tool": "a"}]}')
    write(pytester, "traces/b.yaml", "loopguard: 1\nname: not-collected\nsteps: []\n")
    write(pytester, "data/c.yaml", "just: data\n")
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["corpus/a.json::in-corpus", "1 test collected*"])
    assert "not-collected" not in result.stdout.str()


def test_a_torn_jsonl_line_is_a_pytest_warning_not_a_failure(project: pytest.Pytester) -> None:
    write(
        project,
        "traces/rec.jsonl",
        '{"loopguard": 1, "name": "recorded", "policy": "default"}\n{"tool": "a"}\n{"tool": "b", "res',
    )
    result = project.runpytest("-W", "default")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*LoopguardWarning*traces/rec.jsonl:3: torn last line ignored*"])


@pytest.mark.parametrize("flag", ["error", "error::pytest_loopguard.errors.LoopguardWarning"])
def test_with_warnings_as_errors_a_torn_line_fails_its_trace_in_one_line(flag: str, project: pytest.Pytester) -> None:
    write(
        project,
        "traces/rec.jsonl",
        '{"loopguard": 1, "name": "recorded", "policy": "default"}\n{"tool": "a"}\n{"tool": "b", "res',
    )
    result = project.runpytest("-W", flag)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["traces/rec.jsonl: trace recorded: warning treated as an error: "
                                 "*traces/rec.jsonl:3: torn last line ignored*"])
    assert "Traceback" not in result.stdout.str() and "def from_call" not in result.stdout.str()
    assert len(result.stdout.lines) < 20


def test_an_unusable_loopguard_policy_is_a_usage_error(project: pytest.Pytester) -> None:
    # Checked once at configure time, so a typo does not turn every trace into the same failure.
    write(project, "traces/a.yaml", "loopguard: 1\nname: a\nsteps: [{tool: a}]\n")
    result = project.runpytest("--loopguard-policy", "missing.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --loopguard-policy: *policy file 'missing.yaml' not found"])


def test_a_trace_file_named_on_the_command_line_is_collected_anywhere(project: pytest.Pytester) -> None:
    write(project, "elsewhere/one.yaml", "loopguard: 1\nname: named-one\nsteps: [{tool: a}]\n")
    write(project, "elsewhere/two.yaml", "loopguard: 1\nname: not-named\nsteps: [{tool: a}]\n")
    result = project.runpytest("elsewhere/one.yaml", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["elsewhere/one.yaml::named-one PASSED*"])


def test_tags_are_keywords(project: pytest.Pytester) -> None:
    write(project, "traces/a.yaml", "loopguard: 1\nname: tagged\ntags: [browser, seed-000]\nsteps: [{tool: a}]\n")
    write(project, "traces/b.yaml", "loopguard: 1\nname: untagged\nsteps: [{tool: a}]\n")
    result = project.runpytest("-k", "browser", "-v")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["traces/a.yaml::tagged PASSED*"])


def test_report_header_names_paths_and_policy(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nloopguard_paths =\n    corpus\n    more\n")
    result = pytester.runpytest("--loopguard-policy", "hermes")
    result.stdout.fnmatch_lines(["loopguard: trace paths: corpus, more; policy: hermes"])
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["loopguard: trace paths: corpus, more; policy: each trace's own"])


def test_traces_next_to_a_conftest_folder(project: pytest.Pytester) -> None:
    # A conftest elsewhere makes pytest build per-folder hook subsets, which hash every registered plugin.
    write(project, "tests/conftest.py", "")
    write(project, "tests/test_plain.py", "def test_plain():\n    pass\n")
    write(project, "traces/a.yaml", "loopguard: 1\nname: beside-conftest\nsteps: [{tool: a}]\n")
    project.runpytest().assert_outcomes(passed=2)
