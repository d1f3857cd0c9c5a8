"""The canonical transcript of a run and the prompt view the model is shown.

The transcript is append-only and lossless: every message, tool call and full tool result. The prompt
view starts as the same sequence and is what context engines rewrite (dedup placeholders, compaction
summaries); rewriting the view never touches the transcript.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Literal, final

__all__ = ["Entry", "PromptView", "Role", "Transcript", "chars_over_four"]

Role = Literal["system", "user", "assistant", "tool", "summary"]


def chars_over_four(text: str) -> int:
    """The default token counter: ceil(chars / 4). Nothing downloads a tokenizer."""
    return math.ceil(len(text) / 4)


@final
@dataclass(frozen=True, slots=True)
class Entry:
    """One message. A tool result links to the assistant entry that called it by `call_id`."""

    role: Role
    text: str = ""
    tokens: int | None = None  # given by the trace/model; else counted
    tool: str | None = None  # tool name, for tool results and assistant tool calls
    call_id: int | None = None  # links an assistant tool call and its result
    turn: int | None = None
    replaced: bool = False  # the view shows a placeholder or summary instead of the transcript text

    def with_text(self, text: str, tokens: int | None = None) -> Entry:
        return replace(self, text=text, tokens=tokens, replaced=True)


@final
class Transcript:
    """The lossless record of a run's messages."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def append(self, entry: Entry) -> None:
        self.entries.append(entry)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)


@final
class PromptView:
    """What the model sees next: a list of entries that engines may rewrite, with token counts.

    Rewrite it only through `append`, `replace` (one entry) and `replace_entries` (all of them): the
    view keeps a running token total over those, so asking for `tokens()` between model calls costs
    only the entries appended since the last question.
    """

    __slots__ = ("_counts", "_total", "_totalled", "count_tokens", "entries", "window_tokens")

    def __init__(self, count_tokens: Callable[[str], int] = chars_over_four, window_tokens: int = 0) -> None:
        self.entries: list[Entry] = []
        self.count_tokens = count_tokens
        self.window_tokens = window_tokens
        self._counts: dict[int, int] = {}  # id(entry) -> tokens; entries are immutable, so this stays true
        self._total = 0  # tokens of entries[:_totalled]
        self._totalled = 0

    def append(self, entry: Entry) -> None:
        self.entries.append(entry)

    def entry_tokens(self, entry: Entry) -> int:
        if entry.tokens is not None:
            return entry.tokens
        key = id(entry)
        n = self._counts.get(key)
        if n is None:
            n = self.count_tokens(entry.text) + (self.count_tokens(entry.tool) if entry.tool else 0)
            self._counts[key] = n
        return n

    def tokens(self) -> int:
        """Tokens of the whole view (counts only the entries appended since the last call)."""
        entries = self.entries
        n = len(entries)
        if n < self._totalled:  # the list was cut behind our back: start over rather than be wrong
            self._total = self._totalled = 0
        for i in range(self._totalled, n):
            self._total += self.entry_tokens(entries[i])
        self._totalled = n
        return self._total

    def replace(self, index: int, entry: Entry) -> None:
        """Swap one entry (a dedup placeholder) keeping the running total right."""
        old = self.entries[index]
        self.entries[index] = entry
        if index < self._totalled:
            self._total += self.entry_tokens(entry) - self.entry_tokens(old)
        if old is not entry:
            self._counts.pop(id(old), None)

    def replace_entries(self, entries: list[Entry]) -> None:
        """Swap the view's entries (after dedup or compaction); forgets counts of entries gone."""
        self.entries = entries
        live = {id(e) for e in entries}
        self._counts = {k: v for k, v in self._counts.items() if k in live}
        self._total = self._totalled = 0  # recounted lazily from the kept per-entry counts

    def __len__(self) -> int:
        return len(self.entries)
