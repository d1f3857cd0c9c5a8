"""TextKey: a dict key of a label and a text, equal when both are equal, that hashes a sample of a long text.

Two rules count texts they have seen: loop_guard's identical outcome (a call's identity and its result's first
1,000 bytes) and read_tracker's exact re-read (a read's fingerprint and the whole text it returned). As a tuple,
such a key hashes the whole text of every result (each result is a string of its own, whose hash no one has
worked out yet): a few KB a call, the largest share of a live check's work. Equality only needs the texts
compared, which stops at their first difference. A TextKey hashes the label, the length and the first and last
64 characters of a text longer than 256 characters, and compares label and text in full: a dict finds exactly
the keys a tuple key would, so counts, evictions and verdicts are the same (tests/engines/test_textkey.py).
Texts that differ only between head and tail with the same length share a hash and cost a full comparison on a
lookup: an agent rereading a file after same-length edits in its middle puts each version in one chain of the
dict, at most the map's cap (`LRUMap`) long.

Only the compiled build uses it (`SAMPLED`): there its hash and equality are C functions, while in pure Python
each dict operation would call them as Python methods, which costs more than hashing the text; the rules then
keep the (label, text) tuple, which finds the same keys.
"""

from __future__ import annotations

from typing import Final, final

from .._mypyc import mypyc_attr

__all__ = ["SAMPLED", "TextKey"]

SAMPLED: Final = not __file__.endswith(".py")  # this module is compiled (an extension module's file)

_WHOLE: Final = 256  # a text this short is hashed whole (its own cached hash, when it has one)
_SAMPLE: Final = 64


@final
@mypyc_attr(acyclic=True)  # a label and a text: never in a cycle, so the collector need not track it
class TextKey:
    __slots__ = ("_hash", "label", "text")

    def __init__(self, label: str, text: str | bytes) -> None:
        self.label = label
        self.text = text
        n = len(text)
        if n <= _WHOLE:
            self._hash = hash((label, text))
        # head and tail as one string (one hash to work out, not two); a branch per kind, since a str joins a str
        # and bytes join bytes (the type checker refuses `+` on the union)
        elif isinstance(text, str):
            self._hash = hash((label, n, text[:_SAMPLE] + text[n - _SAMPLE :]))
        else:
            self._hash = hash((label, n, text[:_SAMPLE] + text[n - _SAMPLE :]))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TextKey):
            return NotImplemented
        return self._hash == other._hash and self.label == other.label and self.text == other.text

    def __repr__(self) -> str:
        return f"TextKey({self.label!r}, <{len(self.text)} {type(self.text).__name__}>)"
