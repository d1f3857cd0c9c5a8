"""`--loopguard-matrix a,b`: every trace replayed under each policy, one item per (trace, policy)."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

# Four identical clicks. default (warn 3 / block 5, the call runs on a warning): allow, allow, warn, warn.
# spacebot-branch (warn 3 / block 5, a warning skips the call): allow, allow, block, block.
# spacebot (= worker, warn 4 / block 7): allow ×3, block. Only default meets these expectations.
CLICKS = """\
loopguard: 1
name: matrix-clicks
tags: [browser]
policy: default
steps:
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}, expect: warn}
  - {tool: browser_click, args: {index: 4}, expect: warn}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "clicks.yaml").write_text(CLICKS, encoding="utf-8")
    return pytester


def test_one_item_per_policy(project: pytest.Pytester) -> None:
    result = project.runpytest("--loopguard-matrix", "default, spacebot-branch,spacebot", "-v", "--loopguard-report",
                               "r.json")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "loopguard: trace paths: traces; policy: matrix default, spacebot-branch, spacebot",
            "*",
            "traces/clicks.yaml::matrix-clicks[[]default[]] PASSED*",
            "traces/clicks.yaml::matrix-clicks[[]spacebot-branch[]] FAILED*",
            "traces/clicks.yaml::matrix-clicks[[]spacebot[]] FAILED*",
            "loopguard: 3 traces replayed, 2 mismatched",
        ]
    )
    report = json.loads((project.path / "r.json").read_text(encoding="utf-8"))
    cells = {(e["policy"], tuple(sorted(e["counts"].items())), e["passed"]) for e in report["traces"]}
    assert cells == {
        ("default", (("allow", 2), ("warn", 2)), True),
        ("spacebot-branch", (("allow", 2), ("block", 2)), False),
        ("spacebot", (("allow", 3), ("block", 1)), False),
    }


def test_select_a_cell_by_keyword(project: pytest.Pytester) -> None:
    result = project.runpytest("--loopguard-matrix", "default,spacebot", "-k", "browser and default")
    result.assert_outcomes(passed=1, deselected=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--loopguard-matrix", "default,nope"], "ERROR: --loopguard-matrix: *unknown preset 'nope'*"),
        (["--loopguard-matrix", " , "], "ERROR: --loopguard-matrix: expected policies separated by commas*"),
        (["--loopguard-matrix", "default", "--loopguard-policy", "hermes"], "ERROR: *exclude each other"),
        (["--loopguard-matrix", "default", "--loopguard-update"], "ERROR: --loopguard-update cannot record a matrix*"),
    ],
)
def test_bad_matrix_options_are_usage_errors(project: pytest.Pytester, args: list[str], message: str) -> None:
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
