"""The engine interface: pluggy hook specifications, the one place that says what an engine may do.

An engine is an object whose methods are `@hookimpl`-decorated implementations of some of these hooks.
The Guard builds fresh engine instances for every run, so an engine only ever sees one run, and calls
them as pluggy calls a per-run plugin manager's plugins: same implementations, order, arguments and
answers (`runtime/_dispatch.py` does it without a plugin manager when no plugin or pluggy mark needs one).
Verdict-returning hooks may return a `Verdict`, a list of them, or None; every verdict is kept and the
step's action is the most severe one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

import pluggy

if TYPE_CHECKING:
    from ._classify import ToolRule
    from ._conversation import PromptView
    from ._model import Done, LLMCall, Message, Rejected, ToolCall, ToolResult
    from ._runcontext import Turn

__all__ = ["PROJECT", "hookimpl", "hookspec", "impl_options"]

PROJECT = "loopguard"
hookspec = pluggy.HookspecMarker(PROJECT)

# What pluggy's marker could not mark: a method compiled by mypyc (the compiled build's engines) takes no
# attributes, so its options are kept here, by the method itself, and read with `impl_options`.
_MARKED: dict[object, Any] = {}
_F = TypeVar("_F", bound=Callable[..., object])


class _HookimplMarker:
    """pluggy's `HookimplMarker`, which also marks a compiled method (one that takes no attributes)."""

    def __init__(self, project_name: str) -> None:
        self.project_name = project_name
        self._marker = pluggy.HookimplMarker(project_name)

    @overload
    def __call__(self, function: _F, **options: Any) -> _F: ...
    @overload
    def __call__(self, function: None = None, **options: Any) -> Callable[[_F], _F]: ...
    def __call__(self, function: _F | None = None, **options: Any) -> _F | Callable[[_F], _F]:
        mark = self._marker(**options)

        def marked(fn: _F) -> _F:
            try:
                mark(fn)  # pluggy sets its options as an attribute of `fn`
            except AttributeError:  # a compiled method: the options pluggy would have set, kept here
                _MARKED[fn] = getattr(mark(_probe), _IMPL_ATTR)
            return fn

        return marked if function is None else marked(function)


def _probe() -> None:
    """What the marker marks to read the options it gives (a fresh attribute each time)."""


_IMPL_ATTR = PROJECT + "_impl"
hookimpl = _HookimplMarker(PROJECT)


def impl_options(function: object) -> Any:
    """The options `@hookimpl` gave `function` (pluggy's attribute, or what a compiled method keeps), or None."""
    options = getattr(function, _IMPL_ATTR, None)
    return options if options is not None else _MARKED.get(function)


@hookspec
def loopguard_tool_rules() -> list[ToolRule]:  # type: ignore[empty-body]
    """Called once per run: extra classification rules, consulted before the policy's own table."""


@hookspec(firstresult=True)
def loopguard_count_tokens(text: str) -> int | None:
    """Called when the context engine needs a token count of `text` that the trace did not give.

    The first non-None answer wins; without one the count is ceil(len(text) / 4).
    """


@hookspec
def loopguard_turn_start(turn: Turn) -> Any:
    """Called when a turn starts (after the model answered), with all the turn's calls.

    May return verdicts; they land on the step that starts the turn. A `stop` with
    `data["outcome"] == "exhausted"` ends the run as exhausted.
    """


@hookspec
def loopguard_before_call(call: ToolCall, result: ToolResult | None) -> Any:
    """Called before a tool call runs. May return verdicts: `block` skips the call, `stop` ends the run.

    `result` is None, or a hint whose only meaningful field is `changed` (the file changed outside the
    agent: a fact known before the call). Replay never passes the recorded outcome here, so engines
    cannot decide on what the call would return.
    """


@hookspec
def loopguard_after_call(call: ToolCall, result: ToolResult | None, blocked: bool) -> Any:
    """Called after a tool call ran (`blocked=False`, with its result) or was blocked (`result=None`).

    May return `warn` verdicts (attached to the result) or `stop` verdicts (the run ends after this call).
    """


@hookspec
def loopguard_turn_end(turn: Turn) -> None:
    """Called when a turn's calls are all done, before the next model call or at the end of the run."""


@hookspec
def loopguard_before_llm(llm: LLMCall, view: PromptView) -> Any:
    """Called before each model call with the prompt view: dedup and pre-prompt compaction happen here.

    May return `compact` verdicts.
    """


@hookspec
def loopguard_llm_result(llm: LLMCall, view: PromptView) -> Any:
    """Called after each model call, failed (`llm.error`) or not. May return `compact_retry`, `retry`, `fail`."""


@hookspec
def loopguard_compacted(view: PromptView) -> Any:
    """Called after any compaction of the prompt view (engines that remember context forget it here).

    May return verdicts (stuck_detector's condensation rule); they land on the `llm` step that compacted.
    """


@hookspec
def loopguard_phase(phase: str) -> Any:
    """Called when the task phase changes (`phase` steps). May return verdicts."""


@hookspec
def loopguard_message(message: Message) -> Any:
    """Called for each message. Only a person's prompt (`message.from_user`: role user, origin user)
    starts a new prompt: engines that reset per prompt do so then, never for harness or agent messages."""


@hookspec
def loopguard_rejected(rejected: Rejected) -> Any:
    """Called for a model turn the harness refused (a `rejected` step): a turn with no accepted call.

    It comes after the turn's model usage went through `loopguard_before_llm`/`loopguard_llm_result`
    (when the step gives `llm`) and after the previous turn ended. May return verdicts.
    """


@hookspec
def loopguard_done(done: Done) -> Any:
    """Called when the agent gives its final answer. May return verdicts."""


@hookspec
def loopguard_not_run(call: ToolCall) -> None:
    """Called instead of `loopguard_after_call` for a call the engines allowed that never ran: a person or a
    permission rule denied it, or its batch was cancelled. Its turn counts it as a call without a result.
    Verdicts are ignored: nothing ran to judge (an external guard hears of it; no built-in engine needs to)."""


@hookspec
def loopguard_run_end(outcome: str | None) -> None:
    """Called once when the run ends (`outcome`: completed, stopped, failed, exhausted, incomplete; None when
    the driver closed it before deciding). For what holds resources across a run, such as an external
    guard's process; verdicts are ignored."""
