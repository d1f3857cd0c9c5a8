"""What a step carries: a tool call and its identities, its result, a model call, a message, why a call never ran,
what the trace expects of a step; frozen value classes (`core._frozen`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, final

from ._frozen import Frozen, frozen
from ._toolcall import ToolCall

__all__ = [
    "CHANGED_ONLY",
    "OK",
    "Compaction",
    "Done",
    "LLMCall",
    "Message",
    "NotRun",
    "Origin",
    "Rejected",
    "StepExpect",
    "StepSource",
    "ToolCall",
    "ToolResult",
]

Origin = Literal["user", "harness", "agent"]
_set: Final = object.__setattr__  # a frozen class's __init__ sets its slots past its own __setattr__


@final
@frozen
class ToolResult(Frozen):
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

    def __init__(self, ok: bool = True, text: str | None = None, error: str | None = None, tokens: int | None = None,
                 bytes: int | None = None, changed: bool = False, exit_code: int | None = None) -> None:
        _set(self, "ok", ok)
        _set(self, "text", text)
        _set(self, "error", error)
        _set(self, "tokens", tokens)
        _set(self, "bytes", bytes)
        _set(self, "changed", changed)
        _set(self, "exit_code", exit_code)

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
@frozen
class LLMCall(Frozen):
    """One call to the model: token counts, or the error the provider returned."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    text: str | None = None

    def __init__(self, input_tokens: int | None = None, output_tokens: int | None = None, error: str | None = None,
                 text: str | None = None) -> None:
        _set(self, "input_tokens", input_tokens)
        _set(self, "output_tokens", output_tokens)
        _set(self, "error", error)
        _set(self, "text", text)

    @property
    def failed(self) -> bool:
        return self.error is not None


@final
@frozen
class Message(Frozen):
    """A message in the conversation; `origin` says who wrote a user-role one (a person, the harness, an agent).

    `origin` is None for system and assistant messages unless a log says otherwise; `name` names the
    other agent when `origin` is `agent`.
    """

    role: Literal["user", "system", "assistant"]
    text: str = ""
    origin: Origin | None = None
    name: str | None = None

    def __init__(self, role: Literal["user", "system", "assistant"], text: str = "", origin: Origin | None = None,
                 name: str | None = None) -> None:
        _set(self, "role", role)
        _set(self, "text", text)
        _set(self, "origin", origin)
        _set(self, "name", name)

    @property
    def from_user(self) -> bool:
        """A person's prompt: role user, origin user (the default). Only these reset engines per prompt."""
        return self.role == "user" and self.origin in (None, "user")


@final
@frozen
class Rejected(Frozen):
    """A model turn the harness refused (no usable call): a turn with no accepted call."""

    reason: str
    text: str | None = None
    llm: LLMCall | None = None  # the turn's model usage, counted as an `llm` step's

    def __init__(self, reason: str, text: str | None = None, llm: LLMCall | None = None) -> None:
        _set(self, "reason", reason)
        _set(self, "text", text)
        _set(self, "llm", llm)


@final
@frozen
class NotRun(Frozen):
    """Why a call the agent made never ran: `denied` (by a person, `user`, or a permission `rule`),
    `cancelled` (another call of its batch failed first) or `blocked` (the recording's policy blocked it live;
    `reason` is the blocking verdict's reason code). Such a call has no result: a replay whose policy lets a
    blocked one run has none to feed (`ReplayResult.unknown_results`)."""

    how: Literal["denied", "cancelled", "blocked"]
    reason: str
    by: Literal["user", "rule"] | None = None  # who denied it; a cancelled call names no one

    def __init__(self, how: Literal["denied", "cancelled", "blocked"], reason: str,
                 by: Literal["user", "rule"] | None = None) -> None:
        _set(self, "how", how)
        _set(self, "reason", reason)
        _set(self, "by", by)


@final
@frozen
class Compaction(Frozen):
    """The log's own compaction event: the real agent compacted its context here (`trigger` auto or manual,
    `tokens_before` the context's size before, `text` the summary that replaced it)."""

    trigger: Literal["auto", "manual"] | None = None
    tokens_before: int | None = None
    text: str | None = None

    def __init__(self, trigger: Literal["auto", "manual"] | None = None, tokens_before: int | None = None,
                 text: str | None = None) -> None:
        _set(self, "trigger", trigger)
        _set(self, "tokens_before", tokens_before)
        _set(self, "text", text)


@final
@frozen
class StepSource(Frozen):
    """Where an imported step came from: the log file, its JSONL row (or None), its index there."""

    file: str
    row: int | None = None
    index: int | str | None = None

    def __init__(self, file: str, row: int | None = None, index: int | str | None = None) -> None:
        _set(self, "file", file)
        _set(self, "row", row)
        _set(self, "index", index)


@final
@frozen
class Done(Frozen):
    success: bool | None = None
    text: str = ""

    def __init__(self, success: bool | None = None, text: str = "") -> None:
        _set(self, "success", success)
        _set(self, "text", text)


@final
@frozen
class StepExpect(Frozen):
    """A step expectation: the combined action, and optionally a verdict that must be present."""

    action: str  # an Action or "not_reached"
    engine: str | None = None
    reason: str | None = None
    message: str | None = None  # substring of the verdict's message
    data: Mapping[str, Any] | None = None  # subset of the verdict's data
    short: bool = True  # written as a bare action string
    # the agent heeds the step's warning or block: none of its next this-many calls repeats the step's call
    heeded_within: int | None = None

    def __init__(self, action: str, engine: str | None = None, reason: str | None = None, message: str | None = None,
                 data: Mapping[str, Any] | None = None, short: bool = True, heeded_within: int | None = None) -> None:
        _set(self, "action", action)
        _set(self, "engine", engine)
        _set(self, "reason", reason)
        _set(self, "message", message)
        _set(self, "data", data)
        _set(self, "short", short)
        _set(self, "heeded_within", heeded_within)
