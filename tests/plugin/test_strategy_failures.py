"""What a user of the hypothesis strategies sees (issue 26 item 6): a falsifying trace printed as a short
summary (its header and one line per step), not a many-line `Trace(...)` repr per step; and strategies that
fuzz around the user's own policy file, not only a bundled preset."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from pytest_loopguard.core._model import ToolCall, ToolResult, ToolStep, Trace
from pytest_loopguard.strategies import policies, policy_overrides

pytest_plugins = ["pytester"]


def test_a_trace_prints_as_a_summary_of_one_line_per_step() -> None:
    steps = tuple(ToolStep(i, ToolCall.of("grep", {"q": i}), ToolResult(text="x")) for i in range(3))
    text = repr(Trace("loop", steps, policy="default"))
    assert text.splitlines() == [
        "Trace('loop', policy='default', 3 steps:",
        '  0 tool grep {"q":0}',
        '  1 tool grep {"q":1}',
        '  2 tool grep {"q":2})',
    ]


def test_a_falsifying_example_shows_the_trace_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_drawn_trace_summary='''
from hypothesis import given, settings
from pytest_loopguard.strategies import traces


@settings(max_examples=50, database=None, derandomize=True)
@given(traces(kinds=("tool",), min_steps=3, max_steps=3, expectations=False))
def test_short(trace):
    assert len(trace.steps) < 3
''')
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    marker = "Falsifying example" if "Falsifying example" in text else "Failing test case"  # hypothesis' wording
    falsifying = text.split(marker, 1)[1].split("\n\n", 1)[0].split(")\n", 1)[0]
    assert "3 steps:" in falsifying and "ToolStep(" not in falsifying
    assert len(falsifying.splitlines()) <= 6  # the call, the trace's header and one line per step


def test_the_strategies_fuzz_around_a_policy_file(tmp_path: Path) -> None:
    mine = tmp_path / "agentco.yaml"
    mine.write_text("preset: default\nfailure_tracker: {max_failures: 7}\ndedup: false\n"
                    "loop_guard: {stop_at: 9}\n", encoding="utf-8")

    @settings(max_examples=20, database=None)
    @given(policies(str(mine), engines=("loop_guard",)), policy_overrides(mine, engines=("loop_guard",)))
    def check(policy, mapping):  # type: ignore[no-untyped-def]
        # the file's own settings stay; only the drawn thresholds change
        assert not policy.enabled("dedup") and policy.settings("failure_tracker").max_failures == 7
        assert policy.settings("loop_guard").stop_at == 9
        assert policy.settings("loop_guard").warn_at < policy.settings("loop_guard").block_at
        assert policy.name.startswith("agentco[loop_guard.warn_at=")
        assert mapping["failure_tracker"] == {"max_failures": 7} and mapping["loop_guard"]["stop_at"] == 9

    check()
