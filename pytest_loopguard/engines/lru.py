"""LRUMap: a dict capped at a number of keys that evicts the least recently used one, bounding engine state."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

__all__ = ["DEFAULT_MAX_KEYS", "LRUMap"]

K = TypeVar("K")
V = TypeVar("V")

# generous: no trace in traces/ nor the real corpus comes near it, so verdicts only change on runs that
# make this many distinct calls (docs/engines.md, "Bounded state")
DEFAULT_MAX_KEYS = 10_000


class LRUMap(OrderedDict[K, V]):
    """A mapping of at most `cap` keys: assignment marks a key used, and a new key past the cap evicts the
    least recently used one. Iteration goes from least to most recently used.

    Reads (`get`, `[]`) stay the C ones and do not mark a key: engines count what they look up, so the
    assignment that follows marks it; one that only reads a key it must keep calls `move_to_end`.
    """

    def __init__(self, cap: int) -> None:
        super().__init__()
        if cap < 1:
            raise ValueError(f"cap: expected an integer >= 1, got {cap!r}")
        self.cap = cap
        self.evicted = 0  # keys dropped for the cap (reports and tests read it)

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        if len(self) > self.cap:
            self.popitem(last=False)
            self.evicted += 1
