"""LRUMap: a dict capped at a number of keys that evicts the least recently used one, bounding engine state."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

from ._lruops import increment as _increment

__all__ = ["DEFAULT_MAX_KEYS", "LRUMap"]

K = TypeVar("K")
V = TypeVar("V")

# generous: no trace in traces/ nor the real corpus comes near it, so verdicts only change on runs that
# make this many distinct calls (docs/engines.md, "Bounded state")
DEFAULT_MAX_KEYS = 10_000

# the C methods, called directly: `super()` and attribute look-ups cost more than the work in a hot path
_set = OrderedDict.__setitem__
_move_to_end = OrderedDict.move_to_end
_popitem = OrderedDict.popitem


class LRUMap(OrderedDict[K, V]):
    """A mapping of at most `cap` keys: assignment marks a key used, and a new key past the cap evicts the
    least recently used one. Iteration goes from least to most recently used.

    Reads (`get`, `[]`) stay the C ones and do not mark a key: engines count what they look up, so the
    assignment that follows marks it; one that only reads a key it must keep calls `move_to_end`.
    """

    __slots__ = ("cap", "evicted")

    def __init__(self, cap: int) -> None:
        super().__init__()
        if cap < 1:
            raise ValueError(f"cap: expected an integer >= 1, got {cap!r}")
        self.cap = cap
        self.evicted = 0  # keys dropped for the cap (reports and tests read it)

    def __setitem__(self, key: K, value: V) -> None:
        _set(self, key, value)
        _move_to_end(self, key)
        if len(self) > self.cap:
            _popitem(self, False)
            self.evicted += 1

    def increment(self: LRUMap[K, int], key: K) -> int:
        """Add one to `key`'s count (0 when absent), mark it used and return the new count (`_lruops.increment`,
        which the built-in engines call directly)."""
        return _increment(self, key)
