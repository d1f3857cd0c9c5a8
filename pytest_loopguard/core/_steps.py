"""A trace's events: one frozen class per step kind, `Step` being their union, and `make_step`; what a step
carries (`core._payloads`) is re-exported here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias, final

from ._frozen import Frozen, frozen_identity
from ._payloads import (
    CHANGED_ONLY,
    OK,
    Compaction,
    Done,
    LLMCall,
    Message,
    NotRun,
    Origin,
    Rejected,
    StepExpect,
    StepSource,
    ToolCall,
    ToolResult,
)

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

PHASES: Final = ("explore", "act", "verify", "recover", "done")
STEP_KINDS: Final = ("tool", "llm", "phase", "message", "done", "rejected", "compacted")
ORIGINS: Final = ("user", "harness", "agent")
# why a call never ran: a person or rule refused it; its batch failed; the recording's own policy blocked it live
# (what it would have returned is unknown: a replay under a looser policy has no result to feed)
NOT_RUN_HOWS: Final = ("denied", "cancelled", "blocked")
DENIED_BY: Final = ("user", "rule")
TRIGGERS: Final = ("auto", "manual")
_set: Final = object.__setattr__  # a frozen class's __init__ sets its slots past its own __setattr__


def _common(step: object, index: int, kind: str | None, expect: StepExpect | None, t: int | None, line: int | None,
            extensions: Mapping[str, Any] | None, agent: str | None, source: StepSource | None) -> None:
    """Set the fields every step kind has (and `kind`, but on the base class, which has none)."""
    _set(step, "index", index)
    if kind is not None:
        _set(step, "kind", kind)
    _set(step, "expect", expect)
    _set(step, "t", t)
    _set(step, "line", line)
    _set(step, "extensions", {} if extensions is None else extensions)
    _set(step, "agent", agent)
    _set(step, "source", source)


@frozen_identity
class _StepFields(Frozen):
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

    def __init__(self, index: int, *, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None, agent: str | None = None,
                 source: StepSource | None = None) -> None:
        _common(self, index, None, expect, t, line, extensions, agent, source)


# Each kind's class carries its own payload as a required field and reads None for the payloads of the
# other kinds (class attributes, no storage), so code written against the one-class `Step` (`step.call`,
# `step.llm`, ... on any step) keeps working, and on the `Step` union `step.call` types as `ToolCall | None`.
# `kind` is a field (a slot, set by __init__), not a class attribute: the replay reads it for every step, and
# CPython 3.11 reads a slot faster than a class attribute through an instance.


@final
@frozen_identity
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

    def __init__(self, index: int, call: ToolCall, result: ToolResult | None = None, not_run: NotRun | None = None,
                 *, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None, agent: str | None = None,
                 source: StepSource | None = None) -> None:
        _set(self, "call", call)
        _set(self, "result", result)
        _set(self, "not_run", not_run)
        _common(self, index, "tool", expect, t, line, extensions, agent, source)

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
@frozen_identity
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

    def __init__(self, index: int, llm: LLMCall, *, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None, agent: str | None = None,
                 source: StepSource | None = None) -> None:
        _set(self, "llm", llm)
        _common(self, index, "llm", expect, t, line, extensions, agent, source)

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return f"llm error: {self.llm.error}"[:width] if self.llm.error else "llm"


@final
@frozen_identity
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

    def __init__(self, index: int, phase: str, *, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None, agent: str | None = None,
                 source: StepSource | None = None) -> None:
        _set(self, "phase", phase)
        _common(self, index, "phase", expect, t, line, extensions, agent, source)

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return f"phase {self.phase}"


@final
@frozen_identity
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

    def __init__(self, index: int, message: Message, *, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None, agent: str | None = None,
                 source: StepSource | None = None) -> None:
        _set(self, "message", message)
        _common(self, index, "message", expect, t, line, extensions, agent, source)

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        m = self.message
        who = m.role if m.origin in (None, "user") else f"{m.role}, {m.origin}"
        return f"message ({who})"


@final
@frozen_identity
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

    def __init__(self, index: int, done: Done, *, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None, agent: str | None = None,
                 source: StepSource | None = None) -> None:
        _set(self, "done", done)
        _common(self, index, "done", expect, t, line, extensions, agent, source)

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return "done"


@final
@frozen_identity
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

    def __init__(self, index: int, rejected: Rejected, *, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None, agent: str | None = None,
                 source: StepSource | None = None) -> None:
        _set(self, "rejected", rejected)
        _common(self, index, "rejected", expect, t, line, extensions, agent, source)

    def label(self, width: int = 60) -> str:
        """How the step reads in a table."""
        return f"rejected: {self.rejected.reason}"[:width]


@final
@frozen_identity
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

    def __init__(self, index: int, compacted: Compaction, *, expect: StepExpect | None = None, t: int | None = None,
                 line: int | None = None, extensions: Mapping[str, Any] | None = None, agent: str | None = None,
                 source: StepSource | None = None) -> None:
        _set(self, "compacted", compacted)
        _common(self, index, "compacted", expect, t, line, extensions, agent, source)

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
