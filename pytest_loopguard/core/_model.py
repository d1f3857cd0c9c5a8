"""Events, results, verdicts, actions and outcomes: frozen value types, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias, final

from ._identity import canonical_json, ordered_args_json

__all__ = [
    "ACTIONS",
    "LLM_ACTIONS",
    "ORIGINS",
    "OUTCOMES",
    "PHASES",
    "SEVERITY",
    "STEP_CLASSES",
    "STEP_KINDS",
    "TOOL_ACTIONS",
    "Action",
    "Done",
    "DoneStep",
    "LLMCall",
    "LLMStep",
    "Message",
    "MessageStep",
    "Outcome",
    "PhaseStep",
    "Rejected",
    "RejectedStep",
    "ReplayResult",
    "RunExpect",
    "Step",
    "StepExpect",
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
    "run_end",
]

Action = Literal["allow", "warn", "block", "stop", "compact", "retry", "compact_retry", "fail"]
Outcome = Literal["completed", "stopped", "failed", "exhausted", "incomplete"]
StepKind = Literal["tool", "llm", "phase", "message", "done", "rejected"]
Origin = Literal["user", "harness", "agent"]

TOOL_ACTIONS: Final = ("allow", "warn", "block", "stop")
LLM_ACTIONS: Final = ("allow", "compact", "retry", "compact_retry", "fail")
ACTIONS: Final = ("allow", "warn", "block", "stop", "compact", "retry", "compact_retry", "fail")
OUTCOMES: Final = ("completed", "stopped", "failed", "exhausted", "incomplete")
PHASES: Final = ("explore", "act", "verify", "recover", "done")
STEP_KINDS: Final = ("tool", "llm", "phase", "message", "done", "rejected")
ORIGINS: Final = ("user", "harness", "agent")

# One ordering for both families; a step only mixes them in rare cases (a stop on the step that opens a turn).
SEVERITY: Final[Mapping[str, int]] = MappingProxyType(
    {"allow": 0, "warn": 1, "compact": 2, "block": 3, "retry": 3, "compact_retry": 4, "stop": 5, "fail": 6}
)


@final
@dataclass(frozen=True, slots=True)
class Verdict:
    """What one engine decided about one event: `reason` is a stable code, `message` what the agent sees."""

    engine: str
    action: Action
    reason: str
    message: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "action": self.action,
            "reason": self.reason,
            "message": self.message,
            "data": dict(self.data),
        }


def combine(verdicts: tuple[Verdict, ...] | list[Verdict]) -> Action:
    """The most severe action among the verdicts; `allow` when there are none."""
    action: Action = "allow"
    rank = 0
    for verdict in verdicts:
        r = SEVERITY[verdict.action]
        if r > rank:
            rank, action = r, verdict.action
    return action


def run_end(action: str, verdicts: Sequence[Verdict]) -> tuple[Outcome, str]:
    """How a step whose combined action is `stop` or `fail` ends the run: the outcome and the deciding engine.

    A `fail` is `failed`; a `stop` is `stopped`, or `exhausted` when its verdict says so (max turns or steps).
    """
    ender = next(v for v in verdicts if v.action == action)
    if action == "fail":
        return "failed", ender.engine
    return ("exhausted" if ender.data.get("outcome") == "exhausted" else "stopped"), ender.engine


@final
class ToolCall:
    """A tool call and its identities, computed once per call so engines never re-serialise arguments.

    The canonical identity is computed when the call is built; the as-written one (`ordered`, used by
    `identity: ordered` and for display) on first use, since most runs never ask for it. Treat a call
    as immutable: identities are cached on it.
    """

    __slots__ = ("_ordered", "args", "canonical", "fingerprint", "tool")

    def __init__(self, tool: str, args: Mapping[str, Any], canonical: str, ordered: str | None = None) -> None:
        self.tool = tool
        self.args = args
        self.canonical = canonical  # canonical JSON of args
        self.fingerprint = tool + "\x1f" + canonical  # tool + canonical
        self._ordered = ordered

    @classmethod
    def of(cls, tool: str, args: Mapping[str, Any] | None = None) -> ToolCall:
        a: Mapping[str, Any] = dict(args) if args else {}
        return cls(tool, a, canonical_json(a))

    @property
    def ordered(self) -> str:
        """The compact JSON of the arguments as written (key order kept, `1.0` is not `1`)."""
        if self._ordered is None:
            self._ordered = ordered_args_json(self.args, canonical=self.canonical)
        return self._ordered

    @property
    def ordered_fingerprint(self) -> str:
        """Tool + the as-written arguments."""
        return self.tool + "\x1f" + self.ordered

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCall) and other.ordered_fingerprint == self.ordered_fingerprint

    def __hash__(self) -> int:
        return hash(self.ordered_fingerprint)

    def __repr__(self) -> str:
        return f"ToolCall({self.tool}{self.ordered if self.args else ''})"

    def short(self, width: int = 60) -> str:
        """A one-line rendering for tables: `tool {"a":1}` cut to `width`."""
        text = self.tool if not self.args else f"{self.tool} {self.ordered}"
        return text if len(text) <= width else text[: width - 1] + "…"


@final
@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of a tool call: ok with optional text/tokens/bytes, or an error message.

    `exit_code` is the process's exit status where the tool reports one; the loader already folded it
    into `ok` (a non-zero code with neither `ok` nor `error` written is a failure), so engines that only
    care about success read `ok`, and the few that read the code itself find it here.
    """

    ok: bool = True
    text: str | None = None
    error: str | None = None
    tokens: int | None = None
    bytes: int | None = None
    changed: bool = False
    exit_code: int | None = None

    @property
    def result_text(self) -> str | None:
        """`text`, or `error` for a failed call; None when the result has neither."""
        return self.text if self.ok else (self.error if self.error is not None else self.text)

    @classmethod
    def failure(cls, error: str) -> ToolResult:
        return cls(ok=False, error=error)


OK: Final = ToolResult()


@final
@dataclass(frozen=True, slots=True)
class LLMCall:
    """One call to the model: token counts, or the error the provider returned."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    text: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


@final
@dataclass(frozen=True, slots=True)
class Message:
    """A message in the conversation; `origin` says who wrote a user-role one (a person, the harness, an agent).

    `origin` is None for system and assistant messages unless a log says otherwise; `name` names the
    other agent when `origin` is `agent`.
    """

    role: Literal["user", "system", "assistant"]
    text: str = ""
    origin: Origin | None = None
    name: str | None = None

    @property
    def from_user(self) -> bool:
        """A person's prompt: role user, origin user (the default). Only these reset engines per prompt."""
        return self.role == "user" and self.origin in (None, "user")


@final
@dataclass(frozen=True, slots=True)
class Rejected:
    """A model turn the harness refused (no usable call): a turn with no accepted call."""

    reason: str
    text: str | None = None
    llm: LLMCall | None = None  # the turn's model usage, counted as an `llm` step's


@final
@dataclass(frozen=True, slots=True)
class StepSource:
    """Where an imported step came from: the log file, its JSONL row (or None), its index there."""

    file: str
    row: int | None = None
    index: int | str | None = None


@final
@dataclass(frozen=True, slots=True)
class Done:
    success: bool | None = None
    text: str = ""


@final
@dataclass(frozen=True, slots=True)
class StepExpect:
    """A step expectation: the combined action, and optionally a verdict that must be present."""

    action: str  # an Action or "not_reached"
    engine: str | None = None
    reason: str | None = None
    message: str | None = None  # substring of the verdict's message
    data: Mapping[str, Any] | None = None  # subset of the verdict's data
    short: bool = True  # written as a bare action string


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


@dataclass(frozen=True, slots=True, eq=False)
class _StepFields:
    """The fields every step kind has: its place in the trace, what the trace expects of it, when it happened.

    `agent` names the acting agent in multi-agent logs; `source` points into the log the step was
    imported from. Both are kept and written back, and no engine reads them.
    """

    index: int
    _: KW_ONLY
    expect: StepExpect | None = None
    t: int | None = None  # run clock, milliseconds
    line: int | None = None
    extensions: Mapping[str, Any] = field(default_factory=dict)
    agent: str | None = None
    source: StepSource | None = None


# Each kind's class carries its own payload as a required field and reads None for the payloads of the
# other kinds (class attributes, no storage), so code written against the one-class `Step` (`step.call`,
# `step.llm`, ... on any step) keeps working, and on the `Step` union `step.call` types as `ToolCall | None`.


@final
@dataclass(frozen=True, slots=True, eq=False)
class ToolStep(_StepFields):
    """A tool call and its recorded result (None: not recorded, treated as a plain success)."""

    call: ToolCall
    result: ToolResult | None = None
    kind: ClassVar[Literal["tool"]] = "tool"
    llm: ClassVar[None] = None
    phase: ClassVar[None] = None
    message: ClassVar[None] = None
    done: ClassVar[None] = None
    rejected: ClassVar[None] = None

    @property
    def outcome(self) -> ToolResult:
        """The call's result, defaulting to a plain success."""
        return self.result if self.result is not None else OK

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return self.call.short(width)


@final
@dataclass(frozen=True, slots=True, eq=False)
class LLMStep(_StepFields):
    """A call to the model."""

    llm: LLMCall
    kind: ClassVar[Literal["llm"]] = "llm"
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    phase: ClassVar[None] = None
    message: ClassVar[None] = None
    done: ClassVar[None] = None
    rejected: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return f"llm error: {self.llm.error}"[:width] if self.llm.error else "llm"


@final
@dataclass(frozen=True, slots=True, eq=False)
class PhaseStep(_StepFields):
    """The agent entering a phase (one of `PHASES`)."""

    phase: str
    kind: ClassVar[Literal["phase"]] = "phase"
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    llm: ClassVar[None] = None
    message: ClassVar[None] = None
    done: ClassVar[None] = None
    rejected: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return f"phase {self.phase}"


@final
@dataclass(frozen=True, slots=True, eq=False)
class MessageStep(_StepFields):
    """A message in the conversation."""

    message: Message
    kind: ClassVar[Literal["message"]] = "message"
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    llm: ClassVar[None] = None
    phase: ClassVar[None] = None
    done: ClassVar[None] = None
    rejected: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        m = self.message
        who = m.role if m.origin in (None, "user") else f"{m.role}, {m.origin}"
        return f"message ({who})"


@final
@dataclass(frozen=True, slots=True, eq=False)
class DoneStep(_StepFields):
    """The agent declaring the task done."""

    done: Done
    kind: ClassVar[Literal["done"]] = "done"
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    llm: ClassVar[None] = None
    phase: ClassVar[None] = None
    message: ClassVar[None] = None
    rejected: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return "done"


@final
@dataclass(frozen=True, slots=True, eq=False)
class RejectedStep(_StepFields):
    """A model turn the harness refused."""

    rejected: Rejected
    kind: ClassVar[Literal["rejected"]] = "rejected"
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    llm: ClassVar[None] = None
    phase: ClassVar[None] = None
    message: ClassVar[None] = None
    done: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return f"rejected: {self.rejected.reason}"[:width]


STEP_CLASSES: Final[Mapping[str, Callable[..., Step]]] = MappingProxyType({
    "tool": ToolStep, "llm": LLMStep, "phase": PhaseStep, "message": MessageStep, "done": DoneStep,
    "rejected": RejectedStep,
})
# the payload field of each kind but `tool` (which has two: call and result)
_PAYLOAD: Final[Mapping[str, str]] = MappingProxyType(
    {"llm": "llm", "phase": "phase", "message": "message", "done": "done", "rejected": "rejected"}
)

if TYPE_CHECKING:
    Step: TypeAlias = ToolStep | LLMStep | PhaseStep | MessageStep | DoneStep | RejectedStep


def make_step(
    index: int,
    kind: str,
    *,
    call: ToolCall | None = None,
    result: ToolResult | None = None,
    llm: LLMCall | None = None,
    phase: str | None = None,
    message: Message | None = None,
    done: Done | None = None,
    rejected: Rejected | None = None,
    expect: StepExpect | None = None,
    t: int | None = None,
    line: int | None = None,
    extensions: Mapping[str, Any] | None = None,
    agent: str | None = None,
    source: StepSource | None = None,
) -> Step:
    """A step of the kind named at run time, from the payload that kind needs (the others must be None).

    For code that learns the kind from data (a recorder, a log importer); code that knows it builds the
    kind's class (`ToolStep(index, call, result)`) directly.
    """
    payloads = {"llm": llm, "phase": phase, "message": message, "done": done, "rejected": rejected}
    common: dict[str, Any] = {"expect": expect, "t": t, "line": line, "agent": agent, "source": source,
                              "extensions": {} if extensions is None else extensions}
    if kind == "tool":
        extra = [k for k, v in payloads.items() if v is not None]
        if call is None or extra:
            raise TypeError(f"a tool step takes `call` (and `result`), not {', '.join(extra) or 'no call'}")
        return ToolStep(index, call, result, **common)
    cls = STEP_CLASSES.get(kind)
    if cls is None:
        raise ValueError(f"unknown step kind {kind!r}; expected one of {', '.join(STEP_KINDS)}")
    name = _PAYLOAD[kind]
    payload = payloads.pop(name)
    extra = [k for k, v in (*payloads.items(), ("call", call), ("result", result)) if v is not None]
    if payload is None or extra:
        raise TypeError(f"a {kind} step takes `{name}`, not {', '.join(extra) or f'no {name}'}")
    return cls(index, payload, **common)


def _legacy_step(index: int, kind: str, call: ToolCall | None = None, result: ToolResult | None = None,
                 llm: LLMCall | None = None, phase: str | None = None, message: Message | None = None,
                 done: Done | None = None, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None,
                 rejected: Rejected | None = None, agent: str | None = None,
                 source: StepSource | None = None) -> Step:
    """`Step(...)` as the one-class constructor took it (positions included)."""
    return make_step(index, kind, call=call, result=result, llm=llm, phase=phase, message=message, done=done,
                     rejected=rejected, expect=expect, t=t, line=line, extensions=extensions, agent=agent,
                     source=source)


# `Step` at run time: a class object for which `isinstance(x, Step)` holds for a step of any kind and whose call
# `Step(index, kind, ...)` (the constructor of the one class steps were before they were typed) builds the class
# of `kind`; mypy sees the union above. Made with `type()` and bound through globals() because mypyc compiles
# this module: it compiles no `class ...(type)` statement, and no code in the runtime branch of TYPE_CHECKING.
_StepUnion = type("_StepUnion", (type,), {
    "__call__": staticmethod(_legacy_step),
    "__instancecheck__": staticmethod(lambda obj: isinstance(obj, _StepFields)),
    "__subclasscheck__": staticmethod(lambda sub: issubclass(sub, _StepFields)),
})
globals()["Step"] = _StepUnion("Step", (), {
    "__slots__": (), "__module__": __name__,
    "__doc__": "One event of a trace: a ToolStep, LLMStep, PhaseStep, MessageStep, DoneStep or RejectedStep, as "
               "its `kind` says.",
})


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
    """The verdicts of one step and their combined action (`not_reached` after the run ended).

    A plain slots class, immutable by convention: a replay can make one per step.
    """

    __slots__ = ("action", "index", "kind", "tool", "verdicts")

    def __init__(
        self, index: int, kind: str, tool: str | None, action: str, verdicts: tuple[Verdict, ...] = ()
    ) -> None:
        self.index = index
        self.kind = kind
        self.tool = tool
        self.action = action
        self.verdicts = verdicts

    def _key(self) -> tuple[int, str, str | None, str, tuple[Verdict, ...]]:
        return self.index, self.kind, self.tool, self.action, self.verdicts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StepResult) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"StepResult(index={self.index!r}, kind={self.kind!r}, tool={self.tool!r}, action={self.action!r}, "
                f"verdicts={self.verdicts!r})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": self.kind,
            "tool": self.tool,
            "action": self.action,
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


@final
class ReplayResult:
    """One replay: the verdict timeline and the run's outcome.

    A replay records per step only its action, and verdicts where there are any (`ReplayResult.of_actions`);
    the `StepResult` timeline (`steps`) is built from that on first use, since many readers only count.
    Immutable by convention.
    """

    __slots__ = ("_actions", "_steps", "_verdicts", "outcome", "policy", "step_counts", "stopped_at", "stopped_by",
                 "trace")

    def __init__(
        self,
        trace: Trace,
        policy: str,
        outcome: Outcome,
        stopped_at: int | None,
        stopped_by: str | None,
        steps: tuple[StepResult, ...],
        step_counts: Mapping[str, int] | None = None,  # a streamed replay keeps these instead of the steps
    ) -> None:
        self.trace = trace
        self.policy = policy
        self.outcome = outcome
        self.stopped_at = stopped_at
        self.stopped_by = stopped_by
        self.step_counts = step_counts
        self._steps: tuple[StepResult, ...] | None = steps
        self._actions: Sequence[str] = ()
        self._verdicts: Mapping[int, tuple[Verdict, ...]] = {}

    @classmethod
    def of_actions(
        cls,
        trace: Trace,
        policy: str,
        outcome: Outcome,
        stopped_at: int | None,
        stopped_by: str | None,
        actions: Sequence[str],
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

    def counts(self) -> dict[str, int]:
        """Steps per combined action (every step, `not_reached` included)."""
        if self.step_counts is not None:
            return dict(self.step_counts)
        out: dict[str, int] = {}
        for action in self._actions if self._steps is None else (s.action for s in self._steps):
            out[action] = out.get(action, 0) + 1
        return out

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
        return {
            "trace": self.trace.name,
            "policy": self.policy,
            "outcome": self.outcome,
            "stopped_at": self.stopped_at,
            "stopped_by": self.stopped_by,
            "steps": [s.to_dict() for s in self.steps],
        }
