"""Hostile and broken trace files in a user's repository: one-line errors (at collection for what collection
reads, when the trace runs for the rest), every good trace still runs and is reported, and policy files
resolve beside the trace whatever folder pytest starts in."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from files import write

pytest_plugins = ["pytester"]

STRICT_TRACE = """\
loopguard: 1
name: strict-clicks
policy: policies/strict.yaml
steps:
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}, expect: {action: warn, reason: loop_guard.consecutive_warning}}
"""
GOOD = "loopguard: 1\nname: good-{n}\nsteps:\n  - {{tool: a}}\nexpect: {{outcome: incomplete}}\n"



@pytest.fixture
def repo(pytester: pytest.Pytester) -> pytest.Pytester:
    """A user's repository: traces/ with a policy file under policies/ at its root, and a tests/ folder."""
    pytester.makeini("[pytest]\nloopguard_paths = traces\n")
    write(pytester.path, "policies/strict.yaml", "preset: default\nloop_guard: {warn_at: 2, block_at: 9}\n")
    write(pytester.path, "traces/x.yaml", STRICT_TRACE)
    (pytester.path / "tests").mkdir()
    return pytester


def run_in(folder: Path, *args: str) -> tuple[int, str]:
    """`python -m pytest ARGS` started in `folder` (the working folder is the point of the test)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=folder,
                          capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return proc.returncode, proc.stdout + proc.stderr


def test_a_policy_file_resolves_from_a_subfolder(repo: pytest.Pytester) -> None:
    status, out = run_in(repo.path / "tests", "../traces/x.yaml", "-q")
    assert status == 0, out
    assert "1 passed" in out


def test_a_consumer_folder_with_its_own_policy_file_does_not_shadow_the_corpus(repo: pytest.Pytester) -> None:
    # the consumer's strict.yaml would warn at the 1st call: the trace would fail if it were used
    consumer = repo.path / "tests" / "consumer"
    write(consumer, "policies/strict.yaml", "preset: default\nloop_guard: {warn_at: 1}\n")
    status, out = run_in(consumer, "../../traces/x.yaml", "-q")
    assert status == 0, out


def test_a_command_line_policy_file_is_taken_from_the_working_folder(repo: pytest.Pytester) -> None:
    # the option is the user's own argument: `../lenient.yaml` from tests/ is the repo's lenient.yaml
    write(repo.path, "lenient.yaml", "preset: default\nloop_guard: {warn_at: 5}\n")
    status, out = run_in(repo.path / "tests", "../traces/x.yaml", "--loopguard-policy", "../lenient.yaml", "-q")
    assert status == 1 and "1 failed" in out  # the 2nd call no longer warns: the trace's expectation fails
    assert "lenient" in out


def test_a_policy_path_out_of_the_corpus_fails_its_trace_in_one_line(repo: pytest.Pytester) -> None:
    write(repo.path.parent, "elsewhere.yaml", "preset: default\n")
    write(repo.path, "traces/escape.yaml", STRICT_TRACE.replace("policies/strict.yaml", "../../elsewhere.yaml")
          .replace("strict-clicks", "escape"))
    result = repo.runpytest()
    # the policy is read when the trace runs (collection reads only names and tags): the other trace still runs
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*_ trace escape _*",
                                 "trace escape: traces/escape.yaml: field 'policy': *is outside the corpus root*"])
    assert "Traceback" not in result.stdout.str()


def test_hostile_files_are_one_line_errors_and_every_good_trace_is_reported(repo: pytest.Pytester) -> None:
    write(repo.path, "traces/good1.yaml", GOOD.format(n=1))
    write(repo.path, "traces/z/good2.json", json.dumps({"loopguard": 1, "name": "good-2", "steps": []}))
    write(repo.path, "traces/deep.yaml", "loopguard: 1\nname: deep\nsteps: " + "[" * 50_000 + "]" * 50_000 + "\n")
    write(repo.path, "traces/tag.yaml", "loopguard: 1\nname: !!python/object/apply:os.getcwd []\nsteps: []\n")
    write(repo.path, "traces/latin1.yaml", b"loopguard: 1\nname: caf\xe9\nsteps: []\n")
    bomb = ['x-0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    bomb += [f"x-{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)]
    write(repo.path, "traces/bomb.yaml", "loopguard: 1\nname: bomb\n" + "\n".join(bomb) + "\nsteps: []\n")
    if hasattr(os, "mkfifo"):  # pytest's folder walk passes over it; it must not block the run
        os.mkfifo(repo.path / "traces" / "fifo.yaml")
    report = repo.path / "report.json"
    # pytest stops at collection errors unless told to go on; then every good trace runs and is reported.
    # A file whose header cannot be read (a bad tag in the name, bad bytes) is a collection error; one whose
    # header is fine fails its trace when it runs (steps nested too deep, an alias bomb in an extension key).
    result = repo.runpytest(f"--loopguard-report={report}", "--continue-on-collection-errors")
    result.assert_outcomes(passed=3, failed=2, errors=2)
    result.stdout.fnmatch_lines_random(["ERROR traces/latin1.yaml", "ERROR traces/tag.yaml",
                                        "FAILED traces/bomb.yaml::bomb - *", "FAILED traces/deep.yaml::deep - *"])
    out = result.stdout.str()
    assert "Traceback" not in out and "RecursionError" not in out
    result.stdout.fnmatch_lines_random([
        "traces/deep.yaml:3: nested deeper than 64 levels",
        "traces/tag.yaml:2: YAML tag 'tag:yaml.org,2002:python/object/apply:os.getcwd' is not allowed*",
        "traces/latin1.yaml:2: not UTF-8 text*",
        "traces/bomb.yaml:*: more than 2000000 values once aliases are expanded",
    ])
    names = sorted(entry["trace"] for entry in json.loads(report.read_text())["traces"])
    assert names == ["good-1", "good-2", "strict-clicks"]
