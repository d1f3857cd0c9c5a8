"""Verdicts, actions, outcomes, traces and replay results: frozen value types, no I/O (the events: `_steps`)."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias, final

from .._mypyc import mypyc_attr

# the events are their own module; they are named here too, where code has always imported them from
from ._steps import (
    DENIED_BY,
    NOT_RUN_HOWS,
    OK,
    ORIGINS,
    PHASES,
    STEP_CLASSES,
    STEP_KINDS,
    TRIGGERS,
    CompactedStep,
    Compaction,
    Done,
    DoneStep,
    LLMCall,
    LLMStep,
    Message,
    MessageStep,
    NotRun,
    Origin,
    PhaseStep,
    Rejected,
    RejectedStep,
    Step,
    StepExpect,
    StepKind,
    StepSource,
    ToolCall,
    ToolResult,
    ToolStep,
    make_step,
)

__all__ = [
    "ACTIONS",
    "DENIED_BY",
    "LLM_ACTIONS",
    "NOT_REACHED",
    "NOT_RUN_HOWS",
    "OK",
    "ORIGINS",
    "OUTCOMES",
    "PHASES",
    "SEVERITY",
    "STEP_CLASSES",
    "STEP_KINDS",
    "TOOL_ACTIONS",
    "TRIGGERS",
    "Action",
    "CompactedStep",
    "Compaction",
    "Done",
    "DoneStep",
    "LLMCall",
    "LLMStep",
    "Message",
    "MessageStep",
    "NotReached",
    "NotRun",
    "Origin",
    "Outcome",
    "PhaseStep",
    "Rejected",
    "RejectedStep",
    "ReplayResult",
    "RunExpect",
    "Step",
    "StepAction",
    "StepExpect",
    "StepKind",
    "StepResult",
    "StepSource",
    "Task",
    "ToolCall",
    "ToolResult",
    "ToolStep",
    "Trace",
    "Verdict",
    "combine",
    "make_step",
    "plain",
    "run_end",
]

class Action(enum.StrEnum):
    """What a verdict asks for. A `str` whose value is the name written in traces, policies and reports, so
    `verdict.action == "block"` holds, `f"{action}"` is `block`, and JSON writes `"block"`.

    A tool call is allowed, warned, blocked (it does not run) or stopped (the run ends); a model call is
    allowed, compacted (the prompt view first), retried, compacted and retried, or failed (the run ends).
    """

    ALLOW = "allow"
    WARN = "warn"
    BLOCK = "block"
    STOP = "stop"
    COMPACT = "compact"
    RETRY = "retry"
    COMPACT_RETRY = "compact_retry"
    FAIL = "fail"


class NotReached(enum.StrEnum):
    """The action of a step the run never reached (it had ended before): a step's, never a verdict's."""

    NOT_REACHED = "not_reached"


class Outcome(enum.StrEnum):
    """How a run ended: a `str` with the name written in traces and reports (`result.outcome == "stopped"`)."""

    COMPLETED = "completed"  # a `done` step, or a `done` tool that ran
    STOPPED = "stopped"  # a `stop` verdict
    FAILED = "failed"  # a `fail` verdict
    EXHAUSTED = "exhausted"  # a `stop` that says so (max turns or steps), or every turn of `max_turns` used
    INCOMPLETE = "incomplete"  # the events ran out, or the driver gave up


NOT_REACHED: Final = NotReached.NOT_REACHED
StepAction: TypeAlias = Action | NotReached  # a step's combined action

# The names as written in files: plain strings (a YAML dump refuses a str subclass), in the enums' order.
TOOL_ACTIONS: Final = ("allow", "warn", "block", "stop")
LLM_ACTIONS: Final = ("allow", "compact", "retry", "compact_retry", "fail")
ACTIONS: Final = tuple(a.value for a in Action)
OUTCOMES: Final = tuple(o.value for o in Outcome)

# One ordering for both families; a step only mixes them in rare cases (a stop on the step that opens a turn).
SEVERITY: Final[Mapping[str, int]] = MappingProxyType({
    Action.ALLOW: 0, Action.WARN: 1, Action.COMPACT: 2, Action.BLOCK: 3, Action.RETRY: 3, Action.COMPACT_RETRY: 4,
    Action.STOP: 5, Action.FAIL: 6,
})


def plain(value: str) -> str:
    """`value` as an exact `str` (an `Action`, `NotReached` or `Outcome` becomes its value): what a data
    form hands on to a writer that takes exact types only (`yaml.safe_dump` refuses a str subclass)."""
    return str.__str__(value)


@final
# compiled, untracked by the collector: a verdict holds strings and a mapping of an engine's data, never anything
# that refers back to it, so it is never in a reference cycle
@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Verdict:
    """What one engine decided about one event: `reason` is a stable code, `message` what the agent sees."""

    engine: str
    action: Action
    reason: str
    message: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as plain data (its action a plain string)."""
        return {
            "engine": self.engine,
            "action": plain(self.action),
            "reason": self.reason,
            "message": self.message,
            "data": dict(self.data),
        }


_ALLOW: Final = Action.ALLOW  # a module global: cheaper to read than the enum's attribute, on every step
_RAN: Final = frozenset((Action.ALLOW, Action.WARN))  # the actions under which a call goes ahead
_REPR_STEPS: Final = 40  # the steps a trace's repr lists


def combine(verdicts: tuple[Verdict, ...] | list[Verdict]) -> Action:
    """The most severe action among the verdicts; `allow` when there are none."""
    action: Action = _ALLOW
    rank = 0
    for verdict in verdicts:
        r = SEVERITY[verdict.action]
        if r > rank:
            rank, action = r, verdict.action
    return action


def run_end(action: Action, verdicts: Sequence[Verdict]) -> tuple[Outcome, str]:
    """How a step whose combined action is `stop` or `fail` ends the run: the outcome and the deciding engine.

    A `fail` is `failed`; a `stop` is `stopped`, or `exhausted` when its verdict says so (max turns or steps:
    `data["outcome"]`, plain data like the rest of `data`).
    """
    ender = next(v for v in verdicts if v.action == action)
    if action == Action.FAIL:
        return Outcome.FAILED, ender.engine
    return (Outcome.EXHAUSTED if ender.data.get("outcome") == Outcome.EXHAUSTED else Outcome.STOPPED), ender.engine


@final
@dataclass(frozen=True, slots=True)
class RunExpect:
    outcome: str | None = None
    stopped_by: str | None = None
    stopped_at: int | None = None
    counts: Mapping[str, int] | None = None
    has_stopped_by: bool = False  # `stopped_by: null` was written explicitly
    has_stopped_at: bool = False


@final
@dataclass(frozen=True, slots=True)
class Task:
    """A task envelope: opens the budget engine's accounting."""

    objective: str = ""
    phase: str = "explore"
    budget: Mapping[str, Any] = field(default_factory=dict)


@final
@dataclass(frozen=True, slots=True, eq=False)
class Trace:
    """A whole trace: header, steps and run expectations. Loaded by `traceio`, replayed by `replay`."""

    name: str
    steps: tuple[Step, ...] = ()
    version: int = 1
    description: str = ""
    tags: tuple[str, ...] = ()
    source: Mapping[str, Any] = field(default_factory=dict)
    policy: str | Mapping[str, Any] | None = None
    task: Task | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    strict: bool = False
    expect: RunExpect | None = None
    mode: Literal["replay", "simulate"] = "replay"
    env: Mapping[str, Any] = field(default_factory=dict)
    agent: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    max_turns: int | None = None
    path: str | None = None
    extensions: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """A summary a person reads (a failing property prints it): the name, the policy, the expectation,
        and one line per step (its index, kind and call) instead of every field of every step."""
        head = [repr(self.name)]
        if self.policy is not None:
            head.append(f"policy={self.policy!r}")
        if self.expect is not None:
            head.append(f"expect={self.expect!r}")
        lines = []
        for step in self.steps[:_REPR_STEPS]:
            label = step.label(60)
            text = label if label.startswith(step.kind) else f"{step.kind} {label}"
            if step.result is not None and not step.result.ok:
                text += f" -> error {(step.result.error or '')[:40]!r}"
            if step.expect is not None:
                text += f" expect {step.expect.action}"
            lines.append(f"  {step.index} {text}")
        if len(self.steps) > _REPR_STEPS:
            lines.append(f"  ... and {len(self.steps) - _REPR_STEPS} more")
        count = f"{len(self.steps)} step{'' if len(self.steps) == 1 else 's'}"
        return f"Trace({', '.join(head)}, {count}" + (":\n" + "\n".join(lines) if lines else "") + ")"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis's and IPython's pretty printer: the same summary (not a field-by-field dump)."""
        printer.text(repr(self))

    @property
    def objective(self) -> str:
        """The original task: `task.objective`, else the first user message, else empty."""
        if self.task is not None and self.task.objective:
            return self.task.objective
        for step in self.steps:
            if step.message is not None and step.message.from_user:
                return step.message.text
        return ""


@final
class StepResult:
    """The verdicts of one step and their combined action (`NOT_REACHED` after the run ended).

    A plain slots class, immutable by convention: a replay can make one per step.
    """

    __slots__ = ("action", "index", "kind", "tool", "verdicts")

    def __init__(
        self, index: int, kind: str, tool: str | None, action: StepAction, verdicts: tuple[Verdict, ...] = ()
    ) -> None:
        self.index = index
        self.kind = kind
        self.tool = tool
        self.action = action
        self.verdicts = verdicts

    def _key(self) -> tuple[int, str, str | None, StepAction, tuple[Verdict, ...]]:
        return self.index, self.kind, self.tool, self.action, self.verdicts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StepResult) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"StepResult(index={self.index!r}, kind={self.kind!r}, tool={self.tool!r}, action={self.action!r}, "
                f"verdicts={self.verdicts!r})")

    def to_dict(self) -> dict[str, Any]:
        """The step's result as plain data (actions as plain strings)."""
        return {
            "index": self.index,
            "kind": self.kind,
            "tool": self.tool,
            "action": plain(self.action),
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


@final
class ReplayResult:
    """One replay: the verdict timeline and the run's outcome.

    A replay records per step only its action, and verdicts where there are any (`ReplayResult.of_actions`);
    the `StepResult` timeline (`steps`) is built from that on first use, since many readers only count.
    Immutable by convention.
    """

    __slots__ = ("_actions", "_steps", "_unknown", "_verdicts", "outcome", "policy", "step_counts", "stopped_at",
                 "stopped_by", "trace")

    def __init__(
        self,
        trace: Trace,
        policy: str,
        outcome: Outcome,
        stopped_at: int | None,
        stopped_by: str | None,
        steps: tuple[StepResult, ...],
        step_counts: Mapping[str, int] | None = None,  # a streamed replay keeps these instead of the steps
        unknown_results: tuple[int, ...] | None = None,  # and these, found as it read (else from the steps)
    ) -> None:
        self.trace = trace
        self.policy = policy
        self.outcome = outcome
        self.stopped_at = stopped_at
        self.stopped_by = stopped_by
        self.step_counts = step_counts
        self._steps: tuple[StepResult, ...] | None = steps
        self._actions: Sequence[StepAction] = ()
        self._verdicts: Mapping[int, tuple[Verdict, ...]] = {}
        self._unknown = unknown_results

    @classmethod
    def of_actions(
        cls,
        trace: Trace,
        policy: str,
        outcome: Outcome,
        stopped_at: int | None,
        stopped_by: str | None,
        actions: Sequence[StepAction],
        verdicts: Mapping[int, tuple[Verdict, ...]],
    ) -> ReplayResult:
        """A result recorded compactly: `actions[i]` is the action of `trace.steps[i]`, `verdicts[i]` its
        verdicts (absent: none)."""
        result = cls(trace, policy, outcome, stopped_at, stopped_by, ())
        result._steps = None
        result._actions = actions
        result._verdicts = verdicts
        return result

    @property
    def steps(self) -> tuple[StepResult, ...]:
        """Every step's result, in trace order (empty for a streamed replay)."""
        if self._steps is None:
            verdicts = self._verdicts
            self._steps = tuple(
                StepResult(step.index, step.kind, step.call.tool if step.call is not None else None, action,
                           verdicts.get(i, ()))
                for i, (step, action) in enumerate(zip(self.trace.steps, self._actions, strict=True))
            )
        return self._steps

    @property
    def unknown_results(self) -> tuple[int, ...]:
        """The steps whose call the recorded run's policy blocked live (`blocked`: it never ran, so its result
        is unknown) but this replay's policy let run: a what-if replay under a looser policy. No result is fed
        to the engines for them (as for a call that never ran), so the verdicts after them may differ from a
        live run under this policy; every output says so."""
        if self._unknown is not None:
            return self._unknown
        actions = self._actions if self._steps is None else [s.action for s in self._steps]
        return tuple(step.index for step, action in zip(self.trace.steps, actions, strict=False)
                     if step.not_run is not None and step.not_run.how == "blocked" and action in _RAN)

    def counts(self) -> dict[str, int]:
        """Steps per combined action (every step, `not_reached` included), keyed by the plain names."""
        if self.step_counts is not None:
            counted: Mapping[str, int] = self.step_counts
        else:
            counted = Counter(self._actions if self._steps is None else [s.action for s in self._steps])
        return {plain(action): n for action, n in counted.items()}

    def first_intervention(self) -> StepResult | None:
        """The first step whose combined action is not `allow` (nor `not_reached`)."""
        for s in self.steps:
            if s.action not in ("allow", "not_reached"):
                return s
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReplayResult) and (
            other.trace is self.trace and other.policy == self.policy and other.outcome == self.outcome
            and other.stopped_at == self.stopped_at and other.stopped_by == self.stopped_by
            and other.steps == self.steps and other.step_counts == self.step_counts
        )

    __hash__ = None  # type: ignore[assignment]  # mutable caches inside; compared by value, never hashed

    def __repr__(self) -> str:
        return (f"ReplayResult(trace={self.trace.name!r}, policy={self.policy!r}, outcome={self.outcome!r}, "
                f"stopped_at={self.stopped_at!r}, stopped_by={self.stopped_by!r}, steps={len(self.trace.steps)})")

    def to_dict(self) -> dict[str, Any]:
        """The replay as plain data (outcome and actions as plain strings): what `replay --json` prints."""
        out: dict[str, Any] = {
            "trace": self.trace.name,
            "policy": self.policy,
            "outcome": plain(self.outcome),
            "stopped_at": self.stopped_at,
            "stopped_by": self.stopped_by,
            "steps": [_step_dict(r, self.trace.steps) for r in self.steps],
        }
        unknown = self.unknown_results
        if unknown:  # a what-if replay: calls blocked live ran here, with no result to feed
            out["result_unknown"] = list(unknown)
            for row in out["steps"]:
                if row["index"] in unknown:
                    row["result_unknown"] = True
        return out

    def what_if_note(self) -> str | None:
        """The one line every output prints for a what-if replay (`unknown_results`), else None."""
        unknown = self.unknown_results
        if not unknown:
            return None
        shown = ", ".join(map(str, unknown[:10])) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        calls = "call" if len(unknown) == 1 else "calls"
        return (f"what-if: {len(unknown)} {calls} the recording's policy blocked ran under {self.policy} (step "
                f"{shown}); the recording has no result for them (result unknown), so the verdicts after them "
                "may differ from a live run under this policy")


def _step_dict(result: StepResult, steps: Sequence[Step]) -> dict[str, Any]:
    """A step's result as `replay --json` gives it: with why a call never ran (`not_run`: how, reason, by) and
    a compaction event's fields (`compacted`), which no verdict says."""
    out = result.to_dict()
    if not 0 <= result.index < len(steps):  # a result built without its trace's steps
        return out
    step = steps[result.index]
    not_run, compacted = step.not_run, step.compacted
    if not_run is not None:
        out["not_run"] = {k: v for k, v in (("how", not_run.how), ("reason", not_run.reason), ("by", not_run.by))
                          if v is not None}
    elif compacted is not None:
        out["compacted"] = {k: v for k, v in (("trigger", compacted.trigger),
                                              ("tokens_before", compacted.tokens_before), ("text", compacted.text))
                            if v is not None}
    return out
