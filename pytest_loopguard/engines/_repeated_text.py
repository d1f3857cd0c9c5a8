"""Reading an agent's text for repetition, free of any rule: which text is markdown structure, and where each
fixed-size chunk of the text seen so far recurs (the machinery of the stuck detector's Gemini content check)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Final, final

from ..core._js import ANY, DIGIT, SPACE, utf8_slices

# a surrogate, or what Node writes for a lone one (written with chr: mypyc takes no surrogate in a literal)
_SHARED_HASH: Final = re.compile("[" + chr(0xD800) + "-" + chr(0xDFFF) + chr(0xFFFD) + "]")

__all__ = ["CODE_FENCE", "DIVIDER", "STRUCTURE", "ChunkIndex", "Repeats"]

# Whether a chunk's positions (absolute, oldest first) are a repetition; given the buffer and the absolute
# position of its first character (`buffer[p - base:q - base]` is the text from p to q).
Repeats = Callable[[list[int], str, int], bool]

# Markdown as Gemini CLI's loop detection reads it, quirks included: text with structure (a table, a list or
# numbered item, a heading, a blockquote), a divider line or a code fence is not prose that can chant. Its
# patterns are JavaScript's: `\s`, `\d` and `.` below are JavaScript's classes (core/_js.py), not Python's.
CODE_FENCE: Final = "```"
STRUCTURE: Final = (
    re.compile(rf"(^|\n){SPACE}*(\|{ANY}*\||[|+-]{{3,}})"),  # a table row or rule
    re.compile(rf"(^|\n){SPACE}*[*-+]{SPACE}"),  # a list item: `*`…`+`, so a `- ` bullet is not one (as in Gemini)
    re.compile(rf"(^|\n){SPACE}*{DIGIT}+\.{SPACE}"),  # a numbered item
    re.compile(rf"(^|\n)#+{SPACE}"),  # a heading
    re.compile(rf"(^|\n)>{SPACE}"),  # a blockquote
)
DIVIDER: Final = re.compile(r"[+-_=*\u2500-\u257F]+")  # `+`…`_` takes in digits and capitals too (as in Gemini)


@final
class ChunkIndex:
    """The positions of every `size`-character chunk of the text added since the last `clear`, in a buffer that
    keeps the last `limit` characters.

    Positions are absolute (counted from the last `clear`), so they survive the buffer's front being cut; a
    position cut off with the front no longer counts. Each chunk is recorded once, by `scan`, in text order.

    The text is JavaScript's (one character per UTF-16 code unit, core/_js.utf16), and chunks are told apart as
    Gemini CLI does, by the SHA-256 of their UTF-8: a chunk that starts or ends inside an emoji has a lone
    surrogate there, which Node encodes as U+FFFD. So two such chunks can share a hash (`utf8_form`); Gemini
    then compares the text with the one first recorded under that hash and, when it differs, records nothing
    and moves on (`utf8_slices`).
    """

    __slots__ = ("_base", "_buffer", "_positions", "_pruned_at", "_scan", "limit", "size")

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        self.clear()

    def clear(self) -> None:
        """Forget every chunk: the next text starts a new index at position 0."""
        self._buffer = ""
        self._base = 0  # characters cut from the buffer's front since the last clear: positions are absolute
        self._scan = 0  # absolute: the first chunk not recorded yet
        # chunk -> where it was seen: one position as an int (most chunks are seen once), several as a list
        self._positions: dict[str, int | list[int]] = {}
        self._pruned_at = 0

    def _prune(self) -> None:
        base = self._base
        kept: dict[str, int | list[int]] = {}
        for chunk, seen in self._positions.items():
            if isinstance(seen, int):
                if seen >= base:
                    kept[chunk] = seen
            elif seen := [p for p in seen if p >= base]:
                kept[chunk] = seen
        self._positions = kept
        self._pruned_at = base

    def add(self, text: str, at_least: int, repeats: Repeats) -> tuple[str, int] | None:
        """Add `text` to the buffer (cutting its front beyond `limit` characters) and record every chunk from
        the scan position on, in text order; stop at the first chunk seen at least `at_least` (>= 2) times
        whose positions (oldest first, in the buffer) `repeats` accepts, and return it with its count. The
        scan goes on from that chunk at the next call, so it is recorded again then. `repeats` is given the
        buffer and the absolute position of its first character, to read the text between positions.

        Equivalent to visiting each position in turn, but a chunk that was not seen before and occurs once in
        the new stretch ends with one position and cannot reach `at_least`: those are recorded in bulk, and
        only the others are visited in order.
        """
        self._buffer += text
        excess = len(self._buffer) - self.limit
        if excess > 0:
            self._buffer = self._buffer[excess:]
            self._base += excess
            self._scan = max(self._scan, self._base)
            if self._base - self._pruned_at >= self.limit:  # amortised: drop positions cut off
                self._prune()
        size = self.size
        buffer, base = self._buffer, self._base
        first, last = self._scan, base + len(buffer) - size
        if first > last:
            return None
        chunks = [buffer[i:i + size] for i in range(first - base, last - base + 1)]
        # the hash of each chunk, as its text: the chunk itself unless a lone surrogate (half an emoji) is in it;
        # two texts can share one only where it has a U+FFFD (each lone surrogate's), so only then are they compared
        stretch = buffer[first - base:]
        shared = not stretch.isascii() and _SHARED_HASH.search(stretch) is not None
        keys = utf8_slices(stretch, size) if shared else chunks
        positions = self._positions
        distinct = set(keys)
        hot = positions.keys() & distinct  # seen before ...
        if len(distinct) < len(keys):  # ... or more than once in this stretch
            hot.update(c for c, n in Counter(keys).items() if n > 1)
        end = len(keys)  # the scan reaches this offset (exclusive) unless `repeats` stops it first
        found = None
        for k in [k for k, c in enumerate(keys) if c in hot] if hot else ():
            key, scan = keys[k], first + k
            recorded = positions.get(key)
            if recorded is None:
                positions[key] = scan
                continue
            # positions cut off with the buffer's front no longer count
            if isinstance(recorded, int):
                seen = [recorded] if recorded >= base else []
            else:
                seen = recorded
                if seen and seen[0] < base:
                    seen[:] = [p for p in seen if p >= base]
            chunk = chunks[k]
            if shared and seen and buffer[seen[0] - base:seen[0] - base + size] != chunk:
                continue  # a hash shared with other text: Gemini records nothing for this chunk
            positions[key] = seen
            seen.append(scan)
            if len(seen) >= at_least and repeats(seen, buffer, base):
                end = k  # the scan stops here: the next text records this chunk again
                found = (chunk, len(seen))
                break
        # the others in bulk: written over every chunk scanned, then the visited ones put back
        visited = {c: positions[c] for c in hot if c in positions}
        positions.update(zip(keys[:end], range(first, first + end), strict=True))
        positions.update(visited)
        self._scan = first + end
        return found
