"""The Guard: builds a policy's engines for one run, feeds them events, combines their verdicts.

The Guard is the runtime library: a real agent calls it around each model call and tool call, replay
calls it for each recorded step, and the simulator's agent loop calls it for each simulated one.

    guard = Guard(resolve_policy("default"))
    guard.start_turn([call])
    decision = guard.before_call(call)        # allow / warn / block / stop
    if decision.runs:
        result = run_tool(call)
        decision = guard.after_call(call, result, decision)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, cast, final

import pluggy

from ..core import hookspecs
from ..core._classify import Classifier
from ..core._conversation import Deferred, Entry, PromptView, Role, chars_over_four
from ..core._model import Action, Done, LLMCall, Message, Rejected, Task, ToolCall, ToolResult, Verdict, combine
from ..core._runcontext import Clock, RunContext, Turn
from ..engines import Engine, registry
from ..engines.base import registry_version
from ._policy import Policy

__all__ = ["Clock", "Decision", "Guard", "RunContext", "Turn"]

# built-in engines that never read the prompt view: with only these (and no plugin), the Guard builds
# no view entries at all (an engine not listed here gets the view, so a new one is safe by default)
_VIEWLESS: Final = frozenset({"loop_guard", "read_tracker", "failure_tracker", "budget"})


@final
class Decision:
    """The verdicts on one event and their combined action (a plain slots class, immutable by convention)."""

    __slots__ = ("action", "verdicts")

    def __init__(self, action: Action, verdicts: tuple[Verdict, ...] = ()) -> None:
        self.action = action
        self.verdicts = verdicts

    @property
    def runs(self) -> bool:
        """Whether a tool call goes ahead (allow or warn)."""
        return self.action in ("allow", "warn")

    @property
    def message(self) -> str:
        """The message of the most severe verdict (what the agent is shown), or empty."""
        for v in self.verdicts:
            if v.action == self.action:
                return v.message
        return ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Decision) and other.action == self.action and other.verdicts == self.verdicts

    def __hash__(self) -> int:
        return hash((self.action, self.verdicts))

    def __repr__(self) -> str:
        return f"Decision(action={self.action!r}, verdicts={self.verdicts!r})"


ALLOW = Decision("allow")


def _argnames(function: Any) -> tuple[str, ...]:
    """The arguments a hook implementation asks for, as pluggy reads them (no self, none with defaults)."""
    params = list(inspect.signature(function).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return tuple(p.name for p in params if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD)


# the per-event hooks and their arguments in the contract's order, read from `hookspecs` once
_EVENT_ARGS: Final[dict[str, tuple[str, ...]]] = {
    name: _argnames(getattr(hookspecs, name))
    for name in (
        "loopguard_turn_start", "loopguard_before_call", "loopguard_after_call", "loopguard_turn_end",
        "loopguard_before_llm", "loopguard_llm_result", "loopguard_compacted", "loopguard_phase",
        "loopguard_message", "loopguard_rejected", "loopguard_done",
    )
}
_IMPL_ATTR: Final = hookspecs.PROJECT + "_impl"
_PLUGGY_ONLY: Final = ("wrapper", "hookwrapper", "tryfirst", "trylast", "specname")

Fn = Callable[..., Any]
# How an implementation is called: with all the event's arguments (`_ALL`), the first only (`_FIRST`), the
# second only (`_SECOND`) or none (`_NONE`) — the shapes the engines use, called directly; any other shape
# gets a wrapper that takes all the arguments (`_ALL`). A code per implementation instead of a wrapper for
# every shape saves a Python frame per engine per event.
_ALL: Final = 0
_FIRST: Final = 1
_SECOND: Final = 2
_NONE: Final = 3
Impl = tuple[Fn, int]
Events = dict[str, tuple[Impl, ...]]


Picks = tuple[int, ...] | None  # where an implementation's arguments sit in the event's; None: all, in order
_CLASS_IMPLS: dict[type, dict[str, Picks] | None] = {}


def _class_impls(cls: type) -> dict[str, Picks] | None:
    """An engine class's event hooks and which of the event's arguments each takes, read once per class.

    None when an implementation needs pluggy (a wrapper, an ordering mark, an unknown argument pluggy
    should report): Guards of that class then go through pluggy.
    """
    if cls not in _CLASS_IMPLS:
        _CLASS_IMPLS[cls] = _read_impls(cls)
    return _CLASS_IMPLS[cls]


def _read_impls(cls: type) -> dict[str, Picks] | None:
    out: dict[str, Picks] = {}
    for name, spec in _EVENT_ARGS.items():
        function = getattr(cls, name, None)
        opts = getattr(function, _IMPL_ATTR, None)
        if opts is None:
            continue
        if any(opts.get(k) for k in _PLUGGY_ONLY):
            return None
        args = _argnames(function)
        if any(a not in spec for a in args):
            return None
        out[name] = _picks(args, spec)
    return out


def _picks(args: Sequence[str], spec: tuple[str, ...]) -> Picks:
    return None if tuple(args) == spec else tuple(spec.index(a) for a in args)


def _how(picks: Picks) -> int:
    """How an implementation taking `picks` of the event's arguments is called (`_ALL` for a wrapper)."""
    if picks is None:
        return _ALL
    if picks == (0,):
        return _FIRST
    if picks == (1,):
        return _SECOND
    if not picks:
        return _NONE
    return _ALL


def _impl(method: Fn, picks: Picks) -> Impl:
    """`method` with how to call it given the event's arguments in the contract's order (positionally)."""
    how = _how(picks)
    if how == _ALL and picks is not None:  # another shape: a wrapper that picks its arguments
        return (lambda *a: method(*[a[k] for k in picks])), _ALL
    return method, how


Layout = dict[str, tuple[tuple[int, int, Picks], ...]]  # per event: (engine index, how, picks) in policy order


def _layout(engines: Sequence[Engine]) -> Layout | None:
    """Per event, which engines implement it and how they are called; None when pluggy is needed."""
    table: dict[str, list[tuple[int, int, Picks]]] = {name: [] for name in _EVENT_ARGS}
    for i, engine in enumerate(engines):
        impls = _class_impls(type(engine))
        if impls is None:
            return None
        idle = engine.idle_hooks()
        for name, picks in impls.items():
            if name not in idle:
                how = _how(picks)
                table[name].append((i, how, picks if how == _ALL and picks is not None else None))
    return {name: tuple(fns) for name, fns in table.items()}


_NO_EVENTS: Final[Events] = {name: () for name in _EVENT_ARGS}


def _direct_events(engines: Sequence[Engine], layout: Layout) -> Events:
    """Per event, the engines' bound implementations in policy order, as `layout` places them."""
    events = _NO_EVENTS.copy()  # most events have no implementation: they keep the shared empty tuple
    for name, fns in layout.items():
        if fns:
            events[name] = tuple([(getattr(engines[i], name), how) if picks is None
                                  else _impl(getattr(engines[i], name), picks) for i, how, picks in fns])
    return events


@final
class _Plan:
    """What every Guard of one policy builds alike, worked out once per policy: the engine classes with their
    settings, whether the view is kept, and the event table's layout per set of idle hooks."""

    __slots__ = ("engines", "layouts", "policy", "version", "viewless")

    def __init__(self, policy: Policy) -> None:
        known = registry()
        self.policy = policy  # held so the `id` it is cached under stays this policy's
        self.version = registry_version()  # the registry as read (its first read registers the built-ins)
        self.engines = tuple((known[name], settings) for name, settings in policy.engines.items())
        self.viewless = all(cls.name in _VIEWLESS for cls, _ in self.engines)
        # idle hooks come from each engine's settings; an engine may also decide per run, so the layout is
        # kept per combination the runs answered (one, for every built-in engine)
        self.layouts: dict[tuple[frozenset[str], ...], Layout | None] = {}


_PLANS: dict[int, _Plan] = {}
_MAX_PLANS: Final = 64  # policies in use at once (a matrix, an eval sweep); more just rebuild their plans


def _plan(policy: Policy) -> _Plan:
    plan = _PLANS.get(id(policy))
    if plan is None or plan.version != registry_version():  # the plan holds its policy: the id stays its own
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        plan = _PLANS[id(policy)] = _Plan(policy)
    return plan


def _pluggy_events(pm: pluggy.PluginManager) -> Events:
    """Per event, the implementations in pluggy's order; pluggy's own caller where a plugin wraps."""
    table: Events = {}
    for name, spec in _EVENT_ARGS.items():
        caller = getattr(pm.hook, name)
        impls = caller.get_hookimpls()
        if any(i.hookwrapper or i.wrapper for i in impls):
            table[name] = ((lambda *a, _c=caller, _s=spec: _flatten(_c(**dict(zip(_s, a, strict=True))))), _ALL),
        else:  # pluggy calls the last registered implementation first
            table[name] = tuple(_impl(i.function, _picks(i.argnames, spec)) for i in reversed(impls))
    return table


def _add(out: list[Verdict] | None, r: Any) -> list[Verdict]:
    """`out` with an implementation's answer (a verdict or a list of them) added."""
    if out is None:
        out = []
    if r.__class__ is Verdict:  # Verdict is final: no subclass to miss
        out.append(r)
    else:
        out.extend([v for v in r if v is not None])
    return out


# One caller per event arity: the implementations' verdicts, flattened, or None when there are none.
# `not how` tests for `_ALL` (0), nearly every implementation's shape, without loading a global per call.
def _fire1(fns: tuple[Impl, ...], a: Any) -> list[Verdict] | None:
    out: list[Verdict] | None = None
    for f, how in fns:
        r = f(a) if how != _NONE else f()
        if r is not None:
            out = _add(out, r)
    return out


def _fire2(fns: tuple[Impl, ...], a: Any, b: Any) -> list[Verdict] | None:
    out: list[Verdict] | None = None
    for f, how in fns:
        r = f(a, b) if not how else f(a) if how == _FIRST else f(b) if how == _SECOND else f()
        if r is not None:
            out = _add(out, r)
    return out


def _fire3(fns: tuple[Impl, ...], a: Any, b: Any, c: Any) -> list[Verdict] | None:
    out: list[Verdict] | None = None
    for f, how in fns:
        r = f(a, b, c) if not how else f(a) if how == _FIRST else f(b) if how == _SECOND else f()
        if r is not None:
            out = _add(out, r)
    return out


_FIRE: Final[dict[int, Callable[..., list[Verdict] | None]]] = {1: _fire1, 2: _fire2, 3: _fire3}


def _decide(verdicts: list[Verdict] | None) -> Decision:
    if not verdicts:
        return ALLOW
    return Decision(combine(verdicts), tuple(verdicts))


def _flatten(results: Iterable[Any]) -> list[Verdict]:
    out: list[Verdict] = []
    for r in results:
        if r is None:
            continue
        if isinstance(r, Verdict):
            out.append(r)
        else:
            out.extend(v for v in r if v is not None)
    return out


class _EngineManager(pluggy.PluginManager):
    """A plugin manager that only inspects `loopguard_*` attributes (pluggy otherwise inspects every
    attribute of every engine), and tells its Guard when plugins change so the event table is rebuilt."""

    guard: Guard | None = None

    def register(self, plugin: object, name: str | None = None) -> str | None:
        registered = super().register(plugin, name)
        if self.guard is not None:
            self.guard._plugins_changed(self)
        return registered

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        removed = super().unregister(plugin, name)
        if self.guard is not None:
            self.guard._plugins_changed(self)
        return removed

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        if not name.startswith("loopguard_"):
            return None
        return super().parse_hookimpl_opts(plugin, name)

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> Any:
        if not name.startswith("loopguard_"):
            return None
        return super().parse_hookspec_opts(module_or_class, name)


def _new_pm() -> _EngineManager:
    pm = _EngineManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


@final
class _Hooks:
    """The event hooks called by keyword, as pluggy's `pm.hook` is: each returns the verdicts (a list)."""

    __slots__ = ("_events",)

    def __init__(self, events: Events) -> None:
        self._events = events

    def __getattr__(self, name: str) -> Callable[..., list[Verdict]]:
        fns, spec = self._events[name], _EVENT_ARGS[name]
        fire = _FIRE[len(spec)]
        return lambda **kw: fire(fns, *[kw.get(a) for a in spec]) or []


ToolRecord = tuple[ToolCall, ToolResult | None, Decision, Decision, int, int | None]


def _shown(result: ToolResult | None, decision: Decision, before: Decision) -> str:
    """What the agent sees of a call: the block message as an error, or the result with any warnings."""
    if result is None:
        return f"Error: {before.message or 'blocked'}"
    text = result.result_text or ""
    if decision.action == "warn":
        # the result, a blank line, then the warnings one per line (two engines may warn at once)
        warnings = "\n".join(v.message for v in decision.verdicts if v.action == "warn" and v.message)
        if warnings:
            text = f"{text}\n\n{warnings}" if text else warnings
    return text


# A kept view's records older than the last this many are settled into their compact form (see
# `Deferred.settle`): a view read within that many records (every policy that compacts before a model
# call) never pays for settling, and a view kept unread holds at most twice this many events' objects.
_SETTLE_KEEP: Final = 4096


# A settled record is one string, not a tuple: a tuple and its ints would cost about twice the memory.
# "t" call id, turn, tokens, tool length; newline; tool then what the agent was shown — or "a" turn, tokens;
# newline; the assistant message. Numbers in decimal, "-" for None; the text is last, so anything goes in it.


def _settled(record: object) -> object:
    """The compact record of the entry `_entry` builds from `record`: its text made now, objects let go."""
    kind = record.__class__
    if kind is tuple:
        call, result, decision, before, call_id, turn = cast(ToolRecord, record)
        tokens = result.tokens if result is not None else None
        tool = call.tool
        return (f"t{call_id} {'-' if turn is None else turn} {'-' if tokens is None else tokens} {len(tool)}\n"
                f"{tool}{_shown(result, decision, before)}")
    if kind is Turn:
        turn_record = cast(Turn, record)
        llm = turn_record.llm
        tokens = llm.output_tokens if llm is not None else None
        return f"a{turn_record.index} {'-' if tokens is None else tokens}\n{turn_record.message_text()}"
    return record  # an entry (a message, a dedup placeholder) or a record already settled


def _number(field: str) -> int | None:
    return None if field == "-" else int(field)


def _unsettled(record: str) -> Entry:
    """The entry of a settled record."""
    head, _, body = record.partition("\n")
    fields = head[1:].split(" ")
    if head[0] == "a":
        return Entry("assistant", body, _number(fields[1]), turn=int(fields[0]))
    size = int(fields[3])
    return Entry("tool", body[size:], _number(fields[2]), body[:size], int(fields[0]), _number(fields[1]))


def _entry(record: object) -> Entry:
    """The view entry of what the Guard recorded: a message's entry, a turn (the assistant message: its text
    and the calls it makes, as the model wrote them) or a call (what the agent was shown of it)."""
    kind = record.__class__  # exact types: a record is one of these three, never a subclass
    if kind is tuple:  # a call: the most common record
        call, result, decision, before, call_id, turn = cast(ToolRecord, record)
        # positional: keywords cost more than the entry's own construction
        return Entry("tool", _shown(result, decision, before), result.tokens if result is not None else None,
                     call.tool, call_id, turn)
    if kind is Turn:
        turn_record = cast(Turn, record)
        llm = turn_record.llm
        # the text (with each call's as-written arguments) is built only if read: a view usually
        # needs only the model's own token count
        return Entry.later("assistant", turn_record.message_text, llm.output_tokens if llm else None,
                           turn_record.index)
    if kind is str:
        return _unsettled(cast(str, record))
    return cast(Entry, record)


def _describe(record: object) -> tuple[Role, str | None]:
    """The role and tool of the entry `_entry` builds from `record`, without building it."""
    kind = record.__class__
    if kind is tuple:
        return "tool", cast(ToolRecord, record)[0].tool
    if kind is Turn:
        return "assistant", None
    if kind is str:
        entry = _unsettled(cast(str, record))
        return entry.role, entry.tool
    entry = cast(Entry, record)
    return entry.role, entry.tool


def _measure(record: object, view: PromptView) -> int:
    """The tokens `view` counts for the entry `_entry` builds from `record`, without building it; negative
    when they were counted from its text (see `Deferred`)."""
    kind = record.__class__
    count = view.count_tokens
    if kind is tuple:  # the entry's tokens are the result's own, else its text's and its tool's
        call, result, decision, before, _id, _turn = cast(ToolRecord, record)
        if result is not None and result.tokens is not None:
            return result.tokens
        return -count(_shown(result, decision, before)) - (count(call.tool) if call.tool else 0)
    if kind is Turn:
        turn = cast(Turn, record)
        llm = turn.llm
        if llm is not None and llm.output_tokens is not None:
            return llm.output_tokens
        return -count(turn.message_text())
    if kind is str:
        entry = _unsettled(cast(str, record))
        if entry.tokens is not None:
            return entry.tokens
        return -count(entry.text) - (count(entry.tool) if entry.tool else 0)
    return view.entry_tokens(cast(Entry, record))  # the record is the entry itself: counted (and kept) once


class Guard:
    """One run's engines. Not reusable across runs: build a new Guard per run (engines hold run state).

    With `keep_transcript` the Guard keeps the lossless transcript of the run (the simulator does); without
    it nothing is appended there, and the prompt view is kept only when an engine or plugin may read it,
    so a long-running live Guard holds no per-call history of its own. Entries are recorded as a small
    record per event and built when the view or the transcript is read (`conversation.Deferred`).
    """

    def __init__(
        self,
        policy: Policy,
        *,
        task: Task | None = None,
        objective: str = "",
        context: Mapping[str, Any] | None = None,
        clock: Clock | None = None,
        plugins: Sequence[object] = (),
        keep_transcript: bool = False,
    ) -> None:
        self.policy = policy
        self.keep_transcript = keep_transcript
        pm: _EngineManager | None = None
        classifier = policy.classifier
        count: Callable[[str], int] = chars_over_four
        if plugins:
            pm = _new_pm()
            for plugin in plugins:
                pm.register(plugin)
            extra_rules = [r for rules in pm.hook.loopguard_tool_rules() for r in rules]
            if extra_rules:
                classifier = Classifier(policy.tools, extra_rules)
            count = self._token_counter(pm)
        trace_context = dict(context or {})
        view = PromptView(count, int(trace_context.get("window_tokens", 0) or 0))
        self.run = RunContext(
            policy, classifier, clock or Clock(), task, objective or (task.objective if task else ""),
            trace_context, view,
        )
        plan = _plan(policy)
        run = self.run
        self._engines = engines = [cls(settings, run) for cls, settings in plan.engines]
        run.engines = {e.name: e for e in engines}
        self._record: Callable[[object], None] | None = None  # appends a record for the view, when kept
        self._deferred: Deferred | None = None  # what `_record` appends to
        if keep_transcript or pm is not None or not plan.viewless:
            self._keep_view()
        self._pm: _EngineManager | None = None
        layout = None
        if pm is None:
            idle = tuple([e.idle_hooks() for e in engines])
            layouts = plan.layouts
            if idle in layouts:
                layout = layouts[idle]
            else:
                layout = layouts[idle] = _layout(engines)
        if layout is None:
            self._adopt(pm or _new_pm())
        else:
            self._set_events(_direct_events(engines, layout))
        self._next_call_id = 0
        self._last: ToolRecord | None = None

    # ---- plugins -----------------------------------------------------------------------------------
    @property
    def pm(self) -> pluggy.PluginManager:
        """The run's plugin manager (built on first use when the Guard was built without plugins)."""
        if self._pm is None:
            self._adopt(_new_pm())
        assert self._pm is not None
        return self._pm

    @property
    def hook(self) -> Any:
        """The event hooks by keyword (`guard.hook.loopguard_compacted(view=...)`), returning verdicts."""
        return _Hooks(self._events)

    def _adopt(self, pm: _EngineManager) -> None:
        # pluggy calls the last registered first: register in reverse so engines run in policy order
        for engine in reversed(self._engines):
            pm.register(engine, name=engine.name)
        pm.guard = self
        self._pm = pm
        self._set_events(_pluggy_events(pm))

    def _plugins_changed(self, pm: pluggy.PluginManager) -> None:
        if self._record is None:
            self._keep_view()  # a plugin may read the view from now on
        self._set_events(_pluggy_events(pm))

    def _keep_view(self) -> None:
        """Record entries for the prompt view (and the transcript, when kept) from now on."""
        run = self.run
        deferred = Deferred(_entry, _describe, _measure, _settled)
        deferred.sinks.append(run.view)
        run.view.deferred = deferred
        if self.keep_transcript:
            deferred.sinks.append(run.transcript)
            run.transcript.deferred = deferred
        self._record = deferred.records.append
        self._deferred = deferred

    def _set_events(self, events: Events) -> None:
        self._events = events
        self._turn_start = events["loopguard_turn_start"]
        self._before_call = events["loopguard_before_call"]
        self._after_call = events["loopguard_after_call"]
        self._turn_end = events["loopguard_turn_end"]
        self._before_llm = events["loopguard_before_llm"]
        self._llm_result = events["loopguard_llm_result"]
        self._compacted = events["loopguard_compacted"]

    @staticmethod
    def _token_counter(pm: pluggy.PluginManager) -> Callable[[str], int]:
        hook = pm.hook.loopguard_count_tokens

        def count(text: str) -> int:
            n = hook(text=text)
            return int(n) if n is not None else chars_over_four(text)

        return count

    # ---- turns -------------------------------------------------------------------------------------
    def start_turn(self, calls: Sequence[ToolCall], llm: LLMCall | None = None) -> Decision:
        """A new turn with its calls (the model's response). Verdicts land on the step that starts it."""
        run = self.run
        turn = Turn(run.turns, tuple(calls), None, llm)  # positional: a keyword costs more than the call
        run.turn = turn
        run.turns += 1
        record = self._record
        if record is not None and (calls or (llm is not None and llm.text)):
            record(turn)  # the assistant message, built from the turn when the view is read
            deferred = self._deferred  # set with `_record`
            if deferred is not None and len(deferred.records) - deferred.settled > 2 * _SETTLE_KEEP:
                deferred.settle(_SETTLE_KEEP)  # a view long unread: its old records let their objects go
        fns = self._turn_start
        return _decide(_fire1(fns, turn)) if fns else ALLOW

    def end_turn(self) -> None:
        turn = self.run.turn
        if turn is not None:
            fns = self._turn_end
            if fns:
                _fire1(fns, turn)
            self.run.turn = None

    # ---- tool calls --------------------------------------------------------------------------------
    def before_call(self, call: ToolCall, result: ToolResult | None = None) -> Decision:
        """Verdicts before a call runs: block skips it, stop ends the run.

        `result`, when already known (a recorded trace), lets engines read `result.changed` first.
        """
        run = self.run
        if run.turn is None:
            self.start_turn([call])
        run.calls += 1
        fns = self._before_call
        if not fns:
            return ALLOW
        verdicts = _fire2(fns, call, result)
        return Decision(combine(verdicts), tuple(verdicts)) if verdicts else ALLOW

    def after_call(self, call: ToolCall, result: ToolResult | None, before: Decision = ALLOW) -> Decision:
        """Report what happened: the call ran with `result`, or was blocked (`result=None`).

        Returns the combined decision of the call (the verdicts from before and after).
        """
        run = self.run
        if result is not None:
            run.ran(call)
        turn = run.turn
        if turn is not None:
            turn.results.append(result)
        fns = self._after_call
        after = _fire3(fns, call, result, result is None) if fns else None
        if after:
            verdicts = before.verdicts + tuple(after)
            decision = Decision(combine(verdicts), verdicts)
        else:
            decision = before
        call_id = self._next_call_id
        self._next_call_id = call_id + 1
        # one tuple serves `shown` and, when the view is kept, the entry built from it later
        last = self._last = (call, result, decision, before, call_id, turn.index if turn is not None else None)
        record = self._record
        if record is not None:
            record(last)
        return decision

    @property
    def shown(self) -> str:
        """What the agent sees of the last call: the block message as an error, or the result with any
        warnings attached (empty before the first call)."""
        if self._last is None:
            return ""
        _call, result, decision, before, _id, _turn = self._last
        return _shown(result, decision, before)

    # ---- model calls -------------------------------------------------------------------------------
    def before_llm(self, llm: LLMCall) -> Decision:
        """Before a model call: dedup and pre-prompt compaction of the prompt view."""
        fns = self._before_llm
        return self._after_compaction(_decide(_fire2(fns, llm, self.run.view)) if fns else ALLOW)

    def llm_result(self, llm: LLMCall) -> Decision:
        """After a model call: error recovery (compact and retry, back off and retry, or fail)."""
        fns = self._llm_result
        return self._after_compaction(_decide(_fire2(fns, llm, self.run.view)) if fns else ALLOW)

    def _after_compaction(self, d: Decision) -> Decision:
        if not (d.verdicts and any(v.action in ("compact", "compact_retry") for v in d.verdicts)):
            return d
        extra = _fire1(self._compacted, self.run.view)
        if not extra:
            return d
        verdicts = d.verdicts + tuple(extra)
        return Decision(combine(verdicts), verdicts)

    # ---- other events ------------------------------------------------------------------------------
    def phase(self, phase: str) -> Decision:
        return _decide(_fire1(self._events["loopguard_phase"], phase))

    def message(self, message: Message) -> Decision:
        record = self._record
        if record is not None:
            record(Entry(message.role, message.text))
        return _decide(_fire1(self._events["loopguard_message"], message))

    def rejected(self, rejected: Rejected) -> Decision:
        """A model turn the harness refused: the previous turn ends, the turn's model usage counts as a
        model call's, and engines hear of it through `loopguard_rejected`. No turn starts: nothing ran."""
        self.end_turn()
        verdicts: tuple[Verdict, ...] = ()
        if rejected.llm is not None:
            verdicts += self.before_llm(rejected.llm).verdicts + self.llm_result(rejected.llm).verdicts
        verdicts += _decide(_fire1(self._events["loopguard_rejected"], rejected)).verdicts
        return Decision(combine(verdicts), verdicts) if verdicts else ALLOW

    def done(self, done: Done) -> Decision:
        return _decide(_fire1(self._events["loopguard_done"], done))
