"""`--loopguard-report` and the terminal summary, with and without xdist (the controller aggregates).

The report is a document (schema 2): metadata, one entry per trace, rule coverage. The entries' first
fields are checked here against EXPECTED; the extra fields (steps, reasons) in test_report_files.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest_plugins = ["pytester"]

# Under `default`: 3rd and 4th identical calls warn, the 5th blocks (warn 3 / block 5).
PASSING = """\
loopguard: 1
name: report-five-clicks
policy: default
steps:
  - {tool: browser_click, args: {index: 1}}
  - {tool: browser_click, args: {index: 1}}
  - {tool: browser_click, args: {index: 1}, expect: warn}
  - {tool: browser_click, args: {index: 1}, expect: warn}
  - {tool: browser_click, args: {index: 1}, expect: block}
  - {done: {success: true}}
expect: {outcome: completed}
"""

FAILING = """\
loopguard: 1
name: report-wrong
policy: default
steps:
  - {tool: grep, args: {q: x}}
  - {tool: grep, args: {q: x}}
  - {tool: grep, args: {q: x}, expect: allow}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    folder = pytester.path / "traces" / "report"
    folder.mkdir(parents=True)
    (folder / "passing.yaml").write_text(PASSING, encoding="utf-8")
    (folder / "failing.yaml").write_text(FAILING, encoding="utf-8")
    # Several more files so that both xdist workers get traces.
    for i in range(4):
        (folder / f"extra{i}.json").write_text(
            json.dumps({"loopguard": 1, "name": f"report-extra-{i}", "steps": [{"tool": "a"}, {"tool": "b"}]}),
            encoding="utf-8",
        )
    return pytester


EXPECTED = [
    {
        "trace": "report-extra-0",
        "file": "traces/report/extra0.json",
        "policy": "default",
        "outcome": "incomplete",
        "stopped_at": None,
        "stopped_by": None,
        "counts": {"allow": 2},
        "passed": True,
    },
    *[
        {
            "trace": f"report-extra-{i}",
            "file": f"traces/report/extra{i}.json",
            "policy": "default",
            "outcome": "incomplete",
            "stopped_at": None,
            "stopped_by": None,
            "counts": {"allow": 2},
            "passed": True,
        }
        for i in (1, 2, 3)
    ],
    {
        "trace": "report-wrong",
        "file": "traces/report/failing.yaml",
        "policy": "default",
        "outcome": "incomplete",
        "stopped_at": None,
        "stopped_by": None,
        "counts": {"allow": 2, "warn": 1},
        "passed": False,
    },
    {
        "trace": "report-five-clicks",
        "file": "traces/report/passing.yaml",
        "policy": "default",
        "outcome": "completed",
        "stopped_at": None,
        "stopped_by": None,
        "counts": {"allow": 3, "warn": 2, "block": 1},
        "passed": True,
    },
]


def entries(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's entries cut to the fields of EXPECTED."""
    return [{k: e[k] for k in EXPECTED[0]} for e in report["traces"]]


@pytest.mark.parametrize("workers", ["0", "2"])
def test_json_report_and_summary_line(project: pytest.Pytester, workers: str) -> None:
    result = project.runpytest("-n", workers, "--loopguard-report", "out/loopguard.json")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["loopguard: 6 traces replayed, 1 mismatched"])
    report = json.loads((project.path / "out" / "loopguard.json").read_text(encoding="utf-8"))
    assert report["loopguard_report"] == 2
    assert entries(report) == EXPECTED
    assert report["summary"] == {"traces": 6, "passed": 5, "mismatched": 1}
    meta = report["meta"]
    assert meta["command"] == "pytest" and meta["policy"] is None and meta["matrix"] == []
    assert {"loopguard", "python", "platform", "created", "rootdir"} <= set(meta)


def test_xdist_writes_the_same_document(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # SOURCE_DATE_EPOCH pins `created`: with it, -n 0 and -n 2 must write byte-identical reports.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    project.runpytest("-n", "0", "--loopguard-report", "one.json")
    project.runpytest("-n", "2", "--loopguard-report", "two.json")
    one = (project.path / "one.json").read_text(encoding="utf-8")
    assert one == (project.path / "two.json").read_text(encoding="utf-8")
    assert json.loads(one)["meta"]["created"] == "2023-11-14T22:13:20Z"


def test_no_summary_line_without_traces(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_plain="def test_x():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "traces replayed" not in result.stdout.str()


def test_policy_option_is_named_in_the_report(project: pytest.Pytester) -> None:
    result = project.runpytest("--loopguard-policy", "spacebot", "--loopguard-report", "r.json")
    report = json.loads((project.path / "r.json").read_text(encoding="utf-8"))
    report = report["traces"]
    assert {entry["policy"] for entry in report} == {"spacebot"}
    # spacebot (worker): identical call ×5 → allow ×3, then block (warning) ×2: the passing trace now fails.
    five = next(entry for entry in report if entry["trace"] == "report-five-clicks")
    assert five["counts"] == {"allow": 4, "block": 2}
    assert five["passed"] is False
    # ... while the 3rd identical grep, a warning under default, is allowed under spacebot (warn at 4).
    wrong = next(entry for entry in report if entry["trace"] == "report-wrong")
    assert wrong["counts"] == {"allow": 3}
    assert wrong["passed"] is True
    result.assert_outcomes(passed=5, failed=1)
