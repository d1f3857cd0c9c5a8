"""The two seams of a simulation: a model answers a prompt view, a tool executor answers a call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, final

from pytest_loopguard.core._conversation import PromptView
from pytest_loopguard.core._limits import MAX_SCENARIO_COUNT
from pytest_loopguard.core._model import ToolCall, ToolResult

__all__ = ["Model", "ModelReply", "ProviderError", "ToolExecutor"]


@final
@dataclass(frozen=True, slots=True)
class ModelReply:
    """What the model answered: tool calls to run, or (no calls) its final answer in `text`."""

    calls: tuple[ToolCall, ...] = ()
    text: str | None = None
    output_tokens: int | None = None
    success: bool = True  # of a final answer: did the agent claim the task done

    @property
    def final(self) -> bool:
        return not self.calls


class ProviderError(Exception):
    """A model provider's error, worded as the provider words it (the context engine matches markers)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class Model(Protocol):
    """A model: answers the prompt view of turn `turn`, or raises ProviderError."""

    def respond(self, view: PromptView, turn: int) -> ModelReply: ...


class ToolExecutor(Protocol):
    """Runs one tool call and returns its result (errors are results, not exceptions)."""

    def execute(self, call: ToolCall) -> ToolResult: ...


def is_count(value: object, minimum: int = 0, maximum: int = MAX_SCENARIO_COUNT) -> bool:
    """Whether a scenario value is a whole number from `minimum` to `maximum` (YAML booleans are not numbers)."""
    return isinstance(value, int) and not isinstance(value, bool) and minimum <= value <= maximum
