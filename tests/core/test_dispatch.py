"""The Guard's own dispatch (runtime/_dispatch.py) calls exactly what plain pluggy would, under every preset.

Two Guards of one policy take the same generated events: one dispatches as it ships (a direct table of engine
methods without plugins, else a table read from pluggy's registry), the other calls every event through
pluggy's own `pm.hook.<event>(**arguments)`. A profiler notes every hook implementation either one calls,
with its arguments and its answer; the two lists must be equal, as must the verdicts each dispatch hands back
and every decision. The one difference allowed by design: the direct table leaves out the hooks an engine
names idle (`Engine.idle_hooks`), and pluggy's calls of those must all answer None.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopguard import Guard, ToolCall, ToolResult, Verdict, resolve_policy
from pytest_loopguard.core._conversation import PromptView
from pytest_loopguard.core._model import Done, LLMCall, Message, Rejected, Task
from pytest_loopguard.core._runcontext import RunContext, Turn
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.engines import Engine, EngineSettings, register_engine
from pytest_loopguard.runtime import _dispatch, _guard
from pytest_loopguard.runtime._policy import Policy, preset_names
from pytest_loopguard.strategies import OVERFLOW_ERRORS, TRANSIENT_ERRORS

HOOKS = tuple(_dispatch.EVENT_ARGS)


# ---- plugin engines, registered as docs/custom-engines.md says ------------------------------------------------
@dataclass(frozen=True, slots=True)
class SearchBudgetSettings(EngineSettings):
    tools: tuple[str, ...] = ("web_search",)
    warn_at: int = 2
    max_calls: int = 3


class SearchBudget(Engine):
    """The engine of docs/custom-engines.md: warns, then blocks, search calls per user prompt."""

    name = "test_dispatch_search_budget"
    Settings = SearchBudgetSettings
    REASONS = ("test_dispatch_search_budget.warning", "test_dispatch_search_budget.exhausted")

    def __init__(self, settings: SearchBudgetSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        self.settings: SearchBudgetSettings = settings
        self.calls = 0

    @hookimpl
    def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
        if call.tool not in self.settings.tools:
            return None
        self.calls += 1
        n, limit = self.calls, self.settings.max_calls
        if n > limit:
            return Verdict(self.name, "block", f"{self.name}.exhausted", "Search budget used up.", {"count": n})
        if n >= self.settings.warn_at:
            return Verdict(self.name, "warn", f"{self.name}.warning", f"Search {n} of {limit}.", {"count": n})
        return None

    @hookimpl
    def loopguard_message(self, message: Message) -> None:
        if message.from_user:
            self.calls = 0


class Notes(Engine):
    """A plugin engine answering with lists (None inside them too) and taking its arguments in other shapes."""

    name = "test_dispatch_notes"
    REASONS = ("test_dispatch_notes.failed", "test_dispatch_notes.turn", "test_dispatch_notes.llm",
               "test_dispatch_notes.changed")

    @hookimpl
    def loopguard_after_call(self, blocked: bool, call: ToolCall, result: ToolResult | None) -> list[Verdict | None]:
        if result is not None and not result.ok:
            return [None, Verdict(self.name, "warn", f"{self.name}.failed", f"{call.tool} failed")]
        return [Verdict(self.name, "allow", f"{self.name}.turn", "blocked")] if blocked else []

    @hookimpl
    def loopguard_before_call(self, result: ToolResult | None) -> Verdict | None:  # the second argument only
        if isinstance(result, ToolResult) and result.changed:
            return Verdict(self.name, "warn", f"{self.name}.changed", "changed outside")
        return None

    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> list[Verdict]:
        return [Verdict(self.name, "allow", f"{self.name}.turn", str(len(turn.calls)))] * (len(turn.calls) % 2)

    @hookimpl
    def loopguard_llm_result(self, view: PromptView, llm: LLMCall) -> Verdict | None:
        return Verdict(self.name, "warn", f"{self.name}.llm", "error") if llm.error else None


class Ordered(Engine):
    """A plugin engine using pluggy's marks: its Guards take their table from pluggy's registry."""

    name = "test_dispatch_ordered"
    REASONS = ("test_dispatch_ordered.first", "test_dispatch_ordered.last", "test_dispatch_ordered.wrapped")

    @hookimpl(tryfirst=True)
    def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
        return Verdict(self.name, "warn", f"{self.name}.first", call.tool) if call.tool == "web_search" else None

    @hookimpl(trylast=True)
    def loopguard_after_call(self, call: ToolCall, blocked: bool) -> Verdict | None:
        return Verdict(self.name, "allow", f"{self.name}.last", call.tool) if blocked else None

    @hookimpl(wrapper=True)
    def loopguard_before_llm(self, llm: LLMCall) -> Any:
        answers = yield
        return [*answers, Verdict(self.name, "allow", f"{self.name}.wrapped", "seen")] if answers else answers

    @hookimpl(hookwrapper=True)
    def loopguard_done(self, done: Done) -> Any:
        outcome = yield
        if done.success is False:
            outcome.force_result([*outcome.get_result(), Verdict(self.name, "warn", f"{self.name}.wrapped", "no")])

    @hookimpl
    def loopguard_phase(self, phase: str) -> Verdict:
        return Verdict(self.name, "allow", f"{self.name}.first", phase)


class Watcher:
    """A plugin object (`Guard(plugins=[...])`), not an engine: it blocks deletes and watches turns end."""

    @hookimpl(tryfirst=True)
    def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
        return Verdict("watcher", "block", "watcher.rm", "Never delete.") if call.tool == "rm" else None

    @hookimpl
    def loopguard_turn_end(self, turn: Turn) -> None:
        return None

    @hookimpl
    def loopguard_compacted(self) -> list[Verdict]:
        return [Verdict("watcher", "allow", "watcher.compacted", "")]


for _engine in (SearchBudget, Notes, Ordered):
    register_engine(_engine)

PLUGIN_POLICIES: dict[str, dict[str, Any]] = {
    "plugin engine": {"preset": "default", SearchBudget.name: {}, Notes.name: {}},
    "plugin engine with pluggy's marks": {"preset": "default", Ordered.name: {}, SearchBudget.name: {}},
}
CASES: list[tuple[str, str | dict[str, Any], bool]] = [
    *((p, p, False) for p in preset_names()),
    *((k, v, False) for k, v in PLUGIN_POLICIES.items()),
    ("plugin object", "default", True),
    ("plugin object, marked engine", PLUGIN_POLICIES["plugin engine with pluggy's marks"], True),
]


# ---- generated events ---------------------------------------------------------------------------------------------
CALLS = (
    ToolCall.of("read_file", {"path": "a.py"}),
    ToolCall.of("read_file", {"path": "a.py", "offset": 1, "limit": 50}),
    ToolCall.of("write_file", {"path": "a.py", "content": "x = 1"}),
    ToolCall.of("browser_snapshot"),
    ToolCall.of("browser_click", {"index": 3}),
    ToolCall.of("execute_bash", {"command": "make test"}),
    ToolCall.of("web_search", {"q": "flights"}),
    ToolCall.of("rm", {"path": "/"}),
)
RESULTS = (
    ToolResult(text="ok"), ToolResult(text="x" * 300, tokens=90), ToolResult.failure("Element not found"),
    ToolResult.failure("No such file or directory"), ToolResult(changed=True, text="changed"),
)
_usage = st.builds(LLMCall, input_tokens=st.none() | st.integers(0, 3000),
                   output_tokens=st.none() | st.integers(0, 300), text=st.none() | st.sampled_from(("Look.", "Again.")))
_llms = _usage | st.builds(LLMCall, error=st.sampled_from((*OVERFLOW_ERRORS, *TRANSIENT_ERRORS)))
_events = st.one_of(
    st.tuples(st.just("turn"), st.lists(st.sampled_from(CALLS), max_size=3), st.none() | _llms),
    st.tuples(st.just("call"), st.sampled_from(CALLS), st.sampled_from(RESULTS), st.booleans()),
    st.tuples(st.just("call"), st.sampled_from(CALLS), st.sampled_from(RESULTS), st.booleans()),
    st.tuples(st.just("message"), st.builds(Message, st.sampled_from(("user", "system", "assistant")),
                                            st.sampled_from(("Fix it", "Tests fail")),
                                            st.sampled_from(("user", "harness", "agent")))),
    st.tuples(st.just("phase"), st.sampled_from(("explore", "edit", "verify"))),
    st.tuples(st.just("rejected"), st.builds(Rejected, st.sampled_from(("no tool call", "format error")),
                                             st.none(), st.none() | _usage)),
    st.tuples(st.just("done"), st.builds(Done, st.none() | st.booleans(), st.just("finished"))),
    st.tuples(st.just("compacted")),
)
EVENT_SEQUENCES = st.lists(_events, max_size=40)
RUNS = st.fixed_dictionaries({
    "window_tokens": st.sampled_from((0, 400, 2000)),
    "task": st.none() | st.builds(Task, st.just("t"), st.just("explore"),
                                  st.fixed_dictionaries({"max_tool_calls": st.integers(1, 12)})),
})


def drive(guard: Guard, events: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Feed `events` through the Guard's public methods; what each returned."""
    out: list[Any] = []
    for event in events:
        kind = event[0]
        if kind == "turn":
            _kind, calls, llm = event
            guard.end_turn()
            if llm is not None:
                out += [guard.before_llm(llm), guard.llm_result(llm)]
            out.append(guard.start_turn(calls, llm))
        elif kind == "call":
            _kind, call, result, hint = event
            before = guard.before_call(call, result if hint and result.changed else None)
            out += [before, guard.after_call(call, result if before.runs else None, before), guard.shown]
        elif kind == "compacted":
            out.append(guard.hook.loopguard_compacted(view=guard.run.view))
        else:
            out.append(getattr(guard, kind)(event[1]))
    guard.end_turn()
    return out


# ---- the two dispatches and what they call ---------------------------------------------------------------------
def _flatten(answers: Sequence[Any]) -> list[Verdict]:
    """pluggy's list of answers as verdicts (written here again so the reference shares no code with the Guard's)."""
    out: list[Verdict] = []
    for answer in answers:
        if isinstance(answer, Verdict):
            out.append(answer)
        elif answer is not None:
            out += [v for v in answer if v is not None]
    return out


def plain_pluggy(guard: Guard, handed: list[list[Verdict]]) -> Guard:
    """`guard` calling every event through pluggy's `pm.hook.<event>(**arguments)`, noting the verdicts."""
    def through(name: str) -> Callable[..., list[Verdict]]:
        caller, spec = getattr(guard.pm.hook, name), _dispatch.EVENT_ARGS[name]

        def call(*args: Any) -> list[Verdict]:
            answer = _flatten(caller(**dict(zip(spec, args, strict=True))))
            handed.append(answer)
            return answer
        return call

    guard._set_events({name: ((through(name), _dispatch.ALL),) for name in HOOKS})
    return guard


def _hook_codes(owners: Sequence[object]) -> dict[CodeType, str]:
    codes: dict[CodeType, str] = {}
    for owner in owners:
        for name in HOOKS:
            function = getattr(type(owner), name, None)
            if function is not None:
                codes[function.__code__] = name
    return codes


def _shape(value: Any, guard: Guard) -> Any:
    """An argument as both Guards can compare it: the run's own view and turn by what they are, values as such."""
    if value is guard.run.view:
        return "<the run's view>"
    if isinstance(value, Turn):
        return ("turn", value.index, value.calls, value.llm, tuple(value.results))
    if isinstance(value, list):
        return [_shape(v, guard) for v in value]
    return value


@contextmanager
def noting(guard: Guard, owners: Sequence[object], calls: list[list[Any]],
           fires: list[list[Verdict]] | None) -> Iterator[None]:
    """Note each hook implementation of `owners` called (owner, hook, arguments, answer), and, when `fires` is
    given, what each of the dispatcher's callers hands back to the Guard."""
    codes = _hook_codes(owners)
    fire_codes = {f.__code__ for f in (_dispatch.fire1, _dispatch.fire2, _dispatch.fire3)}
    open_calls: list[list[Any]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and code in codes:
            me = frame.f_locals["self"]
            args = {k: _shape(v, guard) for k, v in frame.f_locals.items() if k != "self"}
            open_calls.append([getattr(me, "name", type(me).__name__), codes[code], args, None])
        elif event == "return" and code in codes:
            done = open_calls.pop()
            done[3] = _shape(arg, guard)
            calls.append(done)
        elif event == "return" and fires is not None and code in fire_codes and arg:
            fires.append(list(arg))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


def dispatched(policy: Policy, events: Sequence[tuple[Any, ...]], run: dict[str, Any], with_plugin: bool,
               reference: bool) -> tuple[list[list[Any]], list[list[Verdict]], list[Any], dict[str, frozenset[str]]]:
    """What a Guard calls, hands back and decides over `events`: as it ships, or through plain pluggy."""
    plugins = [Watcher()] if with_plugin else []
    guard = Guard(policy, context={"window_tokens": run["window_tokens"]}, task=run["task"], plugins=plugins)
    engines = list(guard.run.engines.values())
    idle = {e.name: e.idle_hooks() for e in engines}
    calls: list[list[Any]] = []
    handed: list[list[Verdict]] = []
    if reference:
        plain_pluggy(guard, handed)
    with noting(guard, [*engines, *plugins], calls, None if reference else handed):
        decisions = drive(guard, events)
    return calls, handed, decisions, idle


def assert_same_dispatch(policy: Policy, events: Sequence[tuple[Any, ...]], run: dict[str, Any],
                         with_plugin: bool = False) -> None:
    got_calls, got_handed, got_decisions, idle = dispatched(policy, events, run, with_plugin, reference=False)
    want_calls, want_handed, want_decisions, _ = dispatched(policy, events, run, with_plugin, reference=True)
    for calls in (got_calls, want_calls):  # a hook named idle answers None whenever it is called
        assert [c for c in calls if c[1] in idle.get(c[0], ()) and c[3] is not None] == []
    assert ([c for c in got_calls if c[1] not in idle.get(c[0], ())]
            == [c for c in want_calls if c[1] not in idle.get(c[0], ())])  # same hooks, order, arguments, answers
    assert got_handed == [h for h in want_handed if h]  # the same verdicts handed back per event
    assert got_decisions == want_decisions


@pytest.mark.parametrize(("spec", "with_plugin"), [(spec, plugin) for _id, spec, plugin in CASES],
                         ids=[case_id for case_id, _spec, _plugin in CASES])
@settings(max_examples=25)
@given(events=EVENT_SEQUENCES, run=RUNS)
def test_the_guard_calls_what_plain_pluggy_would(spec: str | dict[str, Any], with_plugin: bool,
                                                 events: list[tuple[Any, ...]], run: dict[str, Any]) -> None:
    assert_same_dispatch(resolve_policy(spec), events, run, with_plugin)


# ---- the check catches a broken dispatcher -------------------------------------------------------------------
# A run in which every engine of `default` and the plugin engines answer, in several shapes.
BUSY: list[tuple[Any, ...]] = [
    ("message", Message("user", "Fix it")),
    *[event for _ in range(3)
      for event in (("turn", [CALLS[3], CALLS[6]], LLMCall(input_tokens=900, output_tokens=100)),
                    ("call", CALLS[3], RESULTS[1], False))],
    *[("call", CALLS[0], RESULTS[0], False) for _ in range(4)], ("call", CALLS[2], RESULTS[4], True),
    ("turn", [CALLS[5]], LLMCall(error=TRANSIENT_ERRORS[0])),
    *[("call", CALLS[5], RESULTS[2], False) for _ in range(6)],
    *[("call", CALLS[6], RESULTS[0], False) for _ in range(5)],
    ("call", CALLS[7], RESULTS[0], False), ("phase", "edit"), ("done", Done(False, "finished")),
    ("turn", [CALLS[3]], LLMCall(error=OVERFLOW_ERRORS[0])), ("compacted",),
]
BUSY_RUN = {"window_tokens": 2000, "task": Task("t", "explore", {"max_tool_calls": 30})}
BUSY_CASES: list[tuple[str | dict[str, Any], bool]] = [("default", False), (PLUGIN_POLICIES["plugin engine"], False),
              (PLUGIN_POLICIES["plugin engine with pluggy's marks"], True)]


def test_the_busy_run_meets_every_engine_and_both_dispatches_agree() -> None:
    for spec, with_plugin in BUSY_CASES:
        assert_same_dispatch(resolve_policy(spec), BUSY, BUSY_RUN, with_plugin)
    calls, *_ = dispatched(resolve_policy(PLUGIN_POLICIES["plugin engine"]), BUSY, BUSY_RUN, False, reference=False)
    answered = {c[0] for c in calls if c[3]}
    assert answered >= {*resolve_policy("default").engines, SearchBudget.name, Notes.name}


def _reordered(direct: Callable[..., Any]) -> Callable[..., Any]:
    def events(engines: Any, layout: Any) -> Any:  # the last two implementations of each event swapped
        return {k: (*v[:-2], v[-1], v[-2]) if len(v) > 1 else v for k, v in direct(engines, layout).items()}
    return events


def _skipping(layout: Callable[..., Any]) -> Callable[..., Any]:
    def laid_out(engines: Any) -> Any:  # the last engine of the policy left out
        found = layout(engines)
        return found and {k: tuple(x for x in v if x[0] != len(engines) - 1) for k, v in found.items()}
    return laid_out


def _dropping(add: Callable[..., Any]) -> Callable[..., Any]:
    def added(out: Any, r: Any) -> Any:  # an answer's last verdict lost when it answers with a list
        return add(out, r[:-1] if isinstance(r, list) else r)
    return added


def _pluggy_reversed(table: Callable[..., Any]) -> Callable[..., Any]:
    def events(pm: Any) -> Any:  # pluggy's registry read in registration order, not pluggy's call order
        return {k: v[::-1] for k, v in table(pm).items()}
    return events


def _misplaced(how: Callable[..., Any]) -> Callable[..., Any]:
    def shape(picks: Any) -> Any:  # an implementation of the second argument given the first
        return _dispatch.FIRST if picks == (1,) else how(picks)
    return shape


@pytest.mark.parametrize(("attribute", "break_it"), [
    ("direct_events", _reordered), ("_layout", _skipping), ("_add", _dropping), ("pluggy_events", _pluggy_reversed),
    ("_how", _misplaced),
], ids=["reorders two engines", "skips an engine", "drops a result", "reads pluggy's order backwards",
        "passes the wrong argument"])
def test_the_check_fails_for_a_broken_dispatcher(monkeypatch: pytest.MonkeyPatch, attribute: str,
                                                 break_it: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    monkeypatch.setattr(_dispatch, "_PLANS", {})  # layouts worked out before the break are not reused
    monkeypatch.setattr(_dispatch, "_CLASS_IMPLS", {})
    broken = break_it(getattr(_dispatch, attribute))
    for module in (_dispatch, _guard):  # where the Guard imported it by name too
        if hasattr(module, attribute):
            monkeypatch.setattr(module, attribute, broken)
    failures = 0
    for spec, with_plugin in BUSY_CASES:
        try:
            assert_same_dispatch(resolve_policy(spec), BUSY, BUSY_RUN, with_plugin)
        except AssertionError:
            failures += 1
    assert failures


# ---- the per-policy plan cache ---------------------------------------------------------------------------------
def test_a_cached_plan_is_never_given_to_another_policy_under_a_reused_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_dispatch, "_PLANS", {})
    old = Policy("old", {"loop_guard": resolve_policy("default").engines["loop_guard"]})
    new = Policy("new", {"budget": resolve_policy("default").engines["budget"]})
    # the cache as it would stand had `old` been freed and `new` been allocated at its address
    _dispatch._PLANS[id(new)] = _dispatch.Plan(old)
    assert [cls.name for cls, _settings in _dispatch.plan(new).engines] == ["budget"]
    assert list(Guard(new).run.engines) == ["budget"]


def test_policies_freed_and_made_again_get_their_own_engines() -> None:
    # more policies than the cache keeps, each freed after its Guard: ids come back, plans must not
    settings = resolve_policy("default").engines
    names = list(settings)
    seen_ids: set[int] = set()
    reused = 0
    for i in range(200):
        chosen = [names[k] for k in range(len(names)) if (i >> k) % 2] or ["loop_guard"]
        policy = Policy(f"p{i}", {name: settings[name] for name in chosen})
        reused += id(policy) in seen_ids
        seen_ids.add(id(policy))
        assert list(Guard(policy).run.engines) == chosen
        del policy
        gc.collect(0)  # a Guard is a cycle (its engines hold its run): the youngest generation frees it
    assert reused  # the situation the cache must survive did arise
