"""ToolCall: a tool call and its identities, computed once per call (compiled in the compiled build, so the engines
read its fields as a struct's rather than through Python's attribute look-up)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, final

from ._identity import canonical_json, ordered_args_json

__all__ = ["ToolCall"]


@final
class ToolCall:
    """A tool call and its identities, computed once per call so engines never re-serialise arguments.

    The canonical identity is computed when the call is built; the as-written one (`ordered`, used by
    `identity: ordered` and for display) on first use, since most runs never ask for it. Treat a call
    as immutable: identities are cached on it.
    """

    __slots__ = ("_ordered", "args", "canonical", "fingerprint", "tool")

    def __init__(self, tool: str, args: Mapping[str, Any], canonical: str, ordered: str | None = None) -> None:
        self.tool = tool
        self.args = args
        self.canonical = canonical  # canonical JSON of args
        self.fingerprint = tool + "\x1f" + canonical  # tool + canonical
        self._ordered = ordered

    @classmethod
    def of(cls, tool: str, args: Mapping[str, Any] | None = None) -> ToolCall:
        a: Mapping[str, Any] = dict(args) if args else {}
        return cls(tool, a, canonical_json(a))

    @property
    def ordered(self) -> str:
        """The compact JSON of the arguments as written (key order kept, `1.0` is not `1`)."""
        if self._ordered is None:
            self._ordered = ordered_args_json(self.args, canonical=self.canonical)
        return self._ordered

    @property
    def ordered_fingerprint(self) -> str:
        """Tool + the as-written arguments."""
        return self.tool + "\x1f" + self.ordered

    def __eq__(self, other: object) -> bool:
        # the same object first: a live Session compares the call it is given with the one it announced, most
        # often the very object, and the as-written text would otherwise be worked out for that alone
        return other is self or (isinstance(other, ToolCall) and other.ordered_fingerprint == self.ordered_fingerprint)

    def __hash__(self) -> int:
        return hash(self.ordered_fingerprint)

    def __reduce__(self) -> tuple[type[ToolCall], tuple[str, Mapping[str, Any], str, str | None]]:
        # by its fields: the compiled class has no `__dict__` or slots for pickle's default to read
        return ToolCall, (self.tool, self.args, self.canonical, self._ordered)

    def __repr__(self) -> str:
        return f"ToolCall({self.tool}{self.ordered if self.args else ''})"

    def short(self, width: int = 60) -> str:
        """A one-line rendering for tables: `tool {"a":1}` cut to `width`."""
        text = self.tool if not self.args else f"{self.tool} {self.ordered}"
        return text if len(text) <= width else text[: width - 1] + "…"
