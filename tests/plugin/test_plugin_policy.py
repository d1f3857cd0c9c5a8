"""Which policy a trace replays under: `--loopguard-policy`, the `loopguard` marker, the trace's own."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

# Five identical clicks. Under `default` (warn 3 / block 5, warn_action warn): allow, allow, warn, warn, block.
# Under `spacebot` (= spacebot-worker: warn 4 / block 7, a warning skips the call): allow ×3, block ×2.
FIVE_CLICKS_DEFAULT = """\
loopguard: 1
name: clicks
policy: default
steps:
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}, expect: warn}
  - {tool: browser_click, args: {index: 4}, expect: warn}
  - {tool: browser_click, args: {index: 4}, expect: {action: block, reason: loop_guard.consecutive_block}}
expect: {outcome: incomplete, counts: {allow: 2, warn: 2, block: 1}}
"""

FIVE_CLICKS_SPACEBOT = """\
loopguard: 1
name: clicks-spacebot
policy: spacebot
strict: true
steps:
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}}
  - {tool: browser_click, args: {index: 4}, expect: {action: block, reason: loop_guard.consecutive_warning}}
  - {tool: browser_click, args: {index: 4}, expect: {action: block, reason: loop_guard.consecutive_warning}}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    (pytester.path / "traces" / "clicks.yaml").write_text(FIVE_CLICKS_DEFAULT, encoding="utf-8")
    (pytester.path / "traces" / "clicks_spacebot.yaml").write_text(FIVE_CLICKS_SPACEBOT, encoding="utf-8")
    return pytester


def test_traces_replay_under_their_own_policy_by_default(project: pytest.Pytester) -> None:
    project.runpytest().assert_outcomes(passed=2)


def test_the_policy_option_replaces_every_trace_policy(project: pytest.Pytester) -> None:
    result = project.runpytest("--loopguard-policy", "spacebot", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "traces/clicks.yaml::clicks FAILED*",
            "traces/clicks_spacebot.yaml::clicks-spacebot PASSED*",
            "*trace clicks under spacebot: incomplete: 6 mismatches*",
            ">*2*browser_click*warn*allow*",
            ">*3*browser_click*warn*block*loop_guard.consecutive_warning*",
        ]
    )


def test_the_policy_option_accepts_a_policy_file(project: pytest.Pytester) -> None:
    # A policy file that starts from default and warns on the 1st, blocks on the 2nd identical call.
    (project.path / "strict_policy.yaml").write_text(
        "preset: default\nloop_guard: {warn_at: 1, block_at: 2}\n", encoding="utf-8"
    )
    result = project.runpytest("--loopguard-policy", "strict_policy.yaml")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([">*0*browser_click*allow (strict)*warn*loop_guard.consecutive_warning*"])


def test_the_policy_option_accepts_an_inline_mapping(project: pytest.Pytester) -> None:
    # the form docs/trace-format.md shows for `policy:`, given on the command line
    result = project.runpytest("--loopguard-policy", "{preset: spacebot, loop_guard: {warn_at: 3}}", "-v")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*policy: {'preset': 'spacebot', 'loop_guard': {'warn_at': 3}}*",
                                 "*trace clicks under spacebot+overrides: *",
                                 ">*2*browser_click*warn*block*loop_guard.consecutive_warning*"])


def test_a_broken_inline_policy_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--loopguard-policy", "{preset: spacebot")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --loopguard-policy: policy: an inline policy is YAML*"])


MARKER_TESTS = """\
import pytest

CALLS = {"loopguard": 1, "name": "two-clicks", "policy": "default",
         "steps": [{"tool": "browser_click", "args": {"index": 1}}] * 2}


def actions(result):
    return [s.action for s in result.steps]


def test_trace_policy(loopguard):
    assert loopguard.policy is None
    assert actions(loopguard.replay(CALLS)) == ["allow", "allow"]


@pytest.mark.loopguard(loop_guard={"warn_at": 1, "block_at": 2})
def test_marker_overrides_on_the_trace_policy(loopguard):
    assert actions(loopguard.replay(CALLS)) == ["warn", "block"]
    assert loopguard.policy.settings("loop_guard").warn_at == 1


@pytest.mark.loopguard(policy="spacebot-channel")
def test_marker_policy(loopguard):
    # spacebot-channel: warn 2, block 4, a warning skips the call.
    assert actions(loopguard.replay(CALLS)) == ["allow", "block"]
    assert loopguard.policy.name == "spacebot-channel"


@pytest.mark.loopguard("spacebot-channel")
def test_marker_policy_given_positionally(loopguard):
    assert actions(loopguard.replay(CALLS)) == ["allow", "block"]


@pytest.mark.loopguard(policy="spacebot-channel")
def test_explicit_argument_beats_the_marker(loopguard):
    assert actions(loopguard.replay(CALLS, policy="default")) == ["allow", "allow"]
    assert actions(loopguard.replay(CALLS, policy="default", loop_guard={"warn_at": 2})) == ["allow", "warn"]


@pytest.mark.loopguard(policy="spacebot-channel", loop_guard={"warn_at": 1})
def test_explicit_argument_replaces_the_marker_and_its_overrides(loopguard):
    assert actions(loopguard.replay(CALLS, policy="default")) == ["allow", "allow"]


@pytest.mark.loopguard(loop_guard={"warn_at": 1})
def test_call_overrides_merge_with_the_marker(loopguard):
    assert actions(loopguard.replay(CALLS, loop_guard={"block_at": 2})) == ["warn", "block"]
"""


def test_marker_sets_the_fixture_policy(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_marker=MARKER_TESTS)
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=7)


OPTION_TESTS = """\
import pytest

CALLS = {"loopguard": 1, "name": "two-clicks", "policy": "default",
         "steps": [{"tool": "browser_click", "args": {"index": 1}}] * 2}


def test_option_policy(loopguard):
    assert loopguard.policy.name == "spacebot-channel"
    assert [s.action for s in loopguard.replay(CALLS).steps] == ["allow", "block"]


@pytest.mark.loopguard(policy="default")
def test_marker_beats_the_option(loopguard):
    assert [s.action for s in loopguard.replay(CALLS).steps] == ["allow", "allow"]
"""


def test_the_option_sets_the_fixture_policy_below_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_option=OPTION_TESTS)
    pytester.runpytest("--loopguard-policy", "spacebot-channel").assert_outcomes(passed=2)


def test_the_marker_is_registered(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.loopguard(policy=None, **overrides):*"])
