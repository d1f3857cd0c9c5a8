"""The canonical transcript of a run and the prompt view the model is shown.

The transcript is append-only and lossless: every message, tool call and full tool result. The prompt
view starts as the same sequence and is what context engines rewrite (dedup placeholders, compaction
summaries); rewriting the view never touches the transcript.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Literal, final

__all__ = ["Deferred", "Entry", "EntryList", "PromptView", "Role", "Transcript", "chars_over_four"]

Role = Literal["system", "user", "assistant", "tool", "summary"]


def chars_over_four(text: str) -> int:
    """The default token counter: ceil(chars / 4). Nothing downloads a tokenizer."""
    return (len(text) + 3) // 4  # integer ceil: math.ceil(len / 4) without a float and a call


@final
class Entry:
    """One message. A tool result links to the assistant entry that called it by `call_id`.

    A plain slots class, immutable by convention (the view counts tokens per entry object): a live Guard
    may build two per tool call.
    """

    __slots__ = ("_make", "_text", "call_id", "replaced", "role", "tokens", "tool", "turn")

    def __init__(
        self,
        role: Role,
        text: str = "",
        tokens: int | None = None,  # given by the trace/model; else counted
        tool: str | None = None,  # tool name, for tool results and assistant tool calls
        call_id: int | None = None,  # links an assistant tool call and its result
        turn: int | None = None,
        replaced: bool = False,  # the view shows a placeholder or summary instead of the transcript text
    ) -> None:
        self.role = role
        self._text: str | None = text
        self._make: Callable[[], str] | None = None
        self.tokens = tokens
        self.tool = tool
        self.call_id = call_id
        self.turn = turn
        self.replaced = replaced

    @classmethod
    def later(cls, role: Role, make: Callable[[], str], tokens: int | None = None, turn: int | None = None) -> Entry:
        """An entry whose text `make()` builds on first read: most readers need only its role and tokens."""
        entry = cls(role, "", tokens, turn=turn)
        entry._text = None
        entry._make = make
        return entry

    @property
    def text(self) -> str:
        text = self._text
        if text is None:
            assert self._make is not None
            text = self._text = self._make()
            self._make = None
        return text

    def with_text(self, text: str, tokens: int | None = None) -> Entry:
        return Entry(self.role, text, tokens, self.tool, self.call_id, self.turn, True)

    def _key(self) -> tuple[object, ...]:
        return self.role, self.text, self.tokens, self.tool, self.call_id, self.turn, self.replaced

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Entry) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Entry(role={self.role!r}, text={self.text!r}, tokens={self.tokens!r}, tool={self.tool!r}, "
                f"call_id={self.call_id!r}, turn={self.turn!r}, replaced={self.replaced!r})")


@final
class Deferred:
    """Messages recorded but not yet built: the Guard notes what it needs in a cheap record per event, and
    the entries are built (in order, into every list that keeps them) when the view or the transcript is
    next read. Building is deterministic from immutable inputs, so a late entry equals an eager one.

    `describe(record)` gives a record's role and tool, and `measure(record, view)` its tokens as the view
    would count its entry (negated when they were counted from its text, which the view then keeps), so
    the view can answer its size, its token total and which tool results it holds without building
    entries (what the dedup and context engines ask before every model call).

    A record may hold the event's objects (the call, its result, the turn): cheap to note, but a view kept
    for a long run without a read (a policy that compacts only on overflow) would hold every event's
    objects. `settle(keep)` swaps the records before the last `keep` for `settle_one(record)`, a compact
    record of the same entry holding only what the entry is built from, once each."""

    __slots__ = ("_render", "describe", "measure", "records", "settle_one", "settled", "sinks")

    def __init__(
        self,
        render: Callable[[object], Entry],
        describe: Callable[[object], tuple[Role, str | None]],
        measure: Callable[[object, PromptView], int],
        settle_one: Callable[[object], object] | None = None,
    ) -> None:
        self._render = render
        self.describe = describe
        self.measure = measure
        self.settle_one = settle_one  # a record's compact form (same entry, same tokens); None: kept as noted
        self.records: list[object] = []
        self.settled = 0  # records before this index are in their compact form
        self.sinks: list[EntryList] = []  # the view (and the transcript) the entries go to

    def render(self, record: object) -> Entry:
        """The entry of one record."""
        return self._render(record)

    def settle(self, keep: int) -> None:
        """Swap every record but the last `keep` for its compact form (each once; entries unchanged)."""
        settle_one = self.settle_one
        records = self.records
        stop = len(records) - keep
        if settle_one is None or stop <= self.settled:
            return
        for k in range(self.settled, stop):
            records[k] = settle_one(records[k])
        self.settled = stop

    def flush(self) -> None:
        render = self._render
        built = [render(r) for r in self.records]
        self.records.clear()  # in place: the Guard holds the list's bound `append`
        self.settled = 0
        for sink in self.sinks:
            sink.entries_built(built)


class EntryList:
    """An ordered list of entries that a Guard may fill lazily (`Deferred`): the transcript and the view."""

    __slots__ = ("_entries", "deferred")

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self.deferred: Deferred | None = None  # set by a Guard that records entries lazily

    @property
    def entries(self) -> list[Entry]:
        """The entries, in order (what the Guard recorded since the last read is built now)."""
        deferred = self.deferred
        if deferred is not None and deferred.records:
            deferred.flush()
        return self._entries

    def append(self, entry: Entry) -> None:
        self.entries.append(entry)

    def entries_built(self, built: list[Entry]) -> None:
        """Take entries the Guard recorded earlier (`Deferred.flush`)."""
        self._entries.extend(built)

    def __len__(self) -> int:
        return len(self.entries)


@final
class Transcript(EntryList):
    """The lossless record of a run's messages."""

    __slots__ = ()

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)


@final
class PromptView(EntryList):
    """What the model sees next: a list of entries that engines may rewrite, with token counts.

    Rewrite it only through `append`, `replace` (one entry) and `replace_entries` (all of them): the
    view keeps a running token total over those, so asking for `tokens()` between model calls costs
    only the entries appended since the last question. `size`, `tokens` and `tool_results` read entries
    the Guard recorded but has not built (`Deferred`) without building them.
    """

    __slots__ = ("_counts", "_pending", "_pending_counts", "_pending_total", "_total", "_totalled", "count_tokens",
                 "window_tokens")

    def __init__(self, count_tokens: Callable[[str], int] = chars_over_four, window_tokens: int = 0) -> None:
        super().__init__()
        self.count_tokens = count_tokens
        self.window_tokens = window_tokens
        self._counts: dict[int, int] = {}  # id(entry) -> tokens; entries are immutable, so this stays true
        self._total = 0  # tokens of entries[:_totalled]
        self._totalled = 0
        self._pending = 0  # how many of the deferred records `_pending_total` counts (a prefix of them)
        self._pending_total = 0
        self._pending_counts: dict[int, int] = {}  # record index -> tokens, for records whose text was counted

    def entry_tokens(self, entry: Entry) -> int:
        if entry.tokens is not None:
            return entry.tokens
        key = id(entry)
        n = self._counts.get(key)
        if n is None:
            n = self.count_tokens(entry.text) + (self.count_tokens(entry.tool) if entry.tool else 0)
            self._counts[key] = n
        return n

    def size(self) -> int:
        """How many entries the view holds, built or only recorded (`len(view)` without building any)."""
        deferred = self.deferred
        return len(self._entries) + (len(deferred.records) if deferred is not None else 0)

    def tool_results(self, start: int, tools: frozenset[str]) -> list[tuple[int, str]]:
        """(index, tool) of each result of one of `tools` at `start` or later, in order (builds nothing)."""
        entries = self._entries
        built = len(entries)
        out: list[tuple[int, str]] = []
        for i in range(start, built):
            entry = entries[i]
            tool = entry.tool
            if tool is not None and tool in tools and entry.role == "tool":
                out.append((i, tool))
        deferred = self.deferred
        if deferred is not None and deferred.records:
            describe = deferred.describe
            for k, record in enumerate(deferred.records[max(0, start - built):], max(start, built)):
                role, tool = describe(record)
                if tool is not None and tool in tools and role == "tool":
                    out.append((k, tool))
        return out

    def tokens(self) -> int:
        """Tokens of the whole view (counts only the entries appended since the last call)."""
        entries = self._entries
        n = len(entries)
        if n < self._totalled:  # the list was cut behind our back: start over rather than be wrong
            self._total = self._totalled = 0
        total = self._total
        entry_tokens = self.entry_tokens
        for i in range(self._totalled, n):
            entry = entries[i]
            given = entry.tokens  # most entries carry the model's or the result's own count: no call
            total += given if given is not None else entry_tokens(entry)
        self._total = total
        self._totalled = n
        deferred = self.deferred
        if deferred is not None and deferred.records:
            # recorded entries are counted from their records (the same count as their entries'), once each
            records = deferred.records
            pending = self._pending_total
            measure = deferred.measure
            counted = self._pending_counts
            for k in range(self._pending, len(records)):
                n = measure(records[k], self)
                if n < 0:  # its text was counted (as -n): kept for its entry, so nothing is counted twice
                    n = counted[k] = -n
                pending += n
            self._pending = len(records)
            self._pending_total = pending
            total += pending
        return total

    def entries_built(self, built: list[Entry]) -> None:
        # the records counted so far are the first entries built: their count joins the running total
        if self._pending and self._totalled == len(self._entries):
            self._total += self._pending_total
            self._totalled += self._pending
        if self._pending_counts:
            counts = self._counts
            for k, n in self._pending_counts.items():
                counts[id(built[k])] = n
            self._pending_counts = {}
        self._pending = self._pending_total = 0
        self._entries.extend(built)

    def entry_at(self, index: int) -> Entry:
        """The entry at `index`; one only recorded is built for the asking, not kept (entries are values)."""
        built = len(self._entries)
        deferred = self.deferred
        if index < built or deferred is None or index < 0:
            return self.entries[index]
        return deferred.render(deferred.records[index - built])

    def replace(self, index: int, entry: Entry) -> None:
        """Swap one entry (a dedup placeholder) keeping the running total right."""
        built = len(self._entries)
        deferred = self.deferred
        if index >= built and deferred is not None and deferred.sinks == [self]:
            # an entry only recorded is swapped in the records (an entry records itself): the other records
            # stay unbuilt. Not when the transcript shares the records: it keeps the original.
            k = index - built
            records = deferred.records
            old_record = records[k]
            records[k] = entry
            if k < self._pending:
                old_tokens = self._pending_counts.pop(k, None)
                if old_tokens is None:
                    old_tokens = abs(deferred.measure(old_record, self))
                self._pending_total += self.entry_tokens(entry) - old_tokens
            if old_record is not entry:
                self._counts.pop(id(old_record), None)
            return
        old = self.entries[index]
        self.entries[index] = entry
        if index < self._totalled:
            self._total += self.entry_tokens(entry) - self.entry_tokens(old)
        if old is not entry:
            self._counts.pop(id(old), None)

    def replace_entries(self, entries: list[Entry]) -> None:
        """Swap the view's entries (after dedup or compaction); forgets counts of entries gone."""
        deferred = self.deferred
        if deferred is not None and deferred.records:  # what was recorded before belongs to the list replaced
            deferred.flush()
        self._entries = entries
        live = {id(e) for e in entries}
        self._counts = {k: v for k, v in self._counts.items() if k in live}
        self._total = self._totalled = 0  # recounted lazily from the kept per-entry counts
