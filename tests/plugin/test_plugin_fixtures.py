"""The `loopguard` and `trace_builder` fixtures, used from an ordinary test module."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

FIXTURE_TESTS = '''
import pathlib

import pytest

from pytest_loopguard import Trace


def test_replay_a_file_and_assert_ok(loopguard):
    result = loopguard.replay("traces/clicks.yaml")
    assert result.trace.name == "clicks"
    assert [s.action for s in result.steps] == ["allow", "allow", "warn"]
    assert loopguard.check(result) == []
    loopguard.assert_ok(result)


def test_load_gives_the_trace(loopguard):
    trace = loopguard.load(pathlib.Path("traces") / "clicks.yaml")
    assert isinstance(trace, Trace)
    assert loopguard.replay(trace).outcome == "incomplete"


def test_assert_ok_raises_with_the_table(loopguard):
    result = loopguard.replay("traces/clicks.yaml", policy="spacebot")
    mismatches = loopguard.check(result)
    assert [(m.step, m.field, m.expected, m.got) for m in mismatches] == [(2, "action", "warn", "allow")]
    with pytest.raises(AssertionError) as info:
        loopguard.assert_ok(result)
    text = str(info.value)
    assert text.splitlines()[0] == "trace clicks under spacebot: incomplete: 1 mismatch"
    assert "step    call" in text
    assert "browser_click" in text


def test_load_falls_back_to_rootdir(loopguard, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert loopguard.load("traces/clicks.yaml").name == "clicks"


def test_replay_a_mapping(loopguard):
    trace = {"loopguard": 1, "name": "m", "policy": "default",
             "steps": [{"tool": "grep", "args": {"q": "x"}}] * 5}
    assert [s.action for s in loopguard.replay(trace).steps] == ["allow", "allow", "warn", "warn", "block"]


def test_replay_with_overrides(loopguard):
    trace = {"loopguard": 1, "name": "m", "steps": [{"tool": "grep", "args": {"q": "x"}}] * 2}
    result = loopguard.replay(trace, loop_guard={"warn_at": 1, "block_at": 2})
    assert [s.action for s in result.steps] == ["warn", "block"]
    assert result.policy == "default+overrides"


def test_builder(trace_builder, loopguard):
    trace = (
        trace_builder.message("find the cheapest flight")
        .tool("browser_click", index=3)
        .repeat(3)
        .failed("browser_click", "Element not found", index=9)
        .done(text="gave up", expect="allow")
        .expect_run(outcome="completed", counts={"warn": 2})
        .build(name="built-clicks", policy="default", description="four clicks")
    )
    assert trace.name == "built-clicks"
    assert trace.description == "four clicks"
    assert trace.objective == "find the cheapest flight"
    assert [s.kind for s in trace.steps] == ["message", "tool", "tool", "tool", "tool", "tool", "done"]
    assert trace.steps[5].outcome.error == "Element not found"
    assert trace.steps[4].call.args == {"index": 3}
    result = loopguard.replay(trace)
    assert [s.action for s in result.steps] == ["allow", "allow", "allow", "warn", "warn", "allow", "allow"]
    loopguard.assert_ok(result)


def test_builder_writes_rejected_turns_and_message_origins(trace_builder, loopguard):
    trace = (
        trace_builder.message("add the mug to the cart")
        .tool("click", index=3)
        .rejected("no tool call", "I will click it.", input_tokens=900, output_tokens=9)
        .message("Use exactly one action.", origin="harness")
        .message("Click the mug.", origin="agent", name="Planner")
        .rejected()
        .rejected(expect={"action": "warn", "reason": "failure_tracker.force_done"})
        .build(name="built-rejected", policy="qa-agent")
    )
    kinds = ["message", "tool", "rejected", "message", "message", "rejected", "rejected"]
    assert [s.kind for s in trace.steps] == kinds
    assert trace.steps[2].rejected.llm.input_tokens == 900 and trace.steps[5].rejected.reason == "no tool call"
    assert [s.message.origin for s in trace.steps if s.message] == [None, "harness", "agent"]
    assert trace.steps[4].message.name == "Planner"
    # three rejected turns are three failed turns under qa-agent; the messages between them reset nothing
    loopguard.assert_ok(loopguard.replay(trace))


def test_builder_validates_like_a_file(trace_builder):
    from pytest_loopguard import TraceError

    with pytest.raises(TraceError, match="field 'phase'"):
        trace_builder.phase("sleeping").build()


def test_builder_llm_and_results(trace_builder):
    trace = (
        trace_builder.llm(1200, 40)
        .tool("read_file", {"text": "hello", "tokens": 2}, path="a.txt")
        .tool("read_file", "hello again", path="a.txt")
        .llm(error="rate limit exceeded", t=5)
        .build()
    )
    assert trace.steps[0].llm.input_tokens == 1200
    assert trace.steps[1].outcome.tokens == 2
    assert trace.steps[2].outcome.text == "hello again"
    assert trace.steps[3].llm.error == "rate limit exceeded"
    assert trace.steps[3].t == 5
    assert trace.name == "built"
'''

CLICKS = """\
loopguard: 1
name: clicks
policy: default
steps:
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}, expect: warn}
"""


def test_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nloopguard_paths = none\n")
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "clicks.yaml").write_text(CLICKS, encoding="utf-8")
    pytester.makepyfile(test_fixture_use=FIXTURE_TESTS)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=10)


def test_the_simulation_fixtures_module_is_registered(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        test_plugins="""
        def test_registered(pytestconfig):
            import pytest_loopguard.pytest._fixtures, pytest_loopguard.pytest._sim_fixtures
            pm = pytestconfig.pluginmanager
            assert pm.get_plugin("loopguard-sim") is pytest_loopguard.pytest._sim_fixtures
            assert pm.get_plugin("loopguard-fixtures") is pytest_loopguard.pytest._fixtures
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_every_fixture_is_listed(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("--fixtures")
    for name in ("loopguard", "trace_builder", "fake_llm", "fake_browser", "fake_files", "agent_loop"):
        result.stdout.fnmatch_lines([f"{name} -- *"])


def test_a_failing_assert_ok_shows_the_callers_line_and_the_table_only(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_fails="""
        def test_clicks(trace_builder, loopguard):
            trace = trace_builder.tool("browser_click", index=3).repeat(4).build(name="t", strict=True)
            result = loopguard.replay(trace)
            loopguard.assert_ok(result)
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([">*loopguard.assert_ok(result)", "E*AssertionError: trace t under default: *"])
    text = result.stdout.str()
    assert "fixtures.py" not in text  # the library frame is hidden ...
    assert "ReplayResult(" not in text  # ... and with it the repr of the whole result
    assert "loop_guard.consecutive_block" in text


def test_tool_arguments_may_be_named_like_the_builders_own_parameters() -> None:
    from pytest_loopguard.pytest._fixtures import TraceBuilder

    trace = (TraceBuilder()
             .tool("create_file", name="a.txt", result="x")  # `name`, `result`: tool arguments, by keyword
             .tool("create_file", "created", name="b.txt")  # the result text, positionally
             .tool("schedule", args={"expect": "soon", "t": 5, "args": []}, expect="allow", t=1000)
             .build(name="named"))
    calls = [s.call for s in trace.steps if s.call is not None]
    assert [c.args for c in calls] == [{"name": "a.txt", "result": "x"}, {"name": "b.txt"},
                                       {"expect": "soon", "t": 5, "args": []}]
    assert trace.steps[1].result is not None and trace.steps[1].result.text == "created"
    assert trace.steps[2].expect is not None and trace.steps[2].t == 1000
