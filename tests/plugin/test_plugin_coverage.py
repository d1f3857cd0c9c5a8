"""`--loopguard-coverage` in a user's repo: the rule coverage table, merged across xdist workers.

Under `default` 5 identical calls give 2 consecutive warnings and 1 block (warn at 3, block at 5); read
repeats are read_tracker's. The traces are spread over several files so both workers get some.
"""

from __future__ import annotations

import pytest

from pytest_loopguard.engines import registry

pytest_plugins = ["pytester"]

CLICKS = """\
loopguard: 1
name: cov-clicks-{i}
policy: {{preset: default, read_tracker: false, failure_tracker: false, budget: false, dedup: false, context: false}}
steps:
{steps}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    folder = pytester.path / "traces"
    folder.mkdir()
    click = "  - {tool: browser_click, args: {index: 1}}\n"
    for i in range(4):
        # traces 0 and 1: five identical calls; 2 and 3: two (no verdict)
        steps = click * (5 if i < 2 else 2)
        (folder / f"clicks{i}.yaml").write_text(CLICKS.format(i=i, steps=steps.rstrip("\n")), encoding="utf-8")
    return pytester


def rows(output: str) -> dict[str, tuple[str, str, str]]:
    """reason -> (engine, traces, verdicts) from the printed table."""
    out: dict[str, tuple[str, str, str]] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "loop_guard" and parts[1].startswith("loop_guard."):
            out[parts[1]] = (parts[0], parts[2], parts[3])
    return out


@pytest.mark.parametrize("workers", ["0", "2"])
def test_coverage_table_merged_across_workers(project: pytest.Pytester, workers: str) -> None:
    result = project.runpytest("-n", workers, "--loopguard-coverage")
    result.assert_outcomes(passed=4)
    table = rows(result.stdout.str())
    # Only loop_guard is active: all its declared codes are listed, and only its codes.
    assert list(table) == list(registry()["loop_guard"].REASONS)
    assert table["loop_guard.consecutive_warning"] == ("loop_guard", "2", "4")
    assert table["loop_guard.consecutive_block"] == ("loop_guard", "2", "2")
    assert table["loop_guard.ping_pong"] == ("loop_guard", "0", "0")
    never = [r for r in registry()["loop_guard"].REASONS if r not in (
        "loop_guard.consecutive_warning", "loop_guard.consecutive_block")]
    result.stdout.fnmatch_lines([
        f"rule coverage: 2 of {len(table)} reason codes exercised by 4 traces; never triggered: {', '.join(never)}"
    ])
    assert "read_tracker." not in result.stdout.str()


def test_no_coverage_table_without_the_option(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.assert_outcomes(passed=4)
    assert "rule coverage" not in result.stdout.str()


def test_coverage_goes_into_the_report(project: pytest.Pytester) -> None:
    import json

    project.runpytest("-n", "2", "--loopguard-report", "r.json")
    coverage = json.loads((project.path / "r.json").read_text(encoding="utf-8"))["coverage"]
    assert coverage["traces"] == 4
    by_reason = {r["reason"]: (r["traces"], r["verdicts"]) for r in coverage["rules"]}
    assert by_reason["loop_guard.consecutive_warning"] == (2, 4)
    assert "loop_guard.ping_pong" in coverage["uncovered"]


def test_unknown_report_extension_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--loopguard-report", "r.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--loopguard-report: report 'r.txt': unknown extension '.txt'; expected one of*"])


@pytest.mark.parametrize("workers", ["0", "2"])
def test_unwritable_report_is_one_line_and_fails_the_run(project: pytest.Pytester, workers: str) -> None:
    (project.path / "r.html").mkdir()  # a folder where the report file should go
    result = project.runpytest("-n", workers, "--loopguard-report", "r.html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["loopguard: report not written: cannot write */r.html: Is a directory"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
