"""The Guard (runtime/_guard.py): fresh engines per run, plugins through pluggy, decisions, the clock, turns."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pytest

from pytest_loopguard import Clock, Decision, Guard, ToolCall, ToolResult, Verdict, resolve_policy
from pytest_loopguard.core._classify import ToolRule
from pytest_loopguard.core._conversation import Entry, PromptView
from pytest_loopguard.core._model import LLMCall, Message
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.engines.base import Engine, EngineSettings, register_engine
from pytest_loopguard.runtime._guard import Turn
from pytest_loopguard.runtime._policy import Policy

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
    a, b = Guard(policy, keep_transcript=True), Guard(policy, keep_transcript=True)
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
                  plugins=[Watch()], keep_transcript=True)
    d = call_through(guard, CLICK, ToolResult(text="recorded"))
    assert d.action == "block" and seen == [(None, True)]
    assert guard.run.transcript.entries[-1].text.startswith("Error: Blocked")


def test_without_keep_transcript_the_guard_keeps_no_history_nobody_reads() -> None:
    # loop_guard alone never reads the prompt view: nothing is kept however long the run
    only_loops = resolve_policy({"preset": "default", "loop_guard": {"warn_at": 2, "block_at": 9}, "context": None,
                                 "dedup": None, "read_tracker": None, "failure_tracker": None, "budget": None})
    assert list(only_loops.engines) == ["loop_guard"]
    guard = Guard(only_loops)
    guard.message(Message("user", "Fix the tests"))
    decisions = [call_through(guard, CLICK, ToolResult(text="clicked")) for _ in range(3)]
    assert [d.action for d in decisions] == ["allow", "warn", "warn"]
    assert len(guard.run.transcript) == 0 and len(guard.run.view) == 0
    # what the agent is shown of the last call is still there: the result and the warning after it
    assert guard.shown.startswith("clicked\n\n") and decisions[-1].message in guard.shown
    # the context engine reads the view, so under `default` the view is kept (and the transcript is not)
    guard = Guard(resolve_policy("default"))
    call_through(guard, CLICK, ToolResult(text="clicked"))
    assert [e.role for e in guard.run.view.entries] == ["assistant", "tool"] and len(guard.run.transcript) == 0


def test_a_long_live_run_under_default_holds_a_bounded_view_and_no_transcript() -> None:
    # issue 11: a live Guard kept 40,000 entries after 20,000 calls. Under `default` the context engine reads
    # the view and compacts it at its threshold, so the view stays within the window whatever the run's length
    guard = Guard(resolve_policy("default"), context={"window_tokens": 4000})
    largest = compactions = 0
    for i in range(5_000):  # 10,000 entries if nothing bounded the view
        guard.end_turn()
        llm = LLMCall(output_tokens=10)
        compactions += sum(v.reason == "context.compact" for v in guard.before_llm(llm).verdicts)
        largest = max(largest, guard.run.view.size())
        call = ToolCall.of("read_file", {"path": f"src/m{i}.py"})  # every call new: no engine stops the run
        guard.start_turn([call], llm)
        before = guard.before_call(call)
        guard.after_call(call, ToolResult(text="x", tokens=30) if before.runs else None, before)
    assert compactions > 25
    assert largest < 200  # entries of at least 10 tokens below a 3,200-token threshold, and the summary
    assert len(guard.run.transcript) == 0


def test_a_call_warned_twice_shows_the_result_a_blank_line_then_the_warnings_one_per_line() -> None:
    # default: the 3rd identical read warns twice, from loop_guard and from read_tracker
    guard = Guard(resolve_policy("default"), keep_transcript=True)
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
    guard = Guard(resolve_policy("default"), context={"window_tokens": 1000}, keep_transcript=True)
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


def test_a_wrapper_gets_and_may_change_the_engines_answers() -> None:
    # pluggy's caller runs a wrapped event: the wrapper sees what the engines returned and its answer counts
    seen: list[list[str]] = []

    class Silencer:
        @hookimpl(wrapper=True)
        def loopguard_before_call(self, call: ToolCall) -> Any:
            inner = yield
            seen.append([v.reason for v in inner if isinstance(v, Verdict)])
            return []

    policy = resolve_policy({"preset": "default", "loop_guard": {"warn_at": 1, "block_at": 9}})
    assert call_through(Guard(policy), CLICK).action == "warn"
    assert call_through(Guard(policy, plugins=[Silencer()]), CLICK).action == "allow"
    assert seen == [["loop_guard.consecutive_warning"]]


class _Fresh(Engine):
    """An engine class no Guard has read yet."""

    name = "test_fresh"

    @hookimpl
    def loopguard_before_call(self, call: ToolCall) -> None:
        return None


def test_an_engine_class_is_read_once_and_a_guard_without_plugins_builds_no_plugin_manager(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_loopguard.runtime import _dispatch

    read: list[type] = []
    real = _dispatch.read_impls
    monkeypatch.setattr(_dispatch, "read_impls", lambda cls: read.append(cls) or real(cls))
    register_engine(_Fresh)
    guards = [Guard(Policy(f"fresh-{i}", {"test_fresh": EngineSettings()})) for i in range(3)]  # three plans
    assert read == [_Fresh]  # per class, not per policy or per Guard
    assert all(g._pm is None for g in guards)
    assert [f for f, _how in guards[0]._before_call] == [guards[0].run.engines["test_fresh"].loopguard_before_call]
    assert guards[0].pm is not None and guards[0]._pm is not None  # built on first use


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


def test_view_entries_are_built_when_read_in_the_order_the_events_came() -> None:
    # the Guard records a small record per event and builds entries when the view or transcript is read:
    # they must come out as an eager Guard would have built them, whenever and however often they are read
    guard = Guard(resolve_policy({"preset": "default", "loop_guard": {"warn_at": 2, "block_at": 3}}),
                  keep_transcript=True)
    guard.message(Message("user", "Fix the tests"))
    shown: list[str] = []
    for i in range(2):
        guard.end_turn()
        guard.start_turn([CLICK], LLMCall(output_tokens=5, text=f"Clicking {i}."))
        before = guard.before_call(CLICK)
        guard.after_call(CLICK, ToolResult(text="clicked", tokens=3), before)
        shown.append(guard.shown)
    first_read = list(guard.run.view.entries)  # read once in the middle ...
    call_through(guard, CLICK, ToolResult(text="clicked"))  # ... then blocked at the 3rd identical click
    shown.append(guard.shown)
    view, transcript = guard.run.view.entries, guard.run.transcript.entries
    assert view[: len(first_read)] == first_read and all(a is b for a, b in zip(view, first_read, strict=False))
    assert [(e.role, e.text, e.tokens, e.turn) for e in view] == [
        ("user", "Fix the tests", None, None),
        ("assistant", 'Clicking 0.\nbrowser_click({"index":3})', 5, 0), ("tool", shown[0], 3, 0),
        ("assistant", 'Clicking 1.\nbrowser_click({"index":3})', 5, 1), ("tool", shown[1], 3, 1),
        ("assistant", 'browser_click({"index":3})', None, 2), ("tool", shown[2], None, 2),
    ]
    assert shown[0] == "clicked" and shown[1].startswith("clicked\n\n") and shown[2].startswith("Error: ")
    assert [e.call_id for e in view if e.role == "tool"] == [0, 1, 2]
    assert all(a is b for a, b in zip(view, transcript, strict=True))  # one entry, kept in both
    assert guard.run.view.tokens() == sum(guard.run.view.entry_tokens(e) for e in view)


def test_a_compaction_replaces_the_entries_recorded_before_it() -> None:
    # an engine that swaps the view without reading it first still sees what came before: the records
    # pending at the swap are built into the list being replaced, and later ones follow the new list
    guard = Guard(resolve_policy("default"), keep_transcript=True)
    call_through(guard, CLICK)
    summary = Entry("summary", "2 earlier messages", replaced=True)
    guard.run.view.replace_entries([summary])
    call_through(guard, CLICK)
    assert [e.role for e in guard.run.view.entries] == ["summary", "assistant", "tool"]
    assert [e.role for e in guard.run.transcript.entries] == ["assistant", "tool", "assistant", "tool"]


def _polling_run(read_each_step: bool) -> tuple[Guard, list[tuple[Any, ...]]]:
    """A view-only Guard (`default`: dedup and context read the view) through turns of polling calls,
    noting after each model call what the view answers; optionally reading its entries after every event."""
    guard = Guard(resolve_policy("default"))
    view = guard.run.view
    seen: list[tuple[Any, ...]] = []
    guard.message(Message("user", "Watch the page"))
    for i in range(4):
        snap, click = ToolCall.of("browser_snapshot", {"i": i % 2}), ToolCall.of("browser_click", {"index": i})
        decision = guard.before_llm(LLMCall(input_tokens=10 * i, output_tokens=None if i % 2 else 7))
        seen.append((view.size(), view.tokens(), view.tool_results(0, frozenset({"browser_snapshot"})), decision,
                     view.tool_results(max(0, view.size() - 3), frozenset({"browser_snapshot", "browser_click"}))))
        guard.end_turn()
        guard.start_turn([snap, click])
        for call, result in ((snap, ToolResult(text="x" * (40 + i))), (click, ToolResult(text="ok", tokens=2))):
            before = guard.before_call(call)
            guard.after_call(call, result if before.runs else None, before)
            if read_each_step:
                assert len(view.entries) == view.size()
    decision = guard.before_llm(LLMCall())
    seen.append((view.size(), view.tokens(), view.tool_results(0, frozenset({"browser_snapshot"})), decision))
    return guard, seen


def test_the_view_answers_size_tokens_and_polling_results_without_building_entries() -> None:
    # the records answer as the built entries would, dedup swaps a recorded result in place, and nothing
    # is built until something reads the entries
    lazy, lazy_seen = _polling_run(read_each_step=False)
    eager, eager_seen = _polling_run(read_each_step=True)
    view = lazy.run.view
    assert view.deferred is not None and len(view.deferred.records) == view.size() == 13  # none built yet
    assert lazy_seen == eager_seen
    assert lazy_seen[2][4] == [(5, "browser_snapshot"), (6, "browser_click")]
    superseded = {"replaced": 1, "tools": ["browser_snapshot"]}
    assert [s[3].verdicts[0].data for s in lazy_seen if s[3].verdicts] == [superseded] * 3
    placeholder = "[browser_snapshot output superseded by a later call]"
    built = view.entries
    assert [e.text for e in built if e.tool == "browser_snapshot"] == [placeholder] * 3 + ["x" * 43]
    assert built == eager.run.view.entries
    assert view.tokens() == sum(view.entry_tokens(e) for e in built) == eager.run.view.tokens()


class Shapes(Engine):
    """Hook implementations taking every shape of argument list the Guard calls directly or wraps."""

    name = "test_shapes"
    seen: ClassVar[list[tuple[Any, ...]]] = []

    @hookimpl
    def loopguard_turn_start(self) -> None:  # none of the arguments
        self.seen.append(("turn_start",))

    @hookimpl
    def loopguard_before_call(self, call: ToolCall) -> None:  # the first only
        self.seen.append(("before_call", call.tool))

    @hookimpl
    def loopguard_after_call(self, result: ToolResult | None, blocked: bool) -> Verdict:  # a later pair
        self.seen.append(("after_call", result.text if result else None, blocked))
        return Verdict(self.name, "warn", "test_shapes.after", "seen")

    @hookimpl
    def loopguard_before_llm(self, view: PromptView) -> list[Verdict | None]:  # the second only
        self.seen.append(("before_llm", type(view).__name__))
        return [None, Verdict(self.name, "allow", "test_shapes.llm")]

    @hookimpl
    def loopguard_llm_result(self, llm: LLMCall, view: PromptView) -> None:  # all, in order
        self.seen.append(("llm_result", llm.output_tokens, len(view)))


def test_engine_hooks_get_the_arguments_they_ask_for_in_any_shape() -> None:
    register_engine(Shapes)
    Shapes.seen.clear()
    guard = Guard(Policy(name="shapes", engines={"test_shapes": EngineSettings()}))
    llm = guard.before_llm(LLMCall(output_tokens=4))
    guard.llm_result(LLMCall(output_tokens=4))
    d = call_through(guard, CLICK, ToolResult(text="ok"))
    assert [v.reason for v in llm.verdicts] == ["test_shapes.llm"] and d.action == "warn"
    assert Shapes.seen == [("before_llm", "PromptView"), ("llm_result", 4, 0), ("turn_start",),
                           ("before_call", "browser_click"), ("after_call", "ok", False)]


def _turn_start_owners(guard: Guard) -> list[str]:
    return [f.__qualname__.split(".")[0] for f, _how in guard._turn_start]


def test_hooks_idle_under_the_settings_are_left_out_of_the_event_table() -> None:
    from pytest_loopguard.engines.context import Context
    from pytest_loopguard.engines.failure_tracker import FailureTracker

    # default: no turn limit (context idle) but a turn-failure count (failure_tracker works at turn start)
    assert _turn_start_owners(Guard(resolve_policy("default"))) == ["FailureTracker"]
    # hermes-current counts neither steps nor failed turns: nothing is called when a turn starts
    assert _turn_start_owners(Guard(resolve_policy("hermes-current"))) == []
    limited = Policy("limited", {"context": Context.Settings(max_turns=2),
                                 "failure_tracker": FailureTracker.Settings(max_failures=None, max_steps=3)})
    guard = Guard(limited)
    assert _turn_start_owners(guard) == ["Context", "FailureTracker"]  # policy order
    actions = [guard.start_turn([ToolCall.of("t", {"i": i})]).action for i in range(4)]
    assert actions == ["allow", "allow", "stop", "stop"]


def test_a_plugin_guard_calls_idle_hooks_and_decides_the_same() -> None:
    class Watcher:
        @hookimpl
        def loopguard_turn_end(self, turn: Turn) -> None:
            return None

    policy = resolve_policy("default")
    plain, plugged = Guard(policy), Guard(policy, plugins=[Watcher()])
    # through pluggy every implementation is called, the idle ones included
    assert _turn_start_owners(plugged) == ["LoopGuard", "FailureTracker", "Context"]
    seen: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for name, guard in (("plain", plain), ("plugged", plugged)):
        out = seen[name] = []
        for i in range(8):
            call = ToolCall.of("read_file", {"path": "a.py"})
            out.append((guard.start_turn([call]).action, ()))
            before = guard.before_call(call)
            after = guard.after_call(call, ToolResult(text=f"x{i % 2}") if before.runs else None, before)
            out.append((after.action, tuple(v.reason for v in after.verdicts)))
            guard.end_turn()
    assert seen["plain"] == seen["plugged"]
    assert any(reasons for _action, reasons in seen["plain"])  # the sequence does meet the engines' rules


class _PerRun(Engine):
    """Idle at a turn's start unless the run's context asks for it: idle hooks may differ per run."""

    name = "test_per_run"
    version = "first"

    def idle_hooks(self) -> frozenset[str]:
        return frozenset() if self.run.trace_context.get("watch") else frozenset({"loopguard_turn_start"})

    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> Verdict:
        return Verdict(self.name, "warn", f"test_per_run.{self.version}", "turn")


def test_guards_of_one_policy_share_its_plan_but_not_per_run_answers() -> None:
    # the per-policy plan (engine classes, the event table's layout) is reused, yet a run whose engine
    # names other idle hooks gets its own table, and a class registered anew under the name is used
    register_engine(_PerRun)
    policy = Policy("per-run", {"test_per_run": EngineSettings()})
    quiet, watched = Guard(policy), Guard(policy, context={"watch": True})
    assert quiet.start_turn([CLICK]).action == "allow"
    assert [v.reason for v in watched.start_turn([CLICK]).verdicts] == ["test_per_run.first"]
    assert Guard(policy).start_turn([CLICK]).action == "allow"

    class _Replaced(_PerRun):
        version = "second"

    register_engine(_Replaced)
    try:
        again = Guard(policy, context={"watch": True})
        assert type(again.run.engines["test_per_run"]) is _Replaced
        assert [v.reason for v in again.start_turn([CLICK]).verdicts] == ["test_per_run.second"]
    finally:
        register_engine(_PerRun)


def test_settings_derived_once_are_shared_only_by_the_same_settings_object() -> None:
    from pytest_loopguard.engines.loop_guard import LoopGuard

    base = resolve_policy("default").engines["loop_guard"]
    other = dataclasses.replace(base, poll_words=("STATUS",))
    a, b = LoopGuard(base, Guard(resolve_policy("default")).run), LoopGuard(base, Guard(resolve_policy("roo")).run)
    c = LoopGuard(other, a.run)
    assert a._poll_words is b._poll_words  # one derived value for one settings object
    assert c._poll_words == ("status",) and a._poll_words != c._poll_words

