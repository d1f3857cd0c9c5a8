"""Reading an agent's text for repetition, free of any rule: which text is markdown structure, and where each
fixed-size chunk of the text seen so far recurs (the machinery of the stuck detector's Gemini content check)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Final, final

__all__ = ["CODE_FENCE", "DIVIDER", "STRUCTURE", "ChunkIndex", "Repeats"]

# Whether a chunk's positions (absolute, oldest first) are a repetition; given the buffer and the absolute
# position of its first character (`buffer[p - base:q - base]` is the text from p to q).
Repeats = Callable[[list[int], str, int], bool]

# Markdown as Gemini CLI's loop detection reads it, quirks included: text with structure (a table, a list or
# numbered item, a heading, a blockquote), a divider line or a code fence is not prose that can chant.
CODE_FENCE: Final = "```"
STRUCTURE: Final = (
    re.compile(r"(^|\n)\s*(\|.*\||[|+-]{3,})"),  # a table row or rule
    re.compile(r"(^|\n)\s*[*-+]\s"),  # a list item: `*`…`+`, so a `- ` bullet is not one (as in Gemini)
    re.compile(r"(^|\n)\s*\d+\.\s"),  # a numbered item
    re.compile(r"(^|\n)#+\s"),  # a heading
    re.compile(r"(^|\n)>\s"),  # a blockquote
)
DIVIDER: Final = re.compile(r"[+-_=*\u2500-\u257F]+")  # `+`…`_` takes in digits and capitals too (as in Gemini)


@final
class ChunkIndex:
    """The positions of every `size`-character chunk of the text added since the last `clear`, in a buffer that
    keeps the last `limit` characters.

    Positions are absolute (counted from the last `clear`), so they survive the buffer's front being cut; a
    position cut off with the front no longer counts. Each chunk is recorded once, by `scan`, in text order.
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
        positions = self._positions
        distinct = set(chunks)
        hot = positions.keys() & distinct  # seen before ...
        if len(distinct) < len(chunks):  # ... or more than once in this stretch
            hot.update(c for c, n in Counter(chunks).items() if n > 1)
        end = len(chunks)  # the scan reaches this offset (exclusive) unless `repeats` stops it first
        found = None
        for k in [k for k, c in enumerate(chunks) if c in hot] if hot else ():
            chunk, scan = chunks[k], first + k
            recorded = positions.get(chunk)
            if recorded is None:
                positions[chunk] = scan
                continue
            # positions cut off with the buffer's front no longer count
            if isinstance(recorded, int):
                seen = [recorded] if recorded >= base else []
                positions[chunk] = seen
            else:
                seen = recorded
                if seen and seen[0] < base:
                    seen[:] = [p for p in seen if p >= base]
            seen.append(scan)
            if len(seen) >= at_least and repeats(seen, buffer, base):
                end = k  # the scan stops here: the next text records this chunk again
                found = (chunk, len(seen))
                break
        # the others in bulk: written over every chunk scanned, then the visited ones put back
        visited = {c: positions[c] for c in hot if c in positions}
        positions.update(zip(chunks[:end], range(first, first + end), strict=True))
        positions.update(visited)
        self._scan = first + end
        return found
