"""Record mode: `@pytest.mark.loopguard_record`, the `loopguard_recorder` fixture and `--loopguard-record`, run
through pytester on a toy agent that drives a plain Session (no framework)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopguard.core._expect import check
from pytest_loopguard.io._format import load
from pytest_loopguard.runtime._replay import replay

pytest_plugins = ["pytester"]

# The agent under test: it runs the same failing command until the policy stops it, and leaves a line in
# runs.txt each time its body runs (a replayed recording must not run it). AGENT_CMD changes what it runs.
TOY_AGENT = '''
import os
import pathlib

from pytest_loopguard.core._model import ToolCall, ToolResult


def toy_agent(session, name):
    """Calls one failing command until the policy ends the run; the policy decides what runs."""
    pathlib.Path("runs.txt").open("a").write(name + "\\n")
    session.message("user", "make the tests pass")
    command = os.environ.get("AGENT_CMD", "pytest -x")
    for _ in range(20):
        call = ToolCall.of("run", {"cmd": command})
        decision = session.before_call(call)
        result = ToolResult(ok=False, text="1 failed", exit_code=1) if decision.runs else None
        session.after_call(call, result)
        if session.ended:
            return
    session.done(True, "gave up")
'''

CHECKOUT = '''
import pytest
from toy import toy_agent


@pytest.mark.loopguard_record("recordings/checkout.jsonl", policy="default")
def test_checkout(loopguard_recorder):
    """The checkout agent repeats a failing command: warned, blocked, then stopped."""
    toy_agent(loopguard_recorder, "checkout")
    assert loopguard_recorder.outcome == "stopped"
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nloopguard_paths = none\n")
    pytester.makepyfile(toy=TOY_AGENT)
    pytester.syspathinsert()
    return pytester


def runs(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / "runs.txt"
    return path.read_text().split() if path.exists() else []


def leftovers(project: Path) -> list[str]:
    """Lock files and partial recordings beside the recordings: none may outlive a run."""
    return sorted(p.name for p in project.rglob("recordings/**/*") if p.name.startswith(".") or p.suffix == ".lock")


def test_missing_recording_fails_with_the_command_that_records_it(project: pytest.Pytester) -> None:
    project.makepyfile(test_checkout=CHECKOUT)
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "recordings/checkout.jsonl: no recording for this test (--loopguard-record=none); record it with:",
        "  pytest --loopguard-record=once test_checkout.py::test_checkout",
    ])
    assert runs(project) == []  # the body did not run: nothing reached the real agent
    assert not (project.path / "recordings" / "checkout.jsonl").exists()
    # the printed command, run as printed, records it
    command = re.search(r"^  (pytest --loopguard-record=once .*)$", result.stdout.str(), re.M)
    assert command is not None
    again = project.runpytest(*shlex.split(command.group(1))[1:])
    again.assert_outcomes(passed=1)
    assert (project.path / "recordings" / "checkout.jsonl").is_file()


def test_the_command_names_the_test_from_where_pytest_was_started(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = project.mkdir("sub")
    (sub / "test_param.py").write_text(
        "import pytest\nfrom toy import toy_agent\n\n"
        "@pytest.mark.parametrize('card', ['visa card'])\n"
        "@pytest.mark.loopguard_record()\n"
        "def test_pay(loopguard_recorder, card):\n    toy_agent(loopguard_recorder, card)\n"
    )
    result = project.runpytest("sub")
    result.assert_outcomes(failed=1)
    # a parametrized test's default recording, and its id quoted for the shell
    result.stdout.fnmatch_lines([
        "sub/recordings/test_param/test_pay-visa-card.jsonl: no recording for this test*",
        "  pytest --loopguard-record=once 'sub/test_param.py::test_pay[visa card]'",
    ])
    monkeypatch.chdir(sub)
    inner = project.runpytest("test_param.py")
    inner.stdout.fnmatch_lines(["  pytest --loopguard-record=once 'test_param.py::test_pay[visa card]'"])
    again = project.runpytest("--loopguard-record=once", "test_param.py::test_pay[visa card]")
    again.assert_outcomes(passed=1)
    assert (sub / "recordings" / "test_param" / "test_pay-visa-card.jsonl").is_file()


def test_once_records_then_replays_without_running_the_body(project: pytest.Pytester) -> None:
    workers: list[str] = []  # under xdist: test_several_tests_under_two_workers_write_each_recording_once
    project.makepyfile(test_checkout=CHECKOUT)
    first = project.runpytest("--loopguard-record=once", *workers)
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["loopguard: recorded 1 trace (--loopguard-record=once):",
                                "  recordings/checkout.jsonl"])
    assert runs(project) == ["checkout"]
    recording = project.path / "recordings" / "checkout.jsonl"
    written = recording.read_bytes()
    trace = load(recording)
    # the live verdicts are the recording's expectations, and it replays to them
    assert trace.name == "checkout" and trace.policy == "default"
    assert trace.description == "The checkout agent repeats a failing command: warned, blocked, then stopped."
    assert trace.source == {"kind": "recorded", "origin": "test_checkout.py::test_checkout"}
    assert trace.expect is not None and (trace.expect.outcome, trace.expect.stopped_by) == ("stopped", "loop_guard")
    assert [s.expect.action if s.expect else "allow" for s in trace.steps] == [
        "allow", "allow", "allow", "warn", "warn", "block", "block", "block", "stop"]
    assert check(replay(trace)) == []
    assert leftovers(project.path) == []

    second = project.runpytest("--loopguard-record=once", *workers)
    second.assert_outcomes(passed=1)
    assert "recorded" not in second.stdout.str()
    assert runs(project) == ["checkout"]  # replayed: the body (the agent) did not run again
    assert recording.read_bytes() == written
    project.runpytest(*workers).assert_outcomes(passed=1)  # none: the committed recording replays
    assert runs(project) == ["checkout"]


def test_new_records_the_missing_ones_and_replays_the_rest(project: pytest.Pytester) -> None:
    project.makepyfile(test_checkout=CHECKOUT)
    project.runpytest("--loopguard-record=new").assert_outcomes(passed=1)
    project.makepyfile(test_refund=CHECKOUT.replace("checkout", "refund"))
    project.runpytest("--loopguard-record=new").assert_outcomes(passed=2)
    assert runs(project) == ["checkout", "refund"]


def test_all_records_again(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makepyfile(test_checkout=CHECKOUT)
    project.runpytest("--loopguard-record=once").assert_outcomes(passed=1)
    recording = project.path / "recordings" / "checkout.jsonl"
    monkeypatch.setenv("AGENT_CMD", "make test")  # the agent changed
    project.runpytest("--loopguard-record=once").assert_outcomes(passed=1)
    assert "pytest -x" in recording.read_text() and "make test" not in recording.read_text()
    result = project.runpytest("--loopguard-record=all")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["loopguard: recorded 1 trace (--loopguard-record=all):"])
    assert "make test" in recording.read_text() and "pytest -x" not in recording.read_text()
    assert runs(project) == ["checkout", "checkout"]


def test_the_ini_key_sets_the_mode_and_the_option_wins(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nloopguard_paths = none\nloopguard_record = once\n")
    project.makepyfile(test_checkout=CHECKOUT)
    project.runpytest("--loopguard-record=none").assert_outcomes(failed=1)
    project.runpytest().assert_outcomes(passed=1)
    assert runs(project) == ["checkout"]
    project.makeini("[pytest]\nloopguard_record = sometimes\n")
    bad = project.runpytest()
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*ini option loopguard_record: expected one of none, once, new, all, got 'sometimes'"])


def test_a_changed_policy_fails_with_the_step_table_a_trace_item_shows(project: pytest.Pytester) -> None:
    project.makepyfile(test_checkout=CHECKOUT)
    project.runpytest("--loopguard-record=once").assert_outcomes(passed=1)
    project.makepyfile(test_checkout=CHECKOUT.replace('policy="default"', 'policy="spacebot"'))
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "recordings/checkout.jsonl: trace checkout under spacebot: incomplete: 11 mismatches" in out
    assert ("if the new verdicts are right, record it again: "
            "pytest --loopguard-record=all test_checkout.py::test_checkout") in out
    # the same file as a collected trace, under the same policy: the same report, line for line
    (project.path / "traces").mkdir()
    (project.path / "traces" / "checkout.jsonl").write_bytes(
        (project.path / "recordings" / "checkout.jsonl").read_bytes())
    item = project.runpytest("-o", "loopguard_paths=traces", "--loopguard-policy", "spacebot", "traces")
    item.assert_outcomes(failed=1)
    report = _report(out, "recordings/checkout.jsonl: trace checkout")
    assert report[1] == "The checkout agent repeats a failing command: warned, blocked, then stopped."
    assert [line[:16] for line in report if line.startswith(">")] == [  # the step table, mismatches marked
        ">   3       run ", ">   4       run ", ">   5       run ", ">   6       run ", ">   8       run "]
    assert [line.replace("recordings/", "traces/", 1) for line in report] == _report(
        item.stdout.str(), "traces/checkout.jsonl: trace checkout")
    assert runs(project) == ["checkout"]


def _report(out: str, first: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    ends = ("if the new verdicts", "=====", "loopguard: ")  # the hint, pytest's summary, the plugin's summary
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(ends))
    return lines[start:end]


def test_a_policy_file_beside_the_test(project: pytest.Pytester) -> None:
    project.mkdir("policies")
    (project.path / "policies" / "strict.yaml").write_text("preset: default\nloop_guard:\n  warn_at: 1\n")
    project.makepyfile(test_checkout=CHECKOUT.replace('policy="default"', 'policy="policies/strict.yaml"'))
    project.runpytest("--loopguard-record=once").assert_outcomes(passed=1)
    trace = load(project.path / "recordings" / "checkout.jsonl")
    assert trace.policy == "../policies/strict.yaml"  # as a trace's own policy file: relative to the trace
    assert trace.steps[1].expect is not None and trace.steps[1].expect.action == "warn"
    assert check(replay(trace, str(project.path / "policies" / "strict.yaml"))) == []
    project.runpytest().assert_outcomes(passed=1)


def test_a_yaml_recording(project: pytest.Pytester) -> None:
    project.makepyfile(test_checkout=CHECKOUT.replace("checkout.jsonl", "checkout.yaml"))
    project.runpytest("--loopguard-record=once").assert_outcomes(passed=1)
    text = (project.path / "recordings" / "checkout.yaml").read_text()
    assert text.startswith("loopguard: 1\n") and "action: stop" in text
    project.runpytest().assert_outcomes(passed=1)
    assert runs(project) == ["checkout"]


def test_a_failing_body_records_nothing_and_keeps_the_old_recording(project: pytest.Pytester) -> None:
    project.makepyfile(test_checkout=CHECKOUT)
    project.runpytest("--loopguard-record=once").assert_outcomes(passed=1)
    recording = project.path / "recordings" / "checkout.jsonl"
    before = recording.read_bytes()
    project.makepyfile(test_checkout=CHECKOUT.replace('== "stopped"', '== "completed"'))
    result = project.runpytest("--loopguard-record=all")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E       AssertionError: assert <Outcome.STOPPED: 'stopped'> == 'completed'"])
    assert "loopguard: recorded" not in result.stdout.str()
    assert recording.read_bytes() == before
    assert leftovers(project.path) == []
    recording.unlink()
    project.runpytest("--loopguard-record=once").assert_outcomes(failed=1)
    assert not recording.exists() and leftovers(project.path) == []


def test_a_body_that_reports_nothing_records_nothing(project: pytest.Pytester) -> None:
    project.makepyfile(test_idle="""
        import pytest

        @pytest.mark.loopguard_record("recordings/idle.jsonl")
        def test_idle(loopguard_recorder):
            pass
    """)
    result = project.runpytest("--loopguard-record=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["recordings/idle.jsonl: the test reported nothing to its loopguard_recorder "
                                 "Session; no recording written"])
    assert list((project.path / "recordings").iterdir()) == []


def test_marker_and_fixture_go_together(project: pytest.Pytester) -> None:
    project.makepyfile(test_alone="""
        import pytest

        @pytest.mark.loopguard_record("recordings/a.jsonl")
        def test_marker_only():
            pass

        def test_fixture_only(loopguard_recorder):
            pass

        @pytest.mark.loopguard_record("recordings/a.txt")
        def test_bad_suffix(loopguard_recorder):
            pass

        @pytest.mark.loopguard_record("recordings/b.jsonl", polcy="default")
        def test_bad_keyword(loopguard_recorder):
            pass
    """)
    result = project.runpytest("--loopguard-record=once", "-rfE")
    result.assert_outcomes(failed=1, errors=3)
    result.stdout.fnmatch_lines_random([
        "test_alone.py::test_marker_only: @pytest.mark.loopguard_record records the run of the `loopguard_recorder` "
        "fixture's Session: the test must take that fixture",
        "test_alone.py::test_fixture_only: the loopguard_recorder fixture records to the file a "
        "@pytest.mark.loopguard_record(PATH) marker names; the test has none",
        "test_alone.py::test_bad_suffix: loopguard_record: recordings/a.txt: a recording is a .jsonl, .yaml, .yml, "
        ".json file",
        "test_alone.py::test_bad_keyword: loopguard_record: unknown keyword 'polcy'; expected path, policy or the "
        "Session's *",
    ])
    assert not (project.path / "recordings").exists()


SEVERAL = '''
import pytest
from toy import toy_agent

@pytest.mark.parametrize("n", range(6))
@pytest.mark.loopguard_record()
def test_flow(loopguard_recorder, n):
    toy_agent(loopguard_recorder, f"flow{n}")
'''

TWICE = CHECKOUT + CHECKOUT.replace("def test_checkout", "def test_checkout_again")
SHARED_BY_TWO = [
    "recordings/checkout.jsonl: also the recording of test_twice.py::test_checkout_again; a recording belongs "
    "to one test (give each its own path)",
    "recordings/checkout.jsonl: also the recording of test_twice.py::test_checkout; a recording belongs "
    "to one test (give each its own path)",
]


def test_several_tests_under_two_workers_write_each_recording_once(project: pytest.Pytester) -> None:
    project.makepyfile(test_flows=SEVERAL, test_twice=TWICE)
    result = project.runpytest("-n", "2", "--loopguard-record=once")
    result.assert_outcomes(passed=6, errors=2)
    result.stdout.fnmatch_lines(["loopguard: recorded 6 traces (--loopguard-record=once):"])
    result.stdout.fnmatch_lines_random(SHARED_BY_TWO)  # each worker sees every test's recording
    folder = project.path / "recordings" / "test_flows"
    assert sorted(p.name for p in folder.iterdir()) == [f"test_flow-{n}.jsonl" for n in range(6)]
    assert sorted(runs(project)) == [f"flow{n}" for n in range(6)]
    for path in folder.iterdir():
        assert check(replay(load(path))) == []
    assert leftovers(project.path) == [] and not (project.path / "recordings" / "checkout.jsonl").exists()
    project.runpytest("-n", "2", "test_flows.py").assert_outcomes(passed=6)
    assert len(runs(project)) == 6  # replayed on the workers: no body ran


def test_two_tests_naming_one_recording_are_errors(project: pytest.Pytester) -> None:
    project.makepyfile(test_twice=TWICE)
    result = project.runpytest("--loopguard-record=once")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines_random(SHARED_BY_TWO)
    assert runs(project) == [] and not (project.path / "recordings").exists()
    # one of them deselected: the other has the recording to itself
    project.runpytest("--loopguard-record=once", "-k", "not again").assert_outcomes(passed=1, deselected=1)


def test_a_lock_held_by_a_running_process_stops_a_second_writer(project: pytest.Pytester) -> None:
    project.makepyfile(test_checkout=CHECKOUT)
    lock = project.path / "recordings" / "checkout.jsonl.lock"
    lock.parent.mkdir()
    lock.write_text(f"{os.getpid()} other.py::test_other\n")  # this process: alive
    result = project.runpytest("--loopguard-record=once")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*recordings/checkout.jsonl: being recorded by another test ({os.getpid()} "
                                 "other.py::test_other; lock file recordings/checkout.jsonl.lock); one writer per "
                                 "recording"])
    assert lock.read_text() == f"{os.getpid()} other.py::test_other\n"  # not ours to remove
    assert runs(project) == [] and not (project.path / "recordings" / "checkout.jsonl").exists()
    # a lock whose writer is gone (killed mid-recording) is taken over
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    lock.write_text(f"{gone.stdout.strip()} other.py::test_other\n")
    project.runpytest("--loopguard-record=once").assert_outcomes(passed=1)
    assert not lock.exists() and (project.path / "recordings" / "checkout.jsonl").is_file()


def test_a_broken_recording_is_one_line(project: pytest.Pytester) -> None:
    project.makepyfile(test_checkout=CHECKOUT)
    (project.path / "recordings").mkdir()
    (project.path / "recordings" / "checkout.jsonl").write_text('{"loopguard": 1, "name": "checkout"}\n{"tool": 3}\n')
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["recordings/checkout.jsonl:2: step 0: field 'tool': expected a non-empty string, "
                                 "got int"])
    assert "Traceback" not in result.stdout.str()


def test_a_recording_is_written_whole_then_renamed_into_place(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_checkout=CHECKOUT)
    project.runpytest("--loopguard-record=once").assert_outcomes(passed=1)
    recording = project.path / "recordings" / "checkout.jsonl"
    before = recording.read_bytes()
    renames: list[tuple[str, bytes, bytes]] = []
    real_replace = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        # at the rename the new recording is complete beside the old one, which is still whole
        renames.append((Path(src).name, Path(src).read_bytes(), Path(dst).read_bytes()))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setenv("AGENT_CMD", "make test")
    project.runpytest("--loopguard-record=all").assert_outcomes(passed=1)
    assert [(name, old) for name, _, old in renames] == [(f".checkout.jsonl.{os.getpid()}.tmp", before)]
    assert renames[0][1] == recording.read_bytes() and b"make test" in renames[0][1]
    assert leftovers(project.path) == []


def test_the_docs_example_records_the_committed_recording(pytester: pytest.Pytester) -> None:
    # docs/record-mode.md's test replays tests/recordings/checkout.jsonl when the docs are tested, without running
    # its agent: recorded again here from the page's code, it must give that file's steps and expectations
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "record-mode.md").read_text(encoding="utf-8")
    source = "\n".join(re.findall(r"^```python\n(.*?)^```", page, re.M | re.S))
    pytester.makeini("[pytest]\nloopguard_paths = none\n")
    pytester.makepyfile(test_checkout=source)
    pytester.runpytest("--loopguard-record=all").assert_outcomes(passed=1)

    def without_times(path: Path) -> list[dict[str, object]]:
        return [{k: v for k, v in json.loads(line).items() if k != "t"} for line in path.read_text().splitlines()]

    assert without_times(pytester.path / "tests" / "recordings" / "checkout.jsonl") == without_times(
        root / "tests" / "recordings" / "checkout.jsonl")


def test_the_policy_option_applies_where_the_marker_names_none(project: pytest.Pytester) -> None:
    project.makepyfile(test_checkout=CHECKOUT.replace('"recordings/checkout.jsonl", policy="default"',
                                                      'path="recordings/checkout.jsonl"'),
                       test_pinned=CHECKOUT.replace("checkout", "pinned"))
    project.runpytest("--loopguard-record=once").assert_outcomes(passed=2)
    assert load(project.path / "recordings" / "checkout.jsonl").policy == "default"
    result = project.runpytest("--loopguard-policy", "spacebot")
    result.assert_outcomes(passed=1, failed=1)  # the marker's policy wins over the option
    result.stdout.fnmatch_lines(["recordings/checkout.jsonl: trace checkout under spacebot: incomplete: 11 mismatches"])
