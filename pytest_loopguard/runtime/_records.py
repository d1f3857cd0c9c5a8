"""What the Guard records per event for the prompt view, and the view entries built from those records.

The Guard appends a cheap record per event (`conversation.Deferred`): a call's tuple, the turn itself, or a
message's entry. The functions here turn a record into its entry, tell its role, tool and tokens without
building it, and settle it into a compact string that no longer holds the event's objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..core._conversation import Deferred, Entry, PromptView, Role
from ..core._model import ToolCall, ToolResult
from ..core._runcontext import Turn

if TYPE_CHECKING:
    from ._guard import Decision

__all__ = ["ToolRecord", "deferred", "shown_text"]

# a call: the call, its result (None: blocked), the decision and the before-call decision, its id, its turn
ToolRecord = tuple[ToolCall, ToolResult | None, "Decision", "Decision", int, int | None]


def shown_text(result: ToolResult | None, decision: Decision, before: Decision) -> str:
    """What the agent sees of a call: the block message as an error, or the result with any warnings."""
    if result is None:
        return f"Error: {before.message or 'blocked'}"
    text = result.result_text or ""
    if decision.action == "warn":
        # the result, a blank line, then the warnings one per line (two engines may warn at once)
        warnings = "\n".join(v.message for v in decision.verdicts if v.action == "warn" and v.message)
        if warnings:
            text = f"{text}\n\n{warnings}" if text else warnings
    return text


def deferred() -> Deferred:
    """An empty record list whose entries are built, described, measured and settled by this module."""
    return Deferred(_entry, _describe, _measure, _settled)


# A settled record is one string, not a tuple: a tuple and its ints would cost about twice the memory.
# "t" call id, turn, tokens, tool length; newline; tool then what the agent was shown — or "a" turn, tokens;
# newline; the assistant message. Numbers in decimal, "-" for None; the text is last, so anything goes in it.


def _settled(record: object) -> object:
    """The compact record of the entry `_entry` builds from `record`: its text made now, objects let go."""
    kind = record.__class__
    if kind is tuple:
        call, result, decision, before, call_id, turn = cast(ToolRecord, record)
        tokens = result.tokens if result is not None else None
        tool = call.tool
        return (f"t{call_id} {'-' if turn is None else turn} {'-' if tokens is None else tokens} {len(tool)}\n"
                f"{tool}{shown_text(result, decision, before)}")
    if kind is Turn:
        turn_record = cast(Turn, record)
        llm = turn_record.llm
        tokens = llm.output_tokens if llm is not None else None
        return f"a{turn_record.index} {'-' if tokens is None else tokens}\n{turn_record.message_text()}"
    return record  # an entry (a message, a dedup placeholder) or a record already settled


def _number(field: str) -> int | None:
    return None if field == "-" else int(field)


def _unsettled(record: str) -> Entry:
    """The entry of a settled record."""
    head, _, body = record.partition("\n")
    fields = head[1:].split(" ")
    if head[0] == "a":
        return Entry("assistant", body, _number(fields[1]), turn=int(fields[0]))
    size = int(fields[3])
    return Entry("tool", body[size:], _number(fields[2]), body[:size], int(fields[0]), _number(fields[1]))


def _entry(record: object) -> Entry:
    """The view entry of what the Guard recorded: a message's entry, a turn (the assistant message: its text
    and the calls it makes, as the model wrote them) or a call (what the agent was shown of it)."""
    kind = record.__class__  # exact types: a record is one of these three, never a subclass
    if kind is tuple:  # a call: the most common record
        call, result, decision, before, call_id, turn = cast(ToolRecord, record)
        # positional: keywords cost more than the entry's own construction
        return Entry("tool", shown_text(result, decision, before), result.tokens if result is not None else None,
                     call.tool, call_id, turn)
    if kind is Turn:
        turn_record = cast(Turn, record)
        llm = turn_record.llm
        # the text (with each call's as-written arguments) is built only if read: a view usually
        # needs only the model's own token count
        return Entry.later("assistant", turn_record.message_text, llm.output_tokens if llm else None,
                           turn_record.index)
    if kind is str:
        return _unsettled(cast(str, record))
    return cast(Entry, record)


def _describe(record: object) -> tuple[Role, str | None]:
    """The role and tool of the entry `_entry` builds from `record`, without building it."""
    kind = record.__class__
    if kind is tuple:
        return "tool", cast(ToolRecord, record)[0].tool
    if kind is Turn:
        return "assistant", None
    if kind is str:
        entry = _unsettled(cast(str, record))
        return entry.role, entry.tool
    entry = cast(Entry, record)
    return entry.role, entry.tool


def _measure(record: object, view: PromptView) -> int:
    """The tokens `view` counts for the entry `_entry` builds from `record`, without building it; negative
    when they were counted from its text (see `Deferred`)."""
    kind = record.__class__
    count = view.count_tokens
    if kind is tuple:  # the entry's tokens are the result's own, else its text's and its tool's
        call, result, decision, before, _id, _turn = cast(ToolRecord, record)
        if result is not None and result.tokens is not None:
            return result.tokens
        return -count(shown_text(result, decision, before)) - (count(call.tool) if call.tool else 0)
    if kind is Turn:
        turn = cast(Turn, record)
        llm = turn.llm
        if llm is not None and llm.output_tokens is not None:
            return llm.output_tokens
        return -count(turn.message_text())
    if kind is str:
        entry = _unsettled(cast(str, record))
        if entry.tokens is not None:
            return entry.tokens
        return -count(entry.text) - (count(entry.tool) if entry.tool else 0)
    return view.entry_tokens(cast(Entry, record))  # the record is the entry itself: counted (and kept) once
