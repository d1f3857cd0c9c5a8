"""The Guard: builds a policy's engines for one run, feeds them events, combines their verdicts.

The Guard is the runtime library: a real agent calls it around each model call and tool call, replay
calls it for each recorded step, and the simulator's agent loop calls it for each simulated one. Which
implementations an event reaches is `_dispatch`'s to say; what is kept of each event for the prompt view,
`_records`'.

    guard = Guard(resolve_policy("default"))
    guard.start_turn([call])
    decision = guard.before_call(call)        # allow / warn / block / stop
    if decision.runs:
        result = run_tool(call)
        decision = guard.after_call(call, result, decision)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, final

import pluggy

from .._mypyc import mypyc_attr
from ..core._classify import Classifier
from ..core._conversation import Deferred, Entry, PromptView, chars_over_four
from ..core._model import Action, Done, LLMCall, Message, Rejected, Task, ToolCall, ToolResult, Verdict, combine
from ..core._runcontext import Clock, RunContext, Turn
from ..errors import SessionError
from ._dispatch import (
    EVENT_ARGS,
    NONE,
    Events,
    Hooks,
    PluginManager,
    fire1,
    fire2,
    fire3,
    new_pm,
    plan,
    pluggy_events,
    pluggy_plugin,
)
from ._policy import Policy
from ._records import ToolRecord, deferred, shown_text

__all__ = ["Clock", "Decision", "Guard", "RunContext", "Turn"]


RUNS: Final = frozenset((Action.ALLOW, Action.WARN))  # the actions under which a tool call goes ahead
_COMPACTING: Final = frozenset((Action.COMPACT, Action.COMPACT_RETRY))


@final
@mypyc_attr(acyclic=True)  # compiled, untracked by the collector: an action and verdicts, never in a cycle
class Decision:
    """The verdicts on one event and their combined action (a plain slots class, immutable by convention)."""

    __slots__ = ("action", "verdicts")

    def __init__(self, action: Action, verdicts: tuple[Verdict, ...] = ()) -> None:
        self.action = action
        self.verdicts = verdicts

    @property
    def runs(self) -> bool:
        """Whether a tool call goes ahead (allow or warn)."""
        return self.action in RUNS

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


ALLOW = Decision(Action.ALLOW)


def _closed() -> None:
    raise SessionError("an event for a closed Guard (Guard.close): build a new Guard for a new run")


# a closed Guard's table: every event raises
_CLOSED: Final[Events] = {name: ((_closed, NONE),) for name in EVENT_ARGS}


def _decide(verdicts: list[Verdict] | None) -> Decision:
    if not verdicts:
        return ALLOW
    return Decision(combine(verdicts), tuple(verdicts))


# A kept view's records older than the last this many are settled into their compact form (see
# `Deferred.settle`): a view read within that many records (every policy that compacts before a model
# call) never pays for settling, and a view kept unread holds at most twice this many events' objects.
_SETTLE_KEEP: Final = 4096


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
        name: str = "",
    ) -> None:
        self.policy = policy
        self.keep_transcript = keep_transcript
        self._closed = False  # `close`d: every event raises, whatever joins the plugin manager later
        pm: PluginManager | None = None
        classifier = policy.classifier
        count: Callable[[str], int] = chars_over_four
        if plugins:
            pm = new_pm()
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
        policy_plan = plan(policy)
        run = self.run
        run.name = name
        self._engines = engines = [cls(settings, run) for cls, settings in policy_plan.engines]
        run.engines = {e.name: e for e in engines}
        self._record: Callable[[object], None] | None = None  # appends a record for the view, when kept
        self._deferred: Deferred | None = None  # what `_record` appends to
        if keep_transcript or pm is not None or not policy_plan.viewless:
            self._keep_view()
        self._pm: PluginManager | None = None
        events = policy_plan.direct_events(engines) if pm is None else None
        if events is None:
            self._adopt(pm or new_pm())
        else:
            self._set_events(events)
        self._next_call_id = 0
        self._last: ToolRecord | None = None
        self._ended = False

    # ---- plugins -----------------------------------------------------------------------------------
    @property
    def pm(self) -> pluggy.PluginManager:
        """The run's plugin manager (built on first use when the Guard was built without plugins)."""
        if self._pm is None:
            self._adopt(new_pm())
        assert self._pm is not None
        return self._pm

    @property
    def hook(self) -> Any:
        """The event hooks by keyword (`guard.hook.loopguard_compacted(view=...)`), returning verdicts."""
        return Hooks(self._events)

    def _adopt(self, pm: PluginManager) -> None:
        # pluggy calls the last registered first: register in reverse so engines run in policy order (a slice:
        # mypyc 2.4 fails to compile `reversed()` of this list)
        for engine in self._engines[::-1]:
            pm.register(pluggy_plugin(engine), name=engine.name)
        pm.on_change = self._plugins_changed
        self._pm = pm
        self._set_events(pluggy_events(pm))

    def _plugins_changed(self, pm: pluggy.PluginManager) -> None:
        if self._record is None:
            self._keep_view()  # a plugin may read the view from now on
        self._set_events(pluggy_events(pm))

    def _keep_view(self) -> None:
        """Record entries for the prompt view (and the transcript, when kept) from now on."""
        run = self.run
        records = deferred()
        records.sinks.append(run.view)
        run.view.deferred = records
        if self.keep_transcript:
            records.sinks.append(run.transcript)
            run.transcript.deferred = records
        self._record = records.records.append
        self._deferred = records

    def _set_events(self, events: Events) -> None:
        if self._closed:
            events = _CLOSED
        self._events = events
        self._turn_start = events["loopguard_turn_start"]
        self._before_call = events["loopguard_before_call"]
        self._after_call = events["loopguard_after_call"]
        self._turn_end = events["loopguard_turn_end"]
        self._before_llm = events["loopguard_before_llm"]
        self._llm_result = events["loopguard_llm_result"]
        self._compacted = events["loopguard_compacted"]
        self._not_run = events["loopguard_not_run"]

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
        return _decide(fire1(fns, turn)) if fns else ALLOW

    def end_turn(self) -> None:
        turn = self.run.turn
        if turn is not None:
            fns = self._turn_end
            if fns:
                fire1(fns, turn)
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
        verdicts = fire2(fns, call, result)
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
        after = fire3(fns, call, result, result is None) if fns else None
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

    def not_run(self, call: ToolCall) -> None:
        """Report a call the engines allowed that never ran (denied by a person or a permission rule, or
        cancelled): no engine hears of it after the call and nothing of it enters the prompt view; its turn
        counts it as a call without a result, as it counts a blocked one."""
        turn = self.run.turn
        if turn is not None:
            turn.results.append(None)
        if self._not_run:
            fire1(self._not_run, call)

    @property
    def shown(self) -> str:
        """What the agent sees of the last call: the block message as an error, or the result with any
        warnings attached (empty before the first call)."""
        if self._last is None:
            return ""
        _call, result, decision, before, _id, _turn = self._last
        return shown_text(result, decision, before)

    # ---- model calls -------------------------------------------------------------------------------
    def before_llm(self, llm: LLMCall) -> Decision:
        """Before a model call: dedup and pre-prompt compaction of the prompt view."""
        fns = self._before_llm
        return self._after_compaction(_decide(fire2(fns, llm, self.run.view)) if fns else ALLOW)

    def llm_result(self, llm: LLMCall) -> Decision:
        """After a model call: error recovery (compact and retry, back off and retry, or fail)."""
        fns = self._llm_result
        return self._after_compaction(_decide(fire2(fns, llm, self.run.view)) if fns else ALLOW)

    def _after_compaction(self, d: Decision) -> Decision:
        if not (d.verdicts and any(v.action in _COMPACTING for v in d.verdicts)):
            return d
        extra = fire1(self._compacted, self.run.view)
        if not extra:
            return d
        verdicts = d.verdicts + tuple(extra)
        return Decision(combine(verdicts), verdicts)

    # ---- other events ------------------------------------------------------------------------------
    def phase(self, phase: str) -> Decision:
        return _decide(fire1(self._events["loopguard_phase"], phase))

    def message(self, message: Message) -> Decision:
        record = self._record
        if record is not None:
            record(Entry(message.role, message.text))
        return _decide(fire1(self._events["loopguard_message"], message))

    def rejected(self, rejected: Rejected) -> Decision:
        """A model turn the harness refused: the previous turn ends, the turn's model usage counts as a
        model call's, and engines hear of it through `loopguard_rejected`. No turn starts: nothing ran."""
        self.end_turn()
        verdicts: tuple[Verdict, ...] = ()
        if rejected.llm is not None:
            verdicts += self.before_llm(rejected.llm).verdicts + self.llm_result(rejected.llm).verdicts
        verdicts += _decide(fire1(self._events["loopguard_rejected"], rejected)).verdicts
        return Decision(combine(verdicts), verdicts) if verdicts else ALLOW

    def done(self, done: Done) -> Decision:
        return _decide(fire1(self._events["loopguard_done"], done))

    def end_run(self, outcome: str | None) -> None:
        """The run is over (`outcome`, when decided): engines holding resources across it let them go. Once."""
        if not self._ended:
            self._ended = True
            fns = self._events["loopguard_run_end"]
            if fns:
                fire1(fns, outcome)

    def close(self, *, build: bool = True) -> None:
        """Unlink the run's objects from one another, so that they go when the last reference to them does.

        The run context lists its engines and each engine holds the context; the prompt view and its records
        hold each other; a plugin manager holds the Guard that holds it. Left linked, a finished run's engines,
        their maps and the calls in them wait for the cyclic collector, and a loop that builds a Guard per run
        makes the collector walk all of them. Ends the run first (outcome unknown) unless `end_run` did; any
        event afterwards raises `SessionError`. The prompt view and the transcript stay readable and whole:
        what they had not built yet is built now, unless `build` is False (a caller that will not read them,
        as replay: a policy that keeps the view but seldom reads it would pay for building it all). Engines
        of your own that link to themselves are theirs to unlink (`loopguard_run_end`), and a Guard with
        plugins keeps pluggy's plugin manager, which links to itself, for the collector."""
        self.end_run(None)
        self._closed = True
        run = self.run
        run.engines = {}
        run.reads = None
        run.turn = None
        deferred = self._deferred
        if deferred is not None:
            if build and deferred.records:
                deferred.flush()
            deferred.sinks.clear()
            run.view.deferred = None
            run.transcript.deferred = None
        self._record = None
        self._deferred = None
        if self._pm is not None:
            self._pm.on_change = None
        self._set_events(_CLOSED)
