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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, final

import pluggy

from . import hookspecs
from .conversation import Entry, PromptView, Transcript, chars_over_four
from .engines import Engine, registry
from .model import Action, Done, LLMCall, Message, Rejected, Task, ToolCall, ToolResult, Verdict, combine
from .policy import Policy
from .targets import CallTarget, target_of
from .tools import Classifier, Kind

__all__ = ["Clock", "Decision", "Guard", "RunContext", "Turn"]

_OPENER: Final = re.compile(r"(?:^|[\s;&|(])(?:open|create)\s")


@final
class Clock:
    """The run's virtual clock in milliseconds: set from step timestamps, advanced by backoffs."""

    __slots__ = ("now_ms",)

    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms

    def set(self, ms: int) -> None:
        self.now_ms = max(self.now_ms, ms)

    def advance(self, ms: int) -> None:
        self.now_ms += ms


@final
@dataclass(slots=True, eq=False)
class Turn:
    """One model response and the tool calls it asked for."""

    index: int
    calls: tuple[ToolCall, ...]
    results: list[ToolResult | None] = field(default_factory=list)  # None: blocked
    llm: LLMCall | None = None


@final
@dataclass(frozen=True, slots=True)
class Decision:
    """The verdicts on one event and their combined action."""

    action: Action
    verdicts: tuple[Verdict, ...] = ()

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


ALLOW = Decision("allow")


@final
class RunContext:
    """What engines may read about the run they belong to (and the other engines of it)."""

    __slots__ = (
        "_kind_cache",
        "_target_cache",
        "calls",
        "classifier",
        "clock",
        "engines",
        "objective",
        "open_file",
        "policy",
        "task",
        "trace_context",
        "transcript",
        "turn",
        "turns",
        "view",
    )

    def __init__(
        self,
        policy: Policy,
        classifier: Classifier,
        clock: Clock,
        task: Task | None,
        objective: str,
        trace_context: Mapping[str, Any],
        view: PromptView,
    ) -> None:
        self.policy = policy
        self.classifier = classifier
        self.clock = clock
        self.task = task
        self.objective = objective
        self.trace_context = trace_context
        self.view = view
        self.transcript = Transcript()
        self.engines: dict[str, Engine] = {}
        self.turn: Turn | None = None
        self.turns = 0  # turns started so far
        self.calls = 0  # tool calls seen so far (blocked ones included)
        self._kind_cache: dict[str, Kind] = {}
        self._target_cache: dict[str, CallTarget] = {}
        self.open_file: str | None = None  # the file a SWE-agent `open F` made current in this run

    def kind(self, call: ToolCall) -> Kind:
        """The call's kind by the policy's table; cached on the call's identity."""
        k = self._kind_cache.get(call.ordered_fingerprint)
        if k is None:
            k = self.classifier.kind(call)
            self._kind_cache[call.ordered_fingerprint] = k
        return k

    def target(self, call: ToolCall) -> CallTarget:
        """The call's effect, verb and targets by the policy's tool table; cached on the call's identity.

        Commands that act on the open file (SWE-agent `goto`, `edit`) get the file the run has open now.
        """
        t = self._target_cache.get(call.ordered_fingerprint)
        if t is None:
            t = target_of(call, self.classifier)
            self._target_cache[call.ordered_fingerprint] = t
        return t.resolved(self.open_file) if t.on_open else t

    def ran(self, call: ToolCall) -> None:
        """Note a call that ran: an `open F` makes F the open file for the calls after it."""
        # only shell lines that mention an opener need reading: this runs after every call
        rule = self.classifier.locator(call)
        line = call.args.get(rule.shell) if rule is not None and rule.shell is not None else None
        if isinstance(line, str) and _OPENER.search(line):
            opened = self.target(call).opened()
            if opened is not None:
                self.open_file = opened


class _EngineManager(pluggy.PluginManager):
    """A plugin manager that only inspects `loopguard_*` attributes: a Guard is built per run, so
    registration must be cheap (pluggy otherwise inspects every attribute of every engine)."""

    guard: Guard | None = None  # told when plugins change, so its direct hook callers are rebuilt

    def register(self, plugin: object, name: str | None = None) -> str | None:
        registered = super().register(plugin, name)
        if self.guard is not None:
            self.guard.hook = _Hooks(self)
        return registered

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        removed = super().unregister(plugin, name)
        if self.guard is not None:
            self.guard.hook = _Hooks(self)
        return removed

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        if not name.startswith("loopguard_"):
            return None
        return super().parse_hookimpl_opts(plugin, name)

    def parse_hookspec_opts(self, module_or_class: Any, name: str) -> Any:
        if not name.startswith("loopguard_"):
            return None
        return super().parse_hookspec_opts(module_or_class, name)


_EVENT_HOOKS = (
    "loopguard_turn_start", "loopguard_before_call", "loopguard_after_call", "loopguard_turn_end",
    "loopguard_before_llm", "loopguard_llm_result", "loopguard_compacted", "loopguard_phase",
    "loopguard_message", "loopguard_rejected", "loopguard_done",
)


@final
class _DirectHook:
    """Calls a hook's implementations in pluggy's order without pluggy's per-call machinery.

    The per-event hooks run several times per step; plain implementations (no wrappers) need none of
    that machinery, and skipping it roughly halves the Guard's own cost per event.
    """

    __slots__ = ("_impls",)

    def __init__(self, impls: list[tuple[Any, tuple[str, ...]]]) -> None:
        self._impls = impls

    def __call__(self, **kwargs: Any) -> list[Any]:
        out = []
        for function, argnames in self._impls:
            r = function(*[kwargs[name] for name in argnames])
            if r is not None:
                out.append(r)
        return out


@final
class _Hooks:
    """The per-event hooks of one Guard: a direct caller each, or pluggy's caller where a plugin wraps."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        for name in _EVENT_HOOKS:
            caller = getattr(pm.hook, name)
            impls = caller.get_hookimpls()
            if any(i.hookwrapper or i.wrapper for i in impls):
                setattr(self, name, caller)
            else:  # pluggy calls the last registered implementation first
                setattr(self, name, _DirectHook([(i.function, tuple(i.argnames)) for i in reversed(impls)]))


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


class Guard:
    """One run's engines. Not reusable across runs: build a new Guard per run (engines hold run state)."""

    def __init__(
        self,
        policy: Policy,
        *,
        task: Task | None = None,
        objective: str = "",
        context: Mapping[str, Any] | None = None,
        clock: Clock | None = None,
        plugins: Sequence[object] = (),
    ) -> None:
        self.policy = policy
        self.pm = _EngineManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        for plugin in plugins:
            self.pm.register(plugin)
        extra_rules = [r for rules in self.pm.hook.loopguard_tool_rules() for r in rules]
        classifier = Classifier(policy.tools, extra_rules) if extra_rules else policy.classifier
        count = self._token_counter() if plugins else chars_over_four
        trace_context = dict(context or {})
        view = PromptView(count, int(trace_context.get("window_tokens", 0) or 0))
        self.run = RunContext(
            policy, classifier, clock or Clock(), task, objective or (task.objective if task else ""),
            trace_context, view,
        )
        known = registry()
        engines = [known[name](settings, self.run) for name, settings in policy.engines.items()]
        # pluggy calls the last registered first: register in reverse so engines run in policy order
        for engine in reversed(engines):
            self.pm.register(engine, name=engine.name)
        self.run.engines = {e.name: e for e in engines}
        self.hook: Any = _Hooks(self.pm)
        self.pm.guard = self
        self._next_call_id = 0

    def _token_counter(self) -> Any:
        hook = self.pm.hook.loopguard_count_tokens

        def count(text: str) -> int:
            n = hook(text=text)
            return int(n) if n is not None else chars_over_four(text)

        return count

    # ---- turns -------------------------------------------------------------------------------------
    def start_turn(self, calls: Sequence[ToolCall], llm: LLMCall | None = None) -> Decision:
        """A new turn with its calls (the model's response). Verdicts land on the step that starts it."""
        run = self.run
        turn = Turn(run.turns, tuple(calls), llm=llm)
        run.turn = turn
        run.turns += 1
        if calls or (llm is not None and llm.text):
            # the assistant message: its text and the calls it makes, as the model wrote them
            text = "\n".join([*([llm.text] if llm is not None and llm.text else []),
                              *(f"{c.tool}({c.ordered})" for c in calls)])
            entry = Entry("assistant", text, tokens=llm.output_tokens if llm else None, turn=turn.index)
            run.transcript.append(entry)
            run.view.append(entry)
        return self._decide(self.hook.loopguard_turn_start(turn=turn))

    def end_turn(self) -> None:
        turn = self.run.turn
        if turn is not None:
            self.hook.loopguard_turn_end(turn=turn)
            self.run.turn = None

    # ---- tool calls --------------------------------------------------------------------------------
    def before_call(self, call: ToolCall, result: ToolResult | None = None) -> Decision:
        """Verdicts before a call runs: block skips it, stop ends the run.

        `result`, when already known (a recorded trace), lets engines read `result.changed` first.
        """
        if self.run.turn is None:
            self.start_turn([call])
        self.run.calls += 1
        return self._decide(self.hook.loopguard_before_call(call=call, result=result))

    def after_call(self, call: ToolCall, result: ToolResult | None, before: Decision = ALLOW) -> Decision:
        """Report what happened: the call ran with `result`, or was blocked (`result=None`).

        Returns the combined decision of the call (the verdicts from before and after).
        """
        blocked = result is None
        run = self.run
        if not blocked:
            run.ran(call)
        turn = run.turn
        if turn is not None:
            turn.results.append(result)
        after = _flatten(self.hook.loopguard_after_call(call=call, result=result, blocked=blocked))
        verdicts = before.verdicts + tuple(after)
        decision = Decision(combine(verdicts), verdicts) if after else before
        # what the agent sees: the block message as an error, or the result with any warnings attached
        if result is None:
            text, tokens = f"Error: {before.message or 'blocked'}", None
        else:
            text, tokens = result.result_text or "", result.tokens
            if decision.action == "warn":
                # the result, a blank line, then the warnings one per line (two engines may warn at once)
                warnings = "\n".join(v.message for v in decision.verdicts if v.action == "warn" and v.message)
                if warnings:
                    text = f"{text}\n\n{warnings}" if text else warnings
        entry = Entry("tool", text, tokens=tokens, tool=call.tool, call_id=self._next_call_id,
                      turn=turn.index if turn is not None else None)
        self._next_call_id += 1
        run.transcript.append(entry)
        run.view.append(entry)
        return decision

    # ---- model calls -------------------------------------------------------------------------------
    def before_llm(self, llm: LLMCall) -> Decision:
        """Before a model call: dedup and pre-prompt compaction of the prompt view."""
        return self._after_compaction(self._decide(self.hook.loopguard_before_llm(llm=llm, view=self.run.view)))

    def llm_result(self, llm: LLMCall) -> Decision:
        """After a model call: error recovery (compact and retry, back off and retry, or fail)."""
        return self._after_compaction(self._decide(self.hook.loopguard_llm_result(llm=llm, view=self.run.view)))

    def _after_compaction(self, d: Decision) -> Decision:
        if not any(v.action in ("compact", "compact_retry") for v in d.verdicts):
            return d
        extra = _flatten(self.hook.loopguard_compacted(view=self.run.view))
        if not extra:
            return d
        verdicts = d.verdicts + tuple(extra)
        return Decision(combine(verdicts), verdicts)

    # ---- other events ------------------------------------------------------------------------------
    def phase(self, phase: str) -> Decision:
        return self._decide(self.hook.loopguard_phase(phase=phase))

    def message(self, message: Message) -> Decision:
        entry = Entry(message.role, message.text)
        self.run.transcript.append(entry)
        self.run.view.append(entry)
        return self._decide(self.hook.loopguard_message(message=message))

    def rejected(self, rejected: Rejected) -> Decision:
        """A model turn the harness refused: the previous turn ends, the turn's model usage counts as a
        model call's, and engines hear of it through `loopguard_rejected`. No turn starts: nothing ran."""
        self.end_turn()
        verdicts: tuple[Verdict, ...] = ()
        if rejected.llm is not None:
            verdicts += self.before_llm(rejected.llm).verdicts + self.llm_result(rejected.llm).verdicts
        verdicts += self._decide(self.hook.loopguard_rejected(rejected=rejected)).verdicts
        return Decision(combine(verdicts), verdicts) if verdicts else ALLOW

    def done(self, done: Done) -> Decision:
        return self._decide(self.hook.loopguard_done(done=done))

    # ---- helpers -----------------------------------------------------------------------------------
    @staticmethod
    def _decide(results: Iterable[Any]) -> Decision:
        verdicts = _flatten(results)
        if not verdicts:
            return ALLOW
        return Decision(combine(verdicts), tuple(verdicts))
