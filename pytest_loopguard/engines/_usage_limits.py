"""failure_tracker's usage limits: Pydantic AI's tool retries and tool-call limit, LangChain's per-tool call limits.

- tool retries (`tool_retries`): each tool has a count; at the end of each turn a tool with a failed call in
  it gets +1 (once per turn), else a tool with a call that succeeded in it goes back to 0. A failed call of
  a tool whose count, as it stood at its turn's start, is at least `tool_retries` stops the run
  (`failure_tracker.tool_retries`);
- the tool-call limit (`tool_calls_limit`): before a turn's calls run, the calls that ran and succeeded so
  far plus the turn's calls, `output_tools` never counted, over the limit stop the run on the turn's first
  call (`failure_tracker.tool_calls_limit`);
- call limits (`call_limits`): one entry per LangChain `ToolCallLimitMiddleware`, each with a thread count
  (the whole trace) and a run count (since the last user message); before a turn's calls run, each entry
  allows or blocks its tool's calls in order, and a blocked call is blocked (`continue`) or stops the run
  on the turn's first call (`error`, `end`) (`failure_tracker.call_limit`).

With `per_prompt_usage` (a Pydantic AI run is one prompt) the retry counts and the successful-call count
start again at a user message; the call limits' run counts always do (a new invocation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, final

from ..core._model import Action, ToolCall, ToolResult, Verdict
from ._lruops import increment
from .base import SettingError, per_settings
from .lru import LRUMap

if TYPE_CHECKING:
    from ..core._runcontext import Turn

__all__ = ["CallLimit", "UsageLimits", "call_limits", "check_limit_settings", "limits_on"]

_NAME: Final = "failure_tracker"  # the engine whose verdicts these are
_LIMIT_KEYS: Final = ("tool", "thread_limit", "run_limit", "exit_behavior")
_EXIT_BEHAVIOURS: Final = ("continue", "error", "end")


@final
class CallLimit:
    """One `call_limits` entry: a LangChain ToolCallLimitMiddleware (tool None: every tool)."""

    __slots__ = ("exit_behavior", "run_limit", "thread_limit", "tool")

    def __init__(self, tool: str | None, thread_limit: int | None, run_limit: int | None,
                 exit_behavior: Literal["continue", "error", "end"]) -> None:
        self.tool = tool
        self.thread_limit = thread_limit
        self.run_limit = run_limit
        self.exit_behavior = exit_behavior

    def exceeded(self, thread: int, run: int) -> bool:
        """Whether one more call would pass a limit (LangChain's `_would_exceed_limit`)."""
        return ((self.thread_limit is not None and thread + 1 > self.thread_limit)
                or (self.run_limit is not None and run + 1 > self.run_limit))


def _call_limit(entry: Any, where: str) -> CallLimit:
    if not isinstance(entry, Mapping):
        raise SettingError(where, f"expected a mapping with keys {', '.join(_LIMIT_KEYS)}, got {entry!r}"[:300])
    unknown = sorted(str(k) for k in entry if k not in _LIMIT_KEYS)
    if unknown:
        raise SettingError(f"{where}.{unknown[0]}", f"unknown key; expected one of {', '.join(_LIMIT_KEYS)}")
    tool = entry.get("tool")
    if tool is not None and (not isinstance(tool, str) or not tool):
        raise SettingError(f"{where}.tool", f"expected a tool name or null, got {tool!r}"[:300])
    limits: list[int | None] = []
    for key in ("thread_limit", "run_limit"):
        value = entry.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise SettingError(f"{where}.{key}", f"expected an integer >= 0 or null, got {value!r}"[:300])
        limits.append(value)
    if limits == [None, None]:
        # LangChain refuses a middleware without limits, and a run limit above the thread limit
        raise SettingError(where, "expected at least one of thread_limit, run_limit")
    if limits[0] is not None and limits[1] is not None and limits[1] > limits[0]:
        raise SettingError(f"{where}.run_limit", f"expected at most thread_limit ({limits[0]}), got {limits[1]}")
    exit_behavior = entry.get("exit_behavior", "continue")
    if exit_behavior not in _EXIT_BEHAVIOURS:
        raise SettingError(f"{where}.exit_behavior",
                           f"expected one of {', '.join(map(repr, _EXIT_BEHAVIOURS))}, got {exit_behavior!r}"[:300])
    return CallLimit(tool, limits[0], limits[1], exit_behavior)


@per_settings
def call_limits(settings: Any) -> tuple[CallLimit, ...]:
    """The settings' `call_limits` as entries (checked when the settings were made)."""
    return tuple(_call_limit(e, f"call_limits[{i}]") for i, e in enumerate(settings.call_limits))


def check_limit_settings(settings: Any) -> None:
    """Raise SettingError naming the first bad value of this module's settings."""
    tools: set[str | None] = set()
    for i, entry in enumerate(settings.call_limits):
        tool = _call_limit(entry, f"call_limits[{i}]").tool
        if tool in tools:
            # an agent's middleware names must differ, and the name is the tool's (ToolCallLimitMiddleware[T])
            raise SettingError(f"call_limits[{i}].tool", f"expected one entry per tool, got a 2nd for {tool!r}")
        tools.add(tool)


def limits_on(settings: Any) -> bool:
    """Whether any rule of this module is on under `settings` (failure_tracker's)."""
    return settings.tool_retries is not None or settings.tool_calls_limit is not None or bool(settings.call_limits)


class UsageLimits:
    """One run's tool retry counts, successful-call count and call-limit counts (see the module docstring)."""

    __slots__ = ("_entries", "_failed", "_output", "_pending", "_position", "_succeeded", "retries", "runs",
                 "settings", "succeeded", "threads")

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self._output = frozenset(settings.output_tools)
        # tool retries: each tool's count (bounded like the engine's other per-key maps), and the tools with
        # a failed / a successful call in the turn going on
        self.retries: LRUMap[str, int] = LRUMap(settings.max_keys)
        self._failed: set[str] = set()
        self._succeeded: set[str] = set()
        self.succeeded = 0  # calls that ran and succeeded, output tools not counted (tool_calls_limit)
        self._entries = call_limits(settings) if settings.call_limits else ()
        self.threads = [0] * len(self._entries)
        self.runs = [0] * len(self._entries)
        # the verdicts decided at the turn's start for its calls, by position; the next call's position
        self._pending: dict[int, list[Verdict]] = {}
        self._position = 0

    # ---- events ----------------------------------------------------------------------------------------
    def turn_start(self, turn: Turn) -> None:
        self._settle()
        self._pending = {}
        self._position = 0
        calls = turn.calls
        if not calls:
            return
        s = self.settings
        if s.tool_calls_limit is not None:
            stop = self._tool_calls_limit(calls, s.tool_calls_limit)
            if stop is not None:
                self._pending[0] = [stop]
                return  # the run ends on the first call: no call of the turn is counted anywhere
        if self._entries:
            self._call_limits(calls)

    def rejected(self) -> None:
        self._settle()  # the turn before it has ended

    def prompt(self) -> None:
        """A user message: a new invocation (LangChain's run counts); under `per_prompt_usage` a new Pydantic AI
        run, whose retry counts and successful calls start afresh."""
        self.runs = [0] * len(self._entries)
        if self.settings.per_prompt_usage:
            self.retries.clear()
            self._failed.clear()
            self._succeeded.clear()
            self.succeeded = 0

    def before_call(self) -> list[Verdict] | None:
        position = self._position
        self._position = position + 1
        return self._pending.pop(position, None) if self._pending else None

    def after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> Verdict | None:
        if blocked or result is None:
            return None  # no outcome: neither a failure nor a success
        tool = call.tool
        if result.ok:
            self._succeeded.add(tool)
            if tool not in self._output:
                self.succeeded += 1
            return None
        self._failed.add(tool)
        n = self.settings.tool_retries
        if n is None:
            return None
        count = self.retries.get(tool, 0)  # as it stood at the turn's start: the turn settles at its end
        if count < n:
            return None
        return Verdict(_NAME, Action.STOP, "failure_tracker.tool_retries",
                       f"Tool '{tool}' exceeded max retries count of {n}",
                       {"tool": tool, "count": count, "tool_retries": n})

    # ---- rules -----------------------------------------------------------------------------------------
    def _settle(self) -> None:
        """The turn has ended: +1 for each tool that failed in it, else 0 for each that succeeded."""
        failed, succeeded = self._failed, self._succeeded
        if self.settings.tool_retries is not None:
            for tool in failed:
                increment(self.retries, tool)
            for tool in succeeded - failed:
                self.retries.pop(tool, None)
        failed.clear()
        succeeded.clear()

    def _tool_calls_limit(self, calls: tuple[ToolCall, ...], limit: int) -> Verdict | None:
        output = self._output
        new = sum(1 for c in calls if c.tool not in output)
        total = self.succeeded + new
        if not new or total <= limit:
            return None
        return Verdict(_NAME, Action.STOP, "failure_tracker.tool_calls_limit",
                       f"The next tool call(s) would exceed the tool_calls_limit of {limit} (tool_calls={total}).",
                       {"tool_calls": total, "tool_calls_limit": limit, "calls": new})

    def _call_limits(self, calls: tuple[ToolCall, ...]) -> None:
        pending = self._pending
        ending: Verdict | None = None  # the stop of the first `error` / `end` entry that blocks a call
        for e, entry in enumerate(self._entries):
            thread, run = self.threads[e], self.runs[e]
            blocked: list[int] = []
            for i, call in enumerate(calls):
                if entry.tool is not None and call.tool != entry.tool:
                    continue
                if entry.exceeded(thread, run):
                    blocked.append(i)
                else:
                    thread += 1
                    run += 1
            # blocked calls were attempted: the run count includes them, the thread count does not
            self.threads[e], self.runs[e] = thread, run + len(blocked)
            if not blocked:
                continue
            data = {"tool": entry.tool, "thread_count": thread + len(blocked), "run_count": run + len(blocked),
                    "thread_limit": entry.thread_limit, "run_limit": entry.run_limit,
                    "exit_behavior": entry.exit_behavior}
            if entry.exit_behavior == "continue":
                message = ("Tool call limit exceeded. Do not make additional tool calls." if entry.tool is None
                           else f"Tool call limit exceeded. Do not call '{entry.tool}' again.")
                for i in blocked:
                    pending.setdefault(i, []).append(
                        Verdict(_NAME, Action.BLOCK, "failure_tracker.call_limit", message, data))
            elif ending is None:
                ending = Verdict(_NAME, Action.STOP, "failure_tracker.call_limit", _ending_message(entry, data), data)
        if ending is not None:
            pending.setdefault(0, []).append(ending)


def _ending_message(entry: CallLimit, data: Mapping[str, Any]) -> str:
    """LangChain's `_build_final_ai_message_content`: which limits the turn's calls would pass."""
    what = f"'{entry.tool}' tool" if entry.tool is not None else "Tool"
    passed = [f"{scope} limit exceeded ({data[f'{scope}_count']}/{limit} calls)"
              for scope, limit in (("thread", entry.thread_limit), ("run", entry.run_limit))
              if limit is not None and data[f"{scope}_count"] > limit]
    return f"{what} call limit reached: {' and '.join(passed)}."
