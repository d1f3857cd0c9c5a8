"""The Guard (runtime.py): fresh engines per run, plugins through pluggy, decisions, the clock, turns."""

from __future__ import annotations

from typing import Any

from pytest_loopguard import Clock, Decision, Guard, ToolCall, ToolResult, Verdict, resolve_policy
from pytest_loopguard.hookspecs import hookimpl
from pytest_loopguard.model import LLMCall, Message
from pytest_loopguard.runtime import Turn
from pytest_loopguard.tools import ToolRule

CLICK = ToolCall.of("browser_click", {"index": 3})


def call_through(guard: Guard, call: ToolCall, result: ToolResult | None = None) -> Decision:
    guard.end_turn()
    guard.start_turn([call])
    before = guard.before_call(call)
    return guard.after_call(call, (result or ToolResult()) if before.runs else None, before)


def test_each_guard_builds_its_own_engines() -> None:
    policy = resolve_policy("default")
    a, b = Guard(policy), Guard(policy)
    assert list(a.run.engines) == list(policy.engines)
    for name in policy.engines:
        assert a.run.engines[name] is not b.run.engines[name]
        assert a.run.engines[name].run is a.run and b.run.engines[name].run is b.run


def test_two_guards_share_no_state() -> None:
    # default: warn at the 3rd identical call, block at the 5th (PRESETS.md)
    policy = resolve_policy("default")
    a, b = Guard(policy), Guard(policy)
    got_a = [call_through(a, CLICK).action for _ in range(4)]
    # b has seen nothing: its first two calls are allowed whatever a did
    got_b = [call_through(b, CLICK).action for _ in range(2)]
    assert got_a == ["allow", "allow", "warn", "warn"]
    assert got_b == ["allow", "allow"]
    assert call_through(a, CLICK).action == "block"
    assert (a.run.calls, b.run.calls, a.run.turns, b.run.turns) == (5, 2, 5, 2)
    assert len(a.run.transcript) == 10 and len(b.run.transcript) == 4


class Tripwire:
    """A plugin engine: blocks `rm` calls, warns after a failed call, counts tokens by words."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []

    @hookimpl
    def loopguard_tool_rules(self) -> list[ToolRule]:
        return [ToolRule("browser_click", "observation")]

    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> None:
        self.turns.append(turn)

    @hookimpl
    def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
        if call.tool == "rm":
            return Verdict("tripwire", "block", "tripwire.rm", "Never delete.")
        return None

    @hookimpl
    def loopguard_after_call(self, result: ToolResult | None) -> list[Verdict]:  # a subset of the spec's args
        if result is not None and not result.ok:
            return [Verdict("tripwire", "warn", "tripwire.failed", "That failed.")]
        return []

    @hookimpl
    def loopguard_count_tokens(self, text: str) -> int:
        return len(text.split())


def test_plugins_join_the_run_through_hookimpls() -> None:
    plugin = Tripwire()
    guard = Guard(resolve_policy("default"), plugins=[plugin])
    blocked = call_through(guard, ToolCall.of("rm", {"path": "/"}))
    assert (blocked.action, blocked.runs, blocked.message) == ("block", False, "Never delete.")
    assert [v.reason for v in blocked.verdicts] == ["tripwire.rm"]
    failed = call_through(guard, ToolCall.of("shell"), ToolResult.failure("exit 1"))
    assert failed.action == "warn" and [v.reason for v in failed.verdicts] == ["tripwire.failed"]
    assert [t.calls[0].tool for t in plugin.turns] == ["rm", "shell"]
    # the plugin's rule is consulted before the policy's table, and its token counter is used
    assert guard.run.kind(CLICK) == "observation"
    assert guard.run.view.count_tokens("three words here") == 3


def test_plugin_state_is_per_guard_only_when_the_plugin_is() -> None:
    a, b = Tripwire(), Tripwire()
    call_through(Guard(resolve_policy("default"), plugins=[a]), CLICK)
    call_through(Guard(resolve_policy("default"), plugins=[b]), CLICK)
    assert len(a.turns) == len(b.turns) == 1


def test_a_hookimpl_may_take_none_of_the_arguments_and_engines_still_decide() -> None:
    order: list[str] = []

    class Probe:
        @hookimpl
        def loopguard_before_call(self) -> None:
            order.append("plugin")

    guard = Guard(resolve_policy({"preset": "default", "loop_guard": {"warn_at": 1, "block_at": 2}}),
                  plugins=[Probe()])
    guard.start_turn([CLICK])
    d = guard.before_call(CLICK)
    assert order == ["plugin"]
    assert [(v.engine, v.action) for v in d.verdicts] == [("loop_guard", "warn")]


def test_decision_runs_only_for_allow_and_warn() -> None:
    assert Decision("allow").runs and Decision("warn").runs
    assert not Decision("block").runs and not Decision("stop").runs


def test_decision_message_is_the_most_severe_verdicts() -> None:
    d = Decision("block", (Verdict("a", "warn", "a.w", "careful"), Verdict("b", "block", "b.b", "no")))
    assert d.message == "no"
    assert Decision("allow").message == ""


def test_blocked_call_reaches_after_call_as_blocked() -> None:
    seen: list[tuple[Any, bool]] = []

    class Watch:
        @hookimpl
        def loopguard_after_call(self, result: ToolResult | None, blocked: bool) -> None:
            seen.append((result, blocked))

    guard = Guard(resolve_policy({"preset": "default", "loop_guard": {"warn_at": 1, "block_at": 1}}),
                  plugins=[Watch()])
    d = call_through(guard, CLICK, ToolResult(text="recorded"))
    assert d.action == "block" and seen == [(None, True)]
    assert guard.run.transcript.entries[-1].text.startswith("Error: Blocked")


def test_a_call_warned_twice_shows_the_result_a_blank_line_then_the_warnings_one_per_line() -> None:
    # default: the 3rd identical read warns twice, from loop_guard and from read_tracker
    guard = Guard(resolve_policy("default"))
    read = ToolCall.of("read_file", {"path": "a.py"})
    for _ in range(3):
        d = call_through(guard, read, ToolResult(text="content"))
    warnings = [v for v in d.verdicts if v.action == "warn"]
    assert [v.engine for v in warnings] == ["loop_guard", "read_tracker"]
    result, _, shown = guard.run.transcript.entries[-1].text.partition("\n\n")
    assert (result, shown.splitlines()) == ("content", [warnings[0].message, warnings[1].message])


def test_clock_never_goes_back_and_advances_on_backoff() -> None:
    clock = Clock(100)
    clock.set(50)
    assert clock.now_ms == 100
    clock.set(250)
    clock.advance(1000)
    assert clock.now_ms == 1250


def test_transient_retry_advances_the_runs_virtual_clock() -> None:
    # default: transient retries back off 1 s, doubling (PRESETS.md)
    clock = Clock()
    guard = Guard(resolve_policy("default"), clock=clock)
    for expected in (1000, 3000, 7000):
        guard.before_llm(LLMCall(error="Error code: 503"))
        d = guard.llm_result(LLMCall(error="Error code: 503"))
        assert d.action == "retry" and clock.now_ms == expected


def test_messages_and_turns_enter_the_transcript_and_view() -> None:
    guard = Guard(resolve_policy("default"), context={"window_tokens": 1000})
    guard.message(Message("user", "Fix the tests"))
    guard.start_turn([CLICK], LLMCall(output_tokens=7, text="Clicking."))
    assert [(e.role, e.text, e.tokens) for e in guard.run.transcript] == [
        ("user", "Fix the tests", None),
        ("assistant", 'Clicking.\nbrowser_click({"index":3})', 7),
    ]
    assert guard.run.view.window_tokens == 1000
    assert guard.run.turn is not None and guard.run.turn.calls == (CLICK,)
    guard.end_turn()
    assert guard.run.turn is None


def test_verdicts_come_in_policy_order_and_tryfirst_plugins_go_first() -> None:
    order: list[str] = []

    class Early:
        @hookimpl(tryfirst=True)
        def loopguard_before_call(self) -> None:
            order.append("early")

    class Late:
        @hookimpl
        def loopguard_before_call(self) -> None:
            order.append("late")

    guard = Guard(resolve_policy({"preset": "default", "loop_guard": {"warn_at": 1, "block_at": 9}}),
                  plugins=[Early(), Late()])
    decision = call_through(guard, CLICK)
    assert order[0] == "early"
    assert decision.action == "warn" and decision.verdicts[0].engine == "loop_guard"


def test_a_wrapping_plugin_still_sees_every_call() -> None:
    seen: list[str] = []

    class Wrapper:
        @hookimpl(wrapper=True)
        def loopguard_before_call(self, call: ToolCall) -> Any:
            seen.append(call.tool)
            return (yield)

    guard = Guard(resolve_policy({"preset": "default", "loop_guard": {"warn_at": 1, "block_at": 9}}),
                  plugins=[Wrapper()])
    assert call_through(guard, CLICK).action == "warn"
    assert seen == ["browser_click"]


def test_a_plugin_registered_after_the_guard_is_built_is_called() -> None:
    seen: list[bool] = []

    class Recorder:
        @hookimpl
        def loopguard_after_call(self, blocked: bool) -> None:
            seen.append(blocked)

    guard = Guard(resolve_policy("default"))
    call_through(guard, CLICK)
    plugin = Recorder()
    guard.pm.register(plugin)
    call_through(guard, CLICK)
    guard.pm.unregister(plugin)
    call_through(guard, CLICK)
    assert seen == [False]
