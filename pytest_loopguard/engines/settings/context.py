"""context's settings: the fields a policy file may set (the rule is `engines/context.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..lru import DEFAULT_MAX_KEYS
from . import EngineSettings, at_least

__all__ = ["DEFAULT_OVERFLOW_MARKERS", "DEFAULT_TRANSIENT_MARKERS", "Settings"]

# The defaults are the `default` preset (ours): overflow markers from the Hermes list plus the
# unambiguous claw-code and Spacebot ones; transient markers from the Spacebot list plus 529/408.
DEFAULT_OVERFLOW_MARKERS = (
    "context length", "context size", "maximum context", "token limit", "too many tokens",
    "reduce the length", "exceeds the limit", "context window", "prompt is too long",
    "prompt exceeds max length", "max_tokens", "maximum number of tokens", "max_model_len",
    "prompt length", "input is too long", "maximum model length", "truncating input",
    "slot context", "n_ctx_slot", "max input token", "input token", "input tokens exceed",
    "request too large", "request is too large", "content_too_large",
)
DEFAULT_TRANSIENT_MARKERS = (
    "408", "429", "500", "502", "503", "504", "529", "rate limit", "overloaded", "timeout",
    "timed out", "connection", "error sending request", "server error", "server had an error",
    "internal error", "empty response", "empty reply", "broken pipe",
    "failed to read response body", "error decoding response body", "missing response.completed",
)


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    # window and pre-prompt compaction
    window_tokens: int = 128000  # a trace's `context.window_tokens` overrides it
    compact_at: float = 0.8
    pre_prompt_check: bool = True
    turns_per_segment: int | None = None
    compaction: Literal["keep_recent", "drop_oldest"] = "keep_recent"
    preserve_recent: int = 4
    compact_fraction: float = 0.5
    min_kept: int = 0
    compact_floor: int = 0  # views of this many entries or fewer are never compacted
    summary_text: str = "[Summary: {messages} earlier messages were compacted to fit the context window.]"
    # overflow: compact and retry
    overflow_markers: tuple[str, ...] = DEFAULT_OVERFLOW_MARKERS
    overflow_marker_sets: tuple[tuple[str, ...], ...] = ()  # each matches when all its markers are present
    overflow_strategy: Literal["preserve_schedule", "force_fraction"] = "preserve_schedule"
    preserve_schedule: tuple[int, ...] = (4, 2, 0)
    force_compact_fraction: float = 0.75
    max_compact_retries: int | None = 3  # None: no limit (OpenHands condenses after every overflow)
    # transient errors: back off and retry
    transient_markers: tuple[str, ...] = DEFAULT_TRANSIENT_MARKERS
    max_transient_retries: int = 5
    backoff_base_ms: int = 1000
    backoff_cap_ms: int | None = 60000
    # what the model is told after a compaction
    inject_read_regions: bool = True
    inject_todos: bool = True
    injection_role: Literal["user", "system"] = "user"
    read_regions_text: str = (
        "[Files already read in this session. Do NOT read them again: use what you learned from them "
        "and the summary above.]\n{regions}"
    )
    todos_text: str = "[Your active todos (pending and in progress):]\n{todos}"
    todo_tool: str = "todo"
    # keeping the injection bounded (our choice; the hermes presets keep the published whole list)
    merge_regions: bool = True  # adjacent and overlapping regions of one file become one line
    injection_max_tokens: int | None = 1000  # None: the whole list, however long, even past the threshold
    # the todo list keeps at most this many todos: past it the oldest done ones go, then the oldest (docs/engines.md,
    # "Bounded state")
    max_todos: int = DEFAULT_MAX_KEYS
    # run length
    max_turns: int | None = None

    def __post_init__(self) -> None:
        at_least(self, 1, "max_todos")
