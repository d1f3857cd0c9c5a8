"""budget: the task envelope — no-op without a task, streaks, near, hard limits, domains, phases, events."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopguard import Guard, ToolCall, ToolResult, TraceError, Verdict, replay, resolve_policy
from pytest_loopguard.core._model import Task
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.engines.budget import Budget, Envelope, Settings
from pytest_loopguard.io._format import loads
from pytest_loopguard.runtime._guard import Clock, Decision

OK = ToolResult(text="ok")
FAILED = ToolResult.failure("Element not found")


TASK = Task("Buy the cheapest flight")


def budget_guard(task: Task | None = TASK, plugins: tuple[object, ...] = (), clock: Clock | None = None,
                 **settings: Any) -> Guard:
    """A Guard under `openchrome` (budget is its only engine) with setting overrides."""
    spec: dict[str, Any] = {"preset": "openchrome"}
    if settings:
        spec["budget"] = settings
    return Guard(resolve_policy(spec), task=task, clock=clock, plugins=plugins)


def task(**budget: Any) -> Task:
    return Task("Buy the cheapest flight", "explore", budget)


def call(g: Guard, tool: str, result: ToolResult = OK, **args: Any) -> Decision:
    c = ToolCall.of(tool, args)
    before = g.before_call(c, result)
    return g.after_call(c, result if before.runs else None, before)


def click(g: Guard, result: ToolResult = OK) -> Decision:
    return call(g, "click", result, index=3)


def snapshot(g: Guard) -> Decision:
    return call(g, "read_page")


def navigate(g: Guard, url: str = "https://shop.example.com/cart") -> Decision:
    return call(g, "navigate", url=url)


def envelope(g: Guard) -> Envelope:
    engine = g.run.engines["budget"]
    assert isinstance(engine, Budget)
    env = engine.envelope
    assert env is not None
    return env


def reasons(d: Decision) -> list[str]:
    return [v.reason for v in d.verdicts]


def verdict(d: Decision, reason: str) -> Verdict:
    found = [v for v in d.verdicts if v.reason == reason]
    assert len(found) == 1, d.verdicts
    return found[0]


# ---- no envelope -------------------------------------------------------------------------------------
def test_without_a_task_there_are_no_verdicts_at_all() -> None:
    g = budget_guard(task=None, max_tool_calls=1, allowed_domains=["example.com"], checkpoint_every_calls=1)
    for _ in range(30):
        assert click(g).verdicts == ()
        assert snapshot(g).verdicts == ()
        assert call(g, "type", FAILED).verdicts == ()
        assert navigate(g, "https://elsewhere.org/").verdicts == ()
    g.phase("verify")
    budget = g.run.engines["budget"]
    assert isinstance(budget, Budget) and budget.envelope is None


NO_TASK_TRACE = """
loopguard: 1
name: budget-unit-no-task
steps:
""" + "".join(
    "  - {tool: navigate, args: {url: 'https://a.example/'}}\n"
    "  - {tool: read_page}\n  - {tool: read_page}\n  - {tool: read_page}\n"
    "  - {tool: click, args: {index: 1}, result: {error: boom}}\n"
    for _ in range(6)
)


def test_without_a_task_outputs_are_byte_identical_to_a_policy_without_budget() -> None:
    trace = loads(NO_TASK_TRACE)[0]
    for preset in ("openchrome", "default"):
        with_budget = replay(trace, resolve_policy({"preset": preset, "name": "p"})).to_dict()
        without = replay(trace, resolve_policy({"preset": preset, "name": "p", "budget": False})).to_dict()
        assert json.dumps(with_budget, sort_keys=True) == json.dumps(without, sort_keys=True)


def test_with_a_task_the_same_trace_is_judged() -> None:
    trace = loads(NO_TASK_TRACE.replace("steps:", "task: {objective: shop}\nsteps:"))[0]
    result = replay(trace, "openchrome")
    assert any(v.engine == "budget" for s in result.steps for v in s.verdicts)


# ---- soft streaks ------------------------------------------------------------------------------------
def test_same_tool_streak_near_at_4_exceeded_from_the_6th() -> None:
    g = budget_guard()
    decisions = [click(g) for _ in range(7)]
    assert [d.action for d in decisions] == ["allow"] * 5 + ["warn", "warn"]
    assert [reasons(d) for d in decisions[:5]] == [[], [], [], ["budget.near"], []]
    near = verdict(decisions[3], "budget.near")
    assert near.action == "allow"
    assert near.data["budget"] == "consecutive_same_tool" and near.data["budget_status"] == "near"
    exceeded = verdict(decisions[5], "budget.consecutive_same_tool")
    assert exceeded.data["budget_status"] == "exceeded"
    assert exceeded.data["recommended_next"] == "change_strategy"
    assert (exceeded.data["count"], exceeded.data["limit"]) == (6, 5)


def test_same_tool_streak_counts_the_tool_whatever_its_arguments() -> None:
    g = budget_guard()
    for i in range(5):
        call(g, "click", index=i)
    assert call(g, "click", index=99).action == "warn"


def test_same_tool_streak_ends_at_another_tool_or_an_observation() -> None:
    g = budget_guard()
    for _ in range(5):
        click(g)
    call(g, "type", text="x")
    assert [click(g).action for _ in range(5)] == ["allow"] * 5
    snapshot(g)
    assert [click(g).action for _ in range(5)] == ["allow"] * 5
    assert click(g).action == "warn"


def test_observation_streak_any_observation_tool_near_at_5_exceeded_from_the_7th() -> None:
    g = budget_guard()
    tools = ["read_page", "find", "tabs_context", "page_screenshot", "read_page", "find", "read_page"]
    decisions = [call(g, t) if t != "computer" else None for t in tools]
    assert [d.action for d in decisions if d] == ["allow"] * 6 + ["warn"]
    assert reasons(decisions[4]) == ["budget.near"]  # ceil(0.8 × 6) = 5
    exceeded = verdict(decisions[6], "budget.observation_streak")
    assert exceeded.data["budget_status"] == "exceeded"
    assert exceeded.data["recommended_next"] == "change_strategy_or_verify"


def test_computer_screenshot_is_an_observation_and_other_computer_actions_are_not() -> None:
    g = budget_guard()
    for _ in range(6):
        call(g, "computer", action="screenshot")
    assert reasons(call(g, "computer", action="screenshot")) == ["budget.observation_streak"]
    assert call(g, "computer", action="left_click").action == "allow"  # an action ends the streak
    assert envelope(g).counters["observation_streak"] == 0


def test_an_action_ends_the_observation_streak() -> None:
    g = budget_guard()
    for _ in range(6):
        snapshot(g)
    click(g)
    assert [snapshot(g).action for _ in range(6)] == ["allow"] * 6


def test_failure_streak_near_at_4_exceeded_from_the_5th_and_ends_at_a_success() -> None:
    g = budget_guard(max_consecutive_same_tool=None)
    decisions = [click(g, FAILED) for _ in range(5)]
    assert [d.action for d in decisions] == ["allow"] * 4 + ["warn"]
    assert reasons(decisions[3]) == ["budget.near"]  # ceil(0.8 × 4) = 4
    exceeded = verdict(decisions[4], "budget.failure_streak")
    assert exceeded.data["recommended_next"] == "recover"
    click(g, OK)
    assert [click(g, FAILED).action for _ in range(4)] == ["allow"] * 4


def test_blocked_calls_neither_extend_nor_end_the_failure_streak() -> None:
    class BlockType:
        @hookimpl
        def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
            return Verdict("test", "block", "test.block") if call.tool == "type" else None

    g = budget_guard(plugins=(BlockType(),), max_consecutive_same_tool=None)
    for _ in range(4):
        click(g, FAILED)
        call(g, "type", OK)  # blocked: its recorded success is never seen
    assert envelope(g).counters["failure_streak"] == 4
    assert reasons(click(g, FAILED)) == ["budget.failure_streak"]


def test_same_url_navigations_per_url_for_the_whole_task() -> None:
    g = budget_guard(max_consecutive_same_tool=None)
    decisions = []
    for _ in range(4):
        decisions.append(navigate(g, "https://a.example/"))
        navigate(g, "https://b.example/")
        click(g)  # other calls do not reset a URL's count
    assert [d.action for d in decisions] == ["allow", "allow", "allow", "warn"]
    assert reasons(decisions[2]) == ["budget.near"]  # ceil(0.8 × 3) = 3
    exceeded = verdict(decisions[3], "budget.same_url_navigations")
    assert exceeded.data["recommended_next"] == "change_strategy"
    assert exceeded.data["url"] == "https://a.example/"
    assert envelope(g).counters["navigations"] == {"https://a.example/": 4, "https://b.example/": 4}


def test_a_navigation_without_a_url_counts_as_an_action_only() -> None:
    g = budget_guard()
    for _ in range(4):
        call(g, "navigate")
    assert envelope(g).counters["navigations"] == {}


def test_url_argument_name_is_a_setting() -> None:
    g = budget_guard(url_arg="href", max_consecutive_same_tool=None)
    for _ in range(3):
        call(g, "navigate", href="https://a.example/")
    assert reasons(call(g, "navigate", href="https://a.example/")) == ["budget.same_url_navigations"]


def test_task_budget_overrides_settings_and_null_disables_a_limit() -> None:
    g = budget_guard(task=task(max_consecutive_same_tool=None, max_observation_streak=2))
    assert [click(g).action for _ in range(20)] == ["allow"] * 20
    assert [snapshot(g).action for _ in range(3)] == ["allow", "allow", "warn"]
    assert envelope(g).limits.max_observation_streak == 2


# ---- near ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("limit", "near"), [(1, 1), (3, 3), (5, 4), (6, 5), (10, 8), (15, 12), (20, 16)])
def test_near_at_ceil_80_percent(limit: int, near: int) -> None:
    g = budget_guard(task=task(max_consecutive_same_tool=limit))
    actions = [reasons(click(g)) for _ in range(limit)]
    assert [i + 1 for i, r in enumerate(actions) if r == ["budget.near"]] == [near]


def test_near_ratio_is_a_setting() -> None:
    g = budget_guard(near_ratio=0.5, max_consecutive_same_tool=10)
    assert [i + 1 for i in range(10) if reasons(click(g)) == ["budget.near"]] == [5]


def test_near_threshold_is_not_pushed_up_by_float_error() -> None:
    # 0.28 × 25 is 7.000000000000001 in floats; the threshold is still 7
    g = budget_guard(near_ratio=0.28, max_consecutive_same_tool=25)
    assert [i + 1 for i in range(25) if reasons(click(g)) == ["budget.near"]] == [7]


def test_near_is_once_per_streak() -> None:
    g = budget_guard()
    first = [reasons(click(g)) for _ in range(5)]
    call(g, "type", text="x")
    second = [reasons(click(g)) for _ in range(5)]
    assert first.count(["budget.near"]) == 1 and second.count(["budget.near"]) == 1


# ---- hard limits -----------------------------------------------------------------------------------------
def test_max_tool_calls_blocks_beyond_the_limit_counting_blocked_calls() -> None:
    g = budget_guard(task=task(max_tool_calls=5, max_consecutive_same_tool=None))
    decisions = [click(g) for _ in range(7)]
    assert [d.action for d in decisions] == ["allow"] * 5 + ["block", "block"]
    assert reasons(decisions[3]) == ["budget.near"]
    block = verdict(decisions[5], "budget.max_tool_calls")
    assert block.data["recommended_next"] == "finish" and block.data["budget_status"] == "exceeded"
    assert envelope(g).counters["calls"] == 7


def test_max_wall_ms_on_the_run_clock() -> None:
    clock = Clock()
    g = budget_guard(task=task(max_wall_ms=10_000), clock=clock)
    got = []
    for t in (0, 5_000, 8_000, 9_000, 10_000, 10_001, 20_000):
        clock.set(t)
        got.append((call(g, "type", text=str(t)), call(g, "read_page")))
    assert [(a.action, b.action) for a, b in got] == [("allow", "allow")] * 5 + [("block", "block")] * 2
    # near once, on the first call at ceil(0.8 × 10 000) ms
    assert [(reasons(a), reasons(b)) for a, b in got][:5] == [([], [])] * 2 + [(["budget.near"], [])] + [([], [])] * 2
    assert envelope(g).counters["wall_ms"] == 20_000


def test_max_wall_ms_verdict_data() -> None:
    clock = Clock()
    g = budget_guard(task=task(max_wall_ms=100), clock=clock)
    clock.set(101)
    block = verdict(click(g), "budget.max_wall_ms")
    assert block.action == "block" and block.data["recommended_next"] == "finish"
    assert (block.data["count"], block.data["limit"]) == (101, 100)


@pytest.mark.parametrize(("url", "allowed"), [
    ("https://example.com/a", True),
    ("https://shop.example.com/a", True),
    ("https://EXAMPLE.com", True),
    ("example.com/path", True),
    ("https://docs.python.org/3/", True),
    ("https://notexample.com/", False),
    ("https://example.com.evil.net/", False),
    ("https://evil.net/?r=example.com", False),
    ("about:blank", False),
])
def test_allowed_domains_host_or_subdomain(url: str, allowed: bool) -> None:
    g = budget_guard(task=task(allowed_domains=("example.com", "python.org")))
    d = navigate(g, url)
    assert d.action == ("allow" if allowed else "block")
    if not allowed:
        v = verdict(d, "budget.domain_not_allowed")
        assert v.data["budget_status"] == "exceeded" and "recommended_next" in v.data


def test_hard_limits_off_by_default_in_openchrome() -> None:
    g = budget_guard()
    decisions = []
    for i in range(50):
        decisions.append(call(g, "type", text=str(i)))
        decisions.append(navigate(g, f"https://site{i}.org/"))
    assert [reasons(d) for d in decisions] == [[]] * 100


# ---- checkpoint ----------------------------------------------------------------------------------------
def test_checkpoint_every_n_calls() -> None:
    g = budget_guard(task=task(checkpoint_every_calls=3))
    marks = [i + 1 for i in range(10) if "budget.checkpoint" in reasons(call(g, "type", text=str(i)))]
    assert marks == [3, 6, 9]


def test_checkpoint_verdict_is_allow_with_recommended_checkpoint() -> None:
    g = budget_guard(task=task(checkpoint_every_calls=1))
    d = call(g, "type", text="x")
    v = verdict(d, "budget.checkpoint")
    assert (d.action, v.action, v.data["recommended_next"]) == ("allow", "allow", "checkpoint")
    assert v.data["budget_status"] == "ok"
    assert "Buy the cheapest flight" in v.message


# ---- phases and the envelope -------------------------------------------------------------------------
def test_phase_done_closes_the_envelope() -> None:
    g = budget_guard()
    g.phase("act")
    g.phase("done")
    assert [click(g).action for _ in range(10)] == ["allow"] * 10
    assert all(not reasons(click(g)) for _ in range(10))
    env = envelope(g)
    assert (env.open, env.phase, env.counters["calls"]) == (False, "done", 0)


def test_a_task_that_starts_done_is_closed() -> None:
    g = budget_guard(task=Task("x", "done"))
    assert all(not reasons(click(g)) for _ in range(10))


def test_phases_change_the_envelope_and_are_events() -> None:
    g = budget_guard()
    assert envelope(g).phase == "explore"
    g.phase("act")
    assert envelope(g).phase == "act"
    events = envelope(g).recent_events
    assert [(e.kind, e.detail["from"], e.detail["to"]) for e in events] == [("phase", "explore", "act")]
    d = [click(g) for _ in range(6)][-1]
    assert verdict(d, "budget.consecutive_same_tool").data["phase"] == "act"


def test_counters_separate_action_and_observation_calls() -> None:
    g = budget_guard()
    for _ in range(3):
        snapshot(g)
        click(g, FAILED)
        navigate(g)
    c = envelope(g).counters
    assert (c["calls"], c["action_calls"], c["observation_calls"], c["failures"]) == (9, 6, 3, 3)
    assert envelope(g).objective == "Buy the cheapest flight"


def test_recent_events_keep_the_last_ten_meaningful_ones() -> None:
    g = budget_guard(max_consecutive_same_tool=None)
    g.phase("act")
    click(g)  # a plain allow: not an event
    navigate(g, "https://a.example/1")
    click(g, FAILED)
    kinds = [e.kind for e in envelope(g).recent_events]
    assert kinds == ["phase", "navigation", "failure"]
    for i in range(12):
        navigate(g, f"https://a.example/{i + 2}")
    events = envelope(g).recent_events
    assert len(events) == 10
    assert [e.detail["url"] for e in events] == [f"https://a.example/{i}" for i in range(4, 14)]


def test_verdicts_other_than_plain_allow_are_events() -> None:
    g = budget_guard()
    for _ in range(6):
        click(g)
    events = envelope(g).recent_events
    assert [(e.kind, e.detail["reason"], e.call) for e in events] == [
        ("verdict", "budget.near", 4), ("verdict", "budget.consecutive_same_tool", 6)]


def test_recent_events_size_is_a_setting() -> None:
    g = budget_guard(recent_events=2, max_consecutive_same_tool=None)
    for i in range(5):
        navigate(g, f"https://a.example/{i}")
    assert len(envelope(g).recent_events) == 2


def test_envelope_budget_status() -> None:
    g = budget_guard()
    assert envelope(g).budget_status == "ok"
    for _ in range(4):
        click(g)
    assert envelope(g).budget_status == "near"
    for _ in range(2):
        click(g)
    assert envelope(g).budget_status == "exceeded"
    call(g, "type", text="x")
    assert envelope(g).budget_status == "ok"


def test_envelope_is_read_only() -> None:
    g = budget_guard()
    env = envelope(g)
    with pytest.raises(AttributeError):
        env.phase = "act"  # type: ignore[misc]
    with pytest.raises(TypeError):
        env.counters["calls"] = 5  # type: ignore[index]
    budget = g.run.engines["budget"]
    with pytest.raises(AttributeError):
        budget.envelope = None  # type: ignore[misc]


def test_every_budget_verdict_carries_status_and_recommended_next() -> None:
    clock = Clock()
    g = budget_guard(task=task(max_tool_calls=30, max_wall_ms=1000, allowed_domains=("a.example",),
                               checkpoint_every_calls=2), clock=clock)
    seen: list[Verdict] = []
    decisions = [click(g, FAILED) for _ in range(6)]
    decisions += [snapshot(g) for _ in range(7)]
    decisions += [navigate(g, "https://b.example/") for _ in range(4)]
    for i in range(20):
        clock.set(i * 100)
        decisions.append(call(g, "type", text=str(i)))
    for d in decisions:
        seen.extend(d.verdicts)
    assert {v.reason for v in seen} >= {"budget.near", "budget.consecutive_same_tool", "budget.failure_streak",
                                        "budget.same_url_navigations", "budget.max_tool_calls",
                                        "budget.max_wall_ms", "budget.domain_not_allowed", "budget.checkpoint"}
    for v in seen:
        assert v.engine == "budget"
        assert v.data["budget_status"] in ("ok", "near", "exceeded")
        assert isinstance(v.data["recommended_next"], str) and v.data["recommended_next"]


# ---- presets and trace input ----------------------------------------------------------------------------
def test_openchrome_preset_follows_presets_md() -> None:
    policy = resolve_policy("openchrome")
    assert list(policy.engines) == ["budget"]
    s = policy.settings("budget")
    assert (s.max_consecutive_same_tool, s.max_observation_streak, s.max_failure_streak,
            s.max_same_url_navigations) == (5, 6, 4, 3)
    assert (s.max_tool_calls, s.max_wall_ms, s.allowed_domains, s.checkpoint_every_calls) == (None,) * 4
    kinds = {t: policy.classifier.kind(ToolCall.of(t)) for t in
             ("read_page", "find", "tabs_context", "page_screenshot", "navigate", "click", "javascript_tool")}
    assert kinds == {"read_page": "observation", "find": "observation", "tabs_context": "observation",
                     "page_screenshot": "observation", "navigate": "navigation", "click": "action",
                     "javascript_tool": "action"}
    assert policy.classifier.kind(ToolCall.of("computer", {"action": "screenshot"})) == "observation"
    assert policy.classifier.kind(ToolCall.of("computer", {"action": "type"})) == "action"


def test_default_preset_has_the_envelope_defaults() -> None:
    exempt = resolve_policy("default").settings("budget").same_tool_exempt
    assert resolve_policy("default").settings("budget") == Settings(same_tool_exempt=exempt)


@pytest.mark.parametrize(("budget", "field"), [
    ("{max_tool_calls: -1}", "task.budget.max_tool_calls"),
    ("{max_wall_ms: 1.5}", "task.budget.max_wall_ms"),
    ("{max_observation_streak: six}", "task.budget.max_observation_streak"),
    ("{max_failure_streak: true}", "task.budget.max_failure_streak"),
    ("{checkpoint_every_calls: 0}", "task.budget.checkpoint_every_calls"),
    ("{allowed_domains: example.com}", "task.budget.allowed_domains"),
    ("{max_same_url: 3}", "task.budget.max_same_url"),
])
def test_bad_task_budget_is_rejected_naming_the_field(budget: str, field: str) -> None:
    text = f"loopguard: 1\nname: bad\ntask: {{objective: x, budget: {budget}}}\nsteps: []\n"
    with pytest.raises(TraceError) as info:
        loads(text)
    assert info.value.field == field
    assert field in str(info.value)


# ---- property: no envelope, no change ------------------------------------------------------------------
STEP = st.sampled_from([
    "  - {tool: click, args: {index: 1}}\n",
    "  - {tool: read_page}\n",
    "  - {tool: computer, args: {action: screenshot}}\n",
    "  - {tool: navigate, args: {url: 'https://a.example/'}}\n",
    "  - {tool: navigate, args: {url: 'https://evil.test/'}}\n",
    "  - {tool: type, args: {text: x}, result: {error: boom}}\n",
    "  - {tool: read_file, args: {path: a.py}}\n",
    "  - {phase: act}\n",
    "  - {llm: {output_tokens: 5}}\n",
])


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=40), preset=st.sampled_from(["openchrome", "default"]))
def test_without_a_task_any_trace_replays_as_without_budget(steps: list[str], preset: str) -> None:
    trace = loads("loopguard: 1\nname: p\nsteps:\n" + "".join(steps))[0]
    with_budget = replay(trace, resolve_policy({"preset": preset, "name": "p",
                                                "budget": {"max_tool_calls": 0, "checkpoint_every_calls": 1,
                                                           "allowed_domains": ["a.example"]}}))
    without = replay(trace, resolve_policy({"preset": preset, "name": "p", "budget": False}))
    assert json.dumps(with_budget.to_dict(), sort_keys=True) == json.dumps(without.to_dict(), sort_keys=True)


# ---- generic shell tools (default) -------------------------------------------------------------------
def test_exempt_shell_tools_never_build_a_same_tool_streak() -> None:
    g = budget_guard(same_tool_exempt=("bash",))
    decisions = [call(g, "bash", command=f"sed -n '{i},{i + 9}p' a.py") for i in range(12)]
    assert [d.action for d in decisions] == ["allow"] * 12 and all(not d.verdicts for d in decisions)
    # a shell call ends another tool's streak, as any other tool does
    for _ in range(5):
        click(g)
    call(g, "bash", command="ls")
    assert [click(g).action for _ in range(6)] == ["allow"] * 5 + ["warn"]


def test_default_exempts_bash_and_openchrome_does_not() -> None:
    assert "bash" in resolve_policy("default").settings("budget").same_tool_exempt
    assert resolve_policy("openchrome").settings("budget").same_tool_exempt == ()
    g = budget_guard()
    assert [call(g, "bash", command="ls").action for _ in range(6)] == ["allow"] * 5 + ["warn"]
