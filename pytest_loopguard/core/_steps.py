"""A trace's events: what a step carries (a tool call and its result, a model call, a message, ...) and one frozen
class per step kind, `Step` being their union."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias, final

from ._identity import canonical_json, ordered_args_json

__all__ = [
    "DENIED_BY",
    "NOT_RUN_HOWS",
    "OK",
    "ORIGINS",
    "PHASES",
    "STEP_CLASSES",
    "STEP_KINDS",
    "TRIGGERS",
    "CompactedStep",
    "Compaction",
    "Done",
    "DoneStep",
    "LLMCall",
    "LLMStep",
    "Message",
    "MessageStep",
    "NotRun",
    "Origin",
    "PhaseStep",
    "Rejected",
    "RejectedStep",
    "Step",
    "StepExpect",
    "StepKind",
    "StepSource",
    "ToolCall",
    "ToolResult",
    "ToolStep",
    "make_step",
]

StepKind = Literal["tool", "llm", "phase", "message", "done", "rejected", "compacted"]
Origin = Literal["user", "harness", "agent"]

PHASES: Final = ("explore", "act", "verify", "recover", "done")
STEP_KINDS: Final = ("tool", "llm", "phase", "message", "done", "rejected", "compacted")
ORIGINS: Final = ("user", "harness", "agent")
# why a call never ran: a person or rule refused it; its batch failed; the recording's own policy blocked it live
# (what it would have returned is unknown: a replay under a looser policy has no result to feed)
NOT_RUN_HOWS: Final = ("denied", "cancelled", "blocked")
DENIED_BY: Final = ("user", "rule")
TRIGGERS: Final = ("auto", "manual")


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
CHANGED_ONLY: Final = ToolResult(changed=True)  # all a call that never ran may hold: its file changed before it


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
class NotRun:
    """Why a call the agent made never ran: `denied` (by a person, `user`, or a permission `rule`),
    `cancelled` (another call of its batch failed first) or `blocked` (the recording's policy blocked it live;
    `reason` is the blocking verdict's reason code). Such a call has no result: a replay whose policy lets a
    blocked one run has none to feed (`ReplayResult.unknown_results`)."""

    how: Literal["denied", "cancelled", "blocked"]
    reason: str
    by: Literal["user", "rule"] | None = None  # who denied it; a cancelled call names no one


@final
@dataclass(frozen=True, slots=True)
class Compaction:
    """The log's own compaction event: the real agent compacted its context here (`trigger` auto or manual,
    `tokens_before` the context's size before, `text` the summary that replaced it)."""

    trigger: Literal["auto", "manual"] | None = None
    tokens_before: int | None = None
    text: str | None = None


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
    # the agent heeds the step's warning or block: none of its next this-many calls repeats the step's call
    heeded_within: int | None = None


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
# `kind` is a field (a slot, set by __init__), not a class attribute: the replay reads it for every step, and
# CPython 3.11 reads a slot faster than a class attribute through an instance.


@final
@dataclass(frozen=True, slots=True, eq=False)
class ToolStep(_StepFields):
    """A tool call and its recorded result (None: not recorded, treated as a plain success), or why it never
    ran (`not_run`: denied or cancelled; then it has no result)."""

    call: ToolCall
    result: ToolResult | None = None
    not_run: NotRun | None = None
    kind: Literal["tool"] = field(default="tool", init=False, repr=False)
    llm: ClassVar[None] = None
    phase: ClassVar[None] = None
    message: ClassVar[None] = None
    done: ClassVar[None] = None
    rejected: ClassVar[None] = None
    compacted: ClassVar[None] = None

    @property
    def outcome(self) -> ToolResult:
        """The call's result, defaulting to a plain success."""
        return self.result if self.result is not None else OK

    def label(self, width: int = 60) -> str:
        """How the step reads in a table: the call, after why it never ran (`denied by user: bash {...}`)."""
        n = self.not_run
        if n is None or n.how == "blocked":  # blocked live: replay blocks it again, or says it is a what-if
            return self.call.short(width)
        head = f"{n.how} by {n.by}: " if n.by is not None else f"{n.how}: "
        return head + self.call.short(max(width - len(head), 8))


@final
@dataclass(frozen=True, slots=True, eq=False)
class LLMStep(_StepFields):
    """A call to the model."""

    llm: LLMCall
    kind: Literal["llm"] = field(default="llm", init=False, repr=False)
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    phase: ClassVar[None] = None
    message: ClassVar[None] = None
    done: ClassVar[None] = None
    rejected: ClassVar[None] = None
    compacted: ClassVar[None] = None
    not_run: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return f"llm error: {self.llm.error}"[:width] if self.llm.error else "llm"


@final
@dataclass(frozen=True, slots=True, eq=False)
class PhaseStep(_StepFields):
    """The agent entering a phase (one of `PHASES`)."""

    phase: str
    kind: Literal["phase"] = field(default="phase", init=False, repr=False)
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    llm: ClassVar[None] = None
    message: ClassVar[None] = None
    done: ClassVar[None] = None
    rejected: ClassVar[None] = None
    compacted: ClassVar[None] = None
    not_run: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return f"phase {self.phase}"


@final
@dataclass(frozen=True, slots=True, eq=False)
class MessageStep(_StepFields):
    """A message in the conversation."""

    message: Message
    kind: Literal["message"] = field(default="message", init=False, repr=False)
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    llm: ClassVar[None] = None
    phase: ClassVar[None] = None
    done: ClassVar[None] = None
    rejected: ClassVar[None] = None
    compacted: ClassVar[None] = None
    not_run: ClassVar[None] = None

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
    kind: Literal["done"] = field(default="done", init=False, repr=False)
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    llm: ClassVar[None] = None
    phase: ClassVar[None] = None
    message: ClassVar[None] = None
    rejected: ClassVar[None] = None
    compacted: ClassVar[None] = None
    not_run: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return "done"


@final
@dataclass(frozen=True, slots=True, eq=False)
class RejectedStep(_StepFields):
    """A model turn the harness refused."""

    rejected: Rejected
    kind: Literal["rejected"] = field(default="rejected", init=False, repr=False)
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    llm: ClassVar[None] = None
    phase: ClassVar[None] = None
    message: ClassVar[None] = None
    done: ClassVar[None] = None
    compacted: ClassVar[None] = None
    not_run: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return f"rejected: {self.rejected.reason}"[:width]


@final
@dataclass(frozen=True, slots=True, eq=False)
class CompactedStep(_StepFields):
    """Where the real agent compacted its context (the log's own event): no engine hears it, reports show it."""

    compacted: Compaction
    kind: Literal["compacted"] = field(default="compacted", init=False, repr=False)
    call: ClassVar[None] = None
    result: ClassVar[None] = None
    llm: ClassVar[None] = None
    phase: ClassVar[None] = None
    message: ClassVar[None] = None
    done: ClassVar[None] = None
    rejected: ClassVar[None] = None
    not_run: ClassVar[None] = None

    def label(self, width: int = 60) -> str:
        """How the step reads in a table: `compacted (auto, 155,000 tokens)`."""
        c = self.compacted
        details = [d for d in (c.trigger, f"{c.tokens_before:,} tokens" if c.tokens_before is not None else None)
                   if d is not None]
        text = f"compacted ({', '.join(details)})" if details else "compacted"
        return text if len(text) <= width else text[: width - 1] + "…"


STEP_CLASSES: Final[Mapping[str, Callable[..., Step]]] = MappingProxyType({
    "tool": ToolStep, "llm": LLMStep, "phase": PhaseStep, "message": MessageStep, "done": DoneStep,
    "rejected": RejectedStep, "compacted": CompactedStep,
})
# the payload field of each kind but `tool` (which has two: call and result)
_PAYLOAD: Final[Mapping[str, str]] = MappingProxyType(
    {"llm": "llm", "phase": "phase", "message": "message", "done": "done", "rejected": "rejected",
     "compacted": "compacted"}
)

if TYPE_CHECKING:
    Step: TypeAlias = ToolStep | LLMStep | PhaseStep | MessageStep | DoneStep | RejectedStep | CompactedStep


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
    compacted: Compaction | None = None,
    not_run: NotRun | None = None,
) -> Step:
    """A step of the kind named at run time, from the payload that kind needs (the others must be None).

    For code that learns the kind from data (a recorder, a log importer); code that knows it builds the
    kind's class (`ToolStep(index, call, result)`) directly.
    """
    payloads = {"llm": llm, "phase": phase, "message": message, "done": done, "rejected": rejected,
                "compacted": compacted}
    common: dict[str, Any] = {"expect": expect, "t": t, "line": line, "agent": agent, "source": source,
                              "extensions": {} if extensions is None else extensions}
    if kind == "tool":
        extra = [k for k, v in payloads.items() if v is not None]
        if call is None or extra:
            raise TypeError(f"a tool step takes `call` (and `result` or `not_run`), "
                            f"not {', '.join(extra) or 'no call'}")
        if not_run is not None and result is not None and (not_run.how != "blocked" or result != CHANGED_ONLY):
            # a blocked one may hold what was known before it ran: whether its file changed outside
            raise TypeError(f"a call that never ran ({not_run.how}) has no `result`"
                            + (" but `changed`" if not_run.how == "blocked" else ""))
        return ToolStep(index, call, result, not_run, **common)
    cls = STEP_CLASSES.get(kind)
    if cls is None:
        raise ValueError(f"unknown step kind {kind!r}; expected one of {', '.join(STEP_KINDS)}")
    name = _PAYLOAD[kind]
    payload = payloads.pop(name)
    extra = [k for k, v in (*payloads.items(), ("call", call), ("result", result), ("not_run", not_run))
             if v is not None]
    if payload is None or extra:
        raise TypeError(f"a `{kind}` step takes `{name}`, not {', '.join(extra) or f'no {name}'}")
    return cls(index, payload, **common)


def _legacy_step(index: int, kind: str, call: ToolCall | None = None, result: ToolResult | None = None,
                 llm: LLMCall | None = None, phase: str | None = None, message: Message | None = None,
                 done: Done | None = None, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None,
                 rejected: Rejected | None = None, agent: str | None = None,
                 source: StepSource | None = None, compacted: Compaction | None = None,
                 not_run: NotRun | None = None) -> Step:
    """`Step(...)` as the one-class constructor took it (positions included)."""
    return make_step(index, kind, call=call, result=result, llm=llm, phase=phase, message=message, done=done,
                     rejected=rejected, expect=expect, t=t, line=line, extensions=extensions, agent=agent,
                     source=source, compacted=compacted, not_run=not_run)


# `Step` at run time: a class object for which `isinstance(x, Step)` holds for a step of any kind and whose call
# `Step(index, kind, ...)` (the constructor of the one class steps were before they were typed) builds the class
# of `kind`; mypy sees the union above. Made with `type()` and bound through globals() because the compiled
# build's mypyc compiles no `class ...(type)` statement, and no code in the run-time branch of TYPE_CHECKING.
_StepUnion = type("_StepUnion", (type,), {
    "__call__": staticmethod(_legacy_step),
    "__instancecheck__": staticmethod(lambda obj: isinstance(obj, _StepFields)),
    "__subclasscheck__": staticmethod(lambda sub: issubclass(sub, _StepFields)),
})
globals()["Step"] = _StepUnion("Step", (), {
    "__slots__": (), "__module__": __name__,
    "__doc__": "One event of a trace: a ToolStep, LLMStep, PhaseStep, MessageStep, DoneStep, RejectedStep or "
               "CompactedStep, as its `kind` says.",
})
