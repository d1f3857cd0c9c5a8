"""LRUMap: a dict capped at a number of keys that evicts the least recently used one, bounding engine state."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar, overload

__all__ = ["DEFAULT_MAX_KEYS", "LRUMap"]

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")

# generous: no trace in traces/ nor the real corpus comes near it, so verdicts only change on runs that
# make this many distinct calls (docs/engines.md, "Bounded state")
DEFAULT_MAX_KEYS = 10_000


class LRUMap(OrderedDict[K, V]):
    """A mapping of at most `cap` keys: `get` and assignment mark a key used; a new key past the cap
    evicts the least recently used one. Iteration goes from least to most recently used."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        if cap < 1:
            raise ValueError(f"cap: expected an integer >= 1, got {cap!r}")
        self.cap = cap
        self.evicted = 0  # keys dropped for the cap (reports and tests read it)

    @overload  # type: ignore[override]  # same behaviour as dict.get; only the key order differs
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, default: V | D, /) -> V | D: ...
    def get(self, key: K, default: object = None, /) -> object:
        if key in self:
            self.move_to_end(key)
            return super().__getitem__(key)
        return default

    def __setitem__(self, key: K, value: V) -> None:
        # move_to_end only when the key is already there: a new key goes to the end anyway
        if key in self:
            self.move_to_end(key)
            super().__setitem__(key, value)
            return
        super().__setitem__(key, value)
        if len(self) > self.cap:
            self.popitem(last=False)
            self.evicted += 1
