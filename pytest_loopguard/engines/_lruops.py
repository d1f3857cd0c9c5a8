"""`LRUMap.increment` as a function of a compiled module: the count the engines update on nearly every call.

`LRUMap` subclasses `OrderedDict` and stays Python (see docs/performance.md, "Compiled build"), so a compiled engine
calling its method enters the interpreter for a few lines; called as this function, in the compiled build, the
update runs without a Python frame. `LRUMap.increment` calls it, so the rule is written once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from .lru import LRUMap

__all__ = ["increment"]

K = TypeVar("K")

# the C methods, called directly: the subclass's own `__setitem__` would move and evict as an assignment does
_set: Final[Any] = OrderedDict.__setitem__
_pop: Final[Any] = OrderedDict.pop
_popitem: Final[Any] = OrderedDict.popitem


def increment(counts: LRUMap[K, int], key: K) -> int:
    """Add one to `key`'s count (0 when absent), mark it used and return the new count.

    Taking the key out and putting it back moves it to the most recently used end without a separate
    `move_to_end`, and only a new key can need an eviction.
    """
    count: int = _pop(counts, key, 0) + 1
    _set(counts, key, count)
    if count == 1 and len(counts) > counts.cap:
        _popitem(counts, False)
        counts.evicted += 1
    return count
