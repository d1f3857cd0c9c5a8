"""What engines may read about the run they belong to: the run context, its turns and its virtual clock.

This module sits below the engine contract (`hookspecs`, `engines.base`) and the engines, and above the
model, so the layers read model → run → engine contract → engines → runtime → replay, with no import
running back up, not even for type checking: the Guard (`runtime`) builds a `RunContext` and hands it to
the engines it builds, and what the run needs of the policy and of one engine is declared here as a
Protocol (`PolicyView`, `ReadRegions`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, Protocol, final

from .._mypyc import mypyc_attr
from ._classify import Classifier, Kind, shell_line, target_of
from ._conversation import PromptView, Transcript
from ._model import LLMCall, Task, ToolCall, ToolResult
from ._targets import CallTarget

__all__ = ["Clock", "PolicyView", "ReadRegions", "Region", "RunContext", "Turn"]

_OPENER: Final = re.compile(r"(?:^|[\s;&|(])(?:open|create)\s")
# the per-policy target cache keeps at most this many distinct calls: a long run of ever-new calls stays
# bounded, and a forgotten entry is only computed again (a target is a pure function of call and policy)
CACHE_LIMIT: Final = 4096


Region = tuple[Any, Any, Any]  # a read's (path as given, offset, limit)


class PolicyView(Protocol):
    """What a run may read of the policy it runs under (the runtime's `Policy` is one)."""

    @property
    def name(self) -> str: ...

    def settings(self, engine: str) -> Any:
        """An enabled engine's settings; KeyError when it is not enabled."""
        ...

    def enabled(self, engine: str) -> bool: ...


class ReadRegions(Protocol):
    """The file regions a run has read, offered to the other engines by the engine that keeps them
    (`read_tracker`, as `RunContext.reads`): the context engine lists them again after a compaction."""

    @property
    def regions(self) -> list[Region]:
        """Every region read so far, in first-read order."""
        ...

    def recent_regions(self) -> Iterator[Region]:
        """The regions read so far, most recently first read first, without a copy (a reader stops early)."""
        ...


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
# compiled, untracked by the collector: a turn's calls, results and model call never refer back to it, so it is
# never in a reference cycle (the Guard keeps every turn for the prompt view until it is read)
@mypyc_attr(acyclic=True)
class Turn:
    """One model response and the tool calls it asked for."""

    __slots__ = ("calls", "index", "llm", "results")

    def __init__(
        self,
        index: int,
        calls: tuple[ToolCall, ...],
        results: list[ToolResult | None] | None = None,  # None: blocked
        llm: LLMCall | None = None,
    ) -> None:
        self.index = index
        self.calls = calls
        self.results: list[ToolResult | None] = [] if results is None else results
        self.llm = llm

    def message_text(self) -> str:
        """The assistant message of the turn: the model's text, then each call as the model wrote it."""
        llm = self.llm
        return "\n".join([*([llm.text] if llm is not None and llm.text else []),
                          *(f"{c.tool}({c.ordered})" for c in self.calls)])

    def __repr__(self) -> str:
        return f"Turn(index={self.index!r}, calls={self.calls!r}, results={self.results!r}, llm={self.llm!r})"


@final
class RunContext:
    """What engines may read about the run they belong to, and what its engines offer one another."""

    __slots__ = (
        "_target",
        "_target_call",
        "calls",
        "classifier",
        "clock",
        "engines",
        "name",
        "objective",
        "open_file",
        "policy",
        "reads",
        "step",
        "task",
        "trace_context",
        "transcript",
        "turn",
        "turns",
        "view",
    )

    def __init__(
        self,
        policy: PolicyView,
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
        self.transcript = Transcript()  # filled only when the Guard keeps a transcript (`keep_transcript`)
        # the run's engines by name, for whatever inspects a run (tests, tools); an engine reaches another only
        # through what that one offers in a slot declared here (`reads`), never by name
        self.engines: dict[str, object] = {}
        self.reads: ReadRegions | None = None  # offered by the read tracker when the policy enables it
        self.turn: Turn | None = None
        self.turns = 0  # turns started so far
        self.calls = 0  # tool calls seen so far (blocked ones included)
        self.open_file: str | None = None  # the file a SWE-agent `open F` made current in this run
        self.name = ""  # the run's name (a trace's), for what reports on it from outside (an external guard)
        self.step: int | None = None  # the index of the step whose events are being fed (None: a live event)
        # the last call `target` answered and its (unresolved) target: several engines ask of the same call
        self._target_call: ToolCall | None = None
        self._target: CallTarget | None = None

    def kind(self, call: ToolCall) -> Kind:
        """The call's kind by the policy's table (the classifier caches per tool what needs no arguments)."""
        # engines ask this several times per call: the cached answer without a further call
        kind = self.classifier.kinds.get(call.tool)
        return kind if kind is not None else self.classifier.kind(call)

    def target(self, call: ToolCall) -> CallTarget:
        """The call's effect, verb and targets by the policy's tool table; cached on the call's identity.

        Commands that act on the open file (SWE-agent `goto`, `edit`) get the file the run has open now.
        """
        # cached per policy (its classifier), so the runs of a corpus share what they have in common; keyed
        # on the canonical fingerprint, computed with every call (the as-written one only on demand): a
        # target reads argument values, never their order, so equal keys mean equal targets
        t = self._target
        if call is not self._target_call or t is None:
            cache = self.classifier.targets
            key = call.fingerprint
            t = cache.get(key)
            if t is None:
                t = target_of(call, self.classifier)
                if len(cache) >= CACHE_LIMIT:
                    cache.clear()
                cache[key] = t
            self._target_call, self._target = call, t
        return t.resolved(self.open_file) if t.on_open else t

    def ran(self, call: ToolCall) -> None:
        """Note a call that ran: an `open F` makes F the open file for the calls after it."""
        # only shell lines that mention an opener need reading: this runs after every call
        rule = self.classifier.locator(call)
        line = shell_line(call.args.get(rule.shell)) if rule is not None and rule.shell is not None else None
        # the substring tests first: `_OPENER` tries every position, a few hundred ms on a line of megabytes
        if line is not None and ("open" in line or "create" in line) and _OPENER.search(line):
            opened = self.target(call).opened()
            if opened is not None:
                self.open_file = opened
