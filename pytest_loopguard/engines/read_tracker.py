"""read_tracker: consecutive identical reads and searches, and the unchanged-file stub (seed 001).

Two layers, both keyed by what the call asks for rather than by its whole argument text:

- Consecutive layer (every Hermes version and `default`): a read is keyed by (path as given, offset,
  limit), a search by (pattern, target, path, file_glob) plus (limit, offset) when `search_pagination`.
  The same key as the last one counts up, another key starts again at 1; `warn_at` warns (the content is
  still returned), `block_at` and later block. Any call that is neither a read nor a search resets the
  count(s). With `shared_streak` reads and searches share one last-key/count pair (Hermes); without it
  each has its own streak, so an interleaved search does not reset a read streak (`default`).
- Unchanged layer (`unchanged_stub`, hermes-current), consulted first and for reads only: a region whose
  file was not written since its last full read is answered with a stub (`read_tracker.unchanged`), and
  a second or later such hit is blocked as a repeat. Hits do not touch the consecutive count. A full read
  (the call ran and returned content) clears the region's hits; a write of the path, a read reporting
  `result.changed`, or a compaction makes the tracker forget what it knew was unchanged.

Counting happens in `before_call`, so a call blocked by any engine still counts (the agent made it);
what was read is learned in `after_call`, only from reads that ran and succeeded.

The ordered set of regions read (`regions`) survives compaction: the context engine injects it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..fingerprint import key_part
from ..hookspecs import hookimpl
from ..model import ToolCall, ToolResult, Verdict
from .base import Engine, EngineSettings

if TYPE_CHECKING:
    from ..runtime import RunContext

__all__ = ["ENGINE", "ReadTracker", "Region", "Settings"]

Region = tuple[Any, Any, Any]  # (path as given, offset, limit)


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    warn_at: int = 3
    block_at: int = 4
    shared_streak: bool = False  # hermes: reads and searches share one last-key/count pair
    search_pagination: bool = True  # hermes (the seed's version): False
    unchanged_stub: bool = False  # hermes-current: True
    read_offset_default: int = 1
    read_limit_default: int = 500
    search_target_default: str = "content"
    search_path_default: str = "."
    search_limit_default: int = 50
    search_offset_default: int = 0


ReadTrackerSettings = Settings  # the class attribute `Settings` below shadows the name inside the class


class ReadTracker(Engine):
    name = "read_tracker"
    Settings = Settings
    # Every reason code this engine's verdicts carry (rule coverage lists the ones no trace exercises).
    REASONS = (
        "read_tracker.repeat_warning",
        "read_tracker.repeat_block",
        "read_tracker.unchanged",
    )

    def __init__(self, settings: ReadTrackerSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        self.settings: ReadTrackerSettings = settings
        # one streak when shared; otherwise index 0 is the read streak and index 1 the search streak
        self._last: list[Hashable | None] = [None, None]
        self._count = [0, 0]
        self._regions: dict[Region, None] = {}  # insertion-ordered set of regions read
        self._fresh: dict[Region, int] = {}  # region -> stub hits since its last full read
        self._fresh_by_path: dict[Any, set[Region]] = {}

    # ---- public state ------------------------------------------------------------------------------
    @property
    def regions(self) -> list[Region]:
        """Every region (path, offset, limit) read so far, in first-read order; kept across compaction."""
        return list(self._regions)

    # ---- keys --------------------------------------------------------------------------------------
    def _region(self, args: Mapping[str, Any]) -> Region:
        s = self.settings
        return (
            key_part(args.get("path")),
            key_part(args.get("offset", s.read_offset_default)),
            key_part(args.get("limit", s.read_limit_default)),
        )

    def _search_key(self, args: Mapping[str, Any]) -> Hashable:
        s = self.settings
        key: tuple[Hashable, ...] = (
            "search",
            key_part(args.get("pattern")),
            key_part(args.get("target", s.search_target_default)),
            key_part(args.get("path", s.search_path_default)),
            key_part(args.get("file_glob")),
        )
        if s.search_pagination:
            key += (
                key_part(args.get("limit", s.search_limit_default)),
                key_part(args.get("offset", s.search_offset_default)),
            )
        return key

    # ---- hooks -------------------------------------------------------------------------------------
    @hookimpl
    def loopguard_before_call(self, call: ToolCall, result: ToolResult | None) -> Verdict | None:
        kind = self.run.kind(call)
        if kind == "read":
            region = self._region(call.args)
            if self.settings.unchanged_stub:
                if result is not None and result.changed:
                    self._forget_path(region[0])
                else:
                    hits = self._fresh.get(region)
                    if hits is not None:
                        self._fresh[region] = hits + 1
                        return self._stub(region, hits + 1)
            return self._count_streak(0, ("read", *region), "read", region[0])
        if kind == "search":
            return self._count_streak(0 if self.settings.shared_streak else 1, self._search_key(call.args),
                                      "search", call.args.get("path", self.settings.search_path_default))
        self._count[0] = self._count[1] = 0  # the next read or search starts a new streak
        return None

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> None:
        if blocked or result is None:
            return
        kind = self.run.kind(call)
        if kind == "read":
            if not result.ok:  # an error returned no content: nothing was read
                return
            region = self._region(call.args)
            self._regions[region] = None
            if self.settings.unchanged_stub:
                self._fresh[region] = 0
                self._fresh_by_path.setdefault(region[0], set()).add(region)
        elif kind == "write" and self.settings.unchanged_stub:
            self._forget_path(key_part(call.args.get("path")))

    @hookimpl
    def loopguard_compacted(self) -> None:
        # the model no longer sees what it read, so "unchanged" stubs would trap it; `regions` stays
        self._fresh.clear()
        self._fresh_by_path.clear()

    # ---- rules -------------------------------------------------------------------------------------
    def _forget_path(self, path: Any) -> None:
        for region in self._fresh_by_path.pop(path, ()):
            self._fresh.pop(region, None)

    def _count_streak(self, streak: int, key: Hashable, what: str, path: Any) -> Verdict | None:
        if self._last[streak] == key:
            self._count[streak] += 1
        else:
            self._last[streak] = key
            self._count[streak] = 1
        count = self._count[streak]
        s = self.settings
        if count < s.warn_at and count < s.block_at:
            return None
        data = {"kind": what, "path": path, "count": count, "warn_at": s.warn_at, "block_at": s.block_at}
        subject = "read this exact file region" if what == "read" else "run this exact search"
        if count >= s.block_at:
            return Verdict(
                self.name, "block", "read_tracker.repeat_block",
                f"BLOCKED: you have {subject} {count} times in a row. Nothing has changed since: use the "
                "information you already have and proceed with writing or answering.",
                data,
            )
        if count == s.warn_at:
            return Verdict(
                self.name, "warn", "read_tracker.repeat_warning",
                f"You have {subject} {count} times in a row and the content has not changed. Use what you "
                "already have; if you are stuck in a loop, stop re-reading and move on.",
                data,
            )
        return None

    def _stub(self, region: Region, hits: int) -> Verdict:
        path, offset, limit = region
        data = {"kind": "read", "path": path, "offset": offset, "limit": limit, "hits": hits}
        if hits == 1:
            return Verdict(
                self.name, "block", "read_tracker.unchanged",
                f"File unchanged since last read: {path} (offset {offset}, limit {limit}). The content of "
                "your earlier read is still current; refer to it instead of reading again.",
                data,
            )
        count = hits + 1
        return Verdict(
            self.name, "block", "read_tracker.repeat_block",
            f"BLOCKED: you have read {path} (offset {offset}, limit {limit}) {count} times and it has not "
            "changed since. Stop re-reading it and proceed with writing or answering.",
            {**data, "count": count},
        )


ENGINE = ReadTracker
