"""read_tracker: consecutive identical reads and searches, the unchanged-file stub (seed 001), and per-file counts.

Three layers; the first two are keyed by what the call asks for rather than by its whole argument text:

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

- Per-file layer (`default` only; off while its thresholds are None), on the call's targets
  (`run.target`, any tool, any form of read: `sed -n`, `cat`, `nl | sed`, an editor `view`): reads of one
  file in any range (`file_reads_warn_at`, again every `file_reads_warn_every`, blocked from
  `file_reads_block_at`); the same read call returning the same text again (`exact_reread_warn_at`: the
  content is already in the transcript); reverts of one file (`file_reverts_warn_at`: `git checkout F`, a
  backup copied over F). Real loops re-read a file with shifting ranges and other calls between, which
  the consecutive layer never sees. All three start afresh at a person's message.

Counting happens in `before_call`, so a call blocked by any engine still counts (the agent made it);
what was read is learned in `after_call`, only from reads that ran and succeeded.

The ordered set of regions read (`regions`) survives compaction: the tracker offers it to the run as
`run.reads` (the `ReadRegions` protocol of `core._runcontext`), and the context engine injects it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from ..core._identity import key_part
from ..core._model import Action, ToolCall, ToolResult, Verdict
from ..core._runcontext import Region
from ..core.hookspecs import hookimpl
from ._lruops import increment
from ._textkey import SAMPLED, TextKey
from .base import Engine
from .lru import LRUMap
from .settings.read_tracker import Settings

if TYPE_CHECKING:
    from ..core._model import Message
    from ..core._runcontext import RunContext

__all__ = ["ENGINE", "ReadTracker", "Region", "Settings"]
# argument types `key_part` returns as they are (exact types: a subclass might be a container)
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})



ReadTrackerSettings = Settings  # the class attribute `Settings` below shadows the name inside the class


class ReadTracker(Engine[ReadTrackerSettings]):
    name = "read_tracker"
    Settings = Settings
    # Every reason code this engine's verdicts carry (rule coverage lists the ones no trace exercises).
    REASONS = (
        "read_tracker.repeat_warning",
        "read_tracker.repeat_block",
        "read_tracker.unchanged",
        "read_tracker.exact_reread",
        "read_tracker.file_reads",
        "read_tracker.file_reads_block",
        "read_tracker.file_reverts",
    )

    def __init__(self, settings: ReadTrackerSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        # one streak when shared; otherwise index 0 is the read streak and index 1 the search streak
        self._last: list[Hashable | None] = [None, None]
        self._count = [0, 0]
        self._regions: dict[Region, None] = {}  # insertion-ordered set of regions read
        self._fresh: LRUMap[Region, int] = LRUMap(settings.max_keys)  # region -> stub hits since its last full read
        self._fresh_by_path: dict[Any, set[Region]] = {}  # path -> its regions in `_fresh` (the same cap)
        # per-file layer
        self._per_file = any(v is not None for v in (settings.file_reads_warn_at, settings.file_reads_block_at,
                                                     settings.exact_reread_warn_at, settings.file_reverts_warn_at))
        self.file_reads: LRUMap[str, int] = LRUMap(settings.max_keys)
        self.file_reverts: LRUMap[str, int] = LRUMap(settings.max_keys)
        # (call identity, result text) -> times returned
        self._rereads: LRUMap[TextKey | tuple[str, str], int] = LRUMap(settings.max_keys)
        self._previous: str | None = None  # the identity of the previous call that ran
        # the last call's kind and, for a read, its region: after_call reuses what before_call found for the
        # same call (a call's arguments never change, and its kind is the policy's)
        self._seen_call: ToolCall | None = None
        self._seen_kind: str | None = None
        self._read_region: Region = (None, None, None)
        run.reads = self  # what the other engines may read of this one (the context engine's injection)
        # the settings every call reads, as attributes of the engine's own (compiled, a settings read is a look-up
        # on a Python object; an engine attribute is a field)
        self._path_fallbacks = settings.path_fallbacks
        self._offset_default = settings.read_offset_default
        self._limit_default = settings.read_limit_default
        self._unchanged_stub = settings.unchanged_stub
        self._warn_at = settings.warn_at
        self._block_at = settings.block_at
        self._exact_reread_at = settings.exact_reread_warn_at
        self._counts_reads = settings.file_reads_warn_at is not None or settings.file_reads_block_at is not None

    # ---- public state ------------------------------------------------------------------------------
    @property
    def regions(self) -> list[Region]:
        """Every region (path, offset, limit) read so far, in first-read order; kept across compaction."""
        return list(self._regions)

    def recent_regions(self) -> Iterator[Region]:
        """The regions read so far, most recently first read first (no copy: the context engine walks
        only as far as its injection budget reaches)."""
        return reversed(self._regions)

    def state(self, call: ToolCall | None) -> dict[str, Any]:
        """The read and search streaks, and the reads (and reverts) this task of each file the call names."""
        out: dict[str, Any] = {"read_streak": self._count[0], "search_streak": self._count[1],
                               "regions_read": len(self._regions)}
        s = self.settings
        files = self.run.target(call).effect_files if call is not None else None
        if files:  # counted only where the policy reads the counts
            paths = [p for group in files.values() for p in group]
            if s.file_reads_warn_at is not None or s.file_reads_block_at is not None:
                out["file_reads"] = {p: self.file_reads.get(p, 0) for p in paths}
            if s.file_reverts_warn_at is not None:
                out["file_reverts"] = {p: self.file_reverts.get(p, 0) for p in paths}
        return out

    # ---- keys --------------------------------------------------------------------------------------
    def _region(self, args: Mapping[str, Any]) -> Region:
        path = args.get("path")
        if path is None and self._path_fallbacks:  # other names of the file's argument (`default`: Claude Code's,
            path = next((args[k] for k in self._path_fallbacks if k in args), None)  # Gemini CLI's)
        offset = args.get("offset", self._offset_default)
        limit = args.get("limit", self._limit_default)
        # scalars (nearly every read) are their own key part: `key_part` only when a value is a container
        if type(path) in _SCALARS and type(offset) in _SCALARS and type(limit) in _SCALARS:
            return (path, offset, limit)
        return (key_part(path), key_part(offset), key_part(limit))

    def _search_key(self, args: Mapping[str, Any]) -> Hashable:
        s = self.settings
        key: tuple[Any, ...] = (
            "search",
            args.get("pattern"),
            args.get("target", s.search_target_default),
            args.get("path", s.search_path_default),
            args.get("file_glob"),
        )
        if s.search_pagination:
            key += (args.get("limit", s.search_limit_default), args.get("offset", s.search_offset_default))
        if all(type(part) in _SCALARS for part in key):
            return key
        return tuple(key_part(part) for part in key)

    # ---- hooks -------------------------------------------------------------------------------------
    @hookimpl
    def loopguard_before_call(self, call: ToolCall, result: ToolResult | None) -> list[Verdict] | Verdict | None:
        if not self._per_file:
            return self._consecutive(call, result)
        files = self._count_files(call)
        streak = self._consecutive(call, result)
        if files is None:
            return streak
        return files if streak is None else [files, streak]

    def _consecutive(self, call: ToolCall, result: ToolResult | None) -> Verdict | None:
        kind = self._seen_kind = self.run.kind(call)
        self._seen_call = call
        if kind == "read":
            region = self._read_region = self._region(call.args)
            if self._unchanged_stub:
                if result is not None and result.changed:
                    self._forget_path(region[0])
                else:
                    hits = self._fresh.get(region)
                    if hits is not None:
                        self._fresh[region] = hits + 1
                        return self._stub(region, hits + 1)
            # the region is its own key: a 3-tuple never equals a search key (5 or 7 parts, "search" first)
            return self._count_streak(0, region, "read", region[0])
        if kind == "search":
            return self._count_streak(0 if self.settings.shared_streak else 1, self._search_key(call.args),
                                      "search", call.args.get("path", self.settings.search_path_default))
        self._count[0] = self._count[1] = 0  # the next read or search starts a new streak
        return None

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> Verdict | None:
        if blocked or result is None:
            return None
        self._learn(call, result)
        if self._per_file and self._exact_reread_at is not None:
            if result.ok:
                return self._exact_reread(call, result)
            self._previous = call.fingerprint
        return None

    def _learn(self, call: ToolCall, result: ToolResult) -> None:
        seen = call is self._seen_call
        kind = self._seen_kind if seen else self.run.kind(call)
        if kind == "read":
            if not result.ok:  # an error returned no content: nothing was read
                return
            region = self._read_region if seen else self._region(call.args)
            regions = self._regions
            if region not in regions:
                regions[region] = None
                if len(regions) > self.settings.max_keys:  # drop the first read: the list stays in read order
                    del regions[next(iter(regions))]
            if self._unchanged_stub:
                self._mark_fresh(region)
        elif kind == "write" and self._unchanged_stub:
            self._forget_path(key_part(call.args.get("path")))

    @hookimpl
    def loopguard_message(self, message: Message) -> None:
        if self._per_file and message.from_user:  # a person's new prompt: a new task for the per-file counts
            self.file_reads.clear()
            self.file_reverts.clear()
            self._rereads.clear()

    @hookimpl
    def loopguard_compacted(self) -> None:
        # the model no longer sees what it read, so "unchanged" stubs would trap it; `regions` stays
        self._fresh.clear()
        self._fresh_by_path.clear()

    # ---- rules -------------------------------------------------------------------------------------
    def _mark_fresh(self, region: Region) -> None:
        """A full read of `region`: its stub hits start again, and its path indexes it."""
        fresh = self._fresh
        if region not in fresh and len(fresh) >= fresh.cap:
            # the map is about to evict its least recently used region: the path index drops it too, so
            # the index holds exactly the regions the map does (at most `max_keys`)
            old = next(iter(fresh))
            regions = self._fresh_by_path[old[0]]
            regions.discard(old)
            if not regions:
                del self._fresh_by_path[old[0]]
        fresh[region] = 0
        self._fresh_by_path.setdefault(region[0], set()).add(region)

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
        if count < self._warn_at and count < self._block_at:
            return None
        s = self.settings
        data = {"kind": what, "path": path, "count": count, "warn_at": s.warn_at, "block_at": s.block_at}
        subject = "read this exact file region" if what == "read" else "run this exact search"
        if count >= s.block_at:
            return Verdict(
                self.name, Action.BLOCK, "read_tracker.repeat_block",
                f"BLOCKED: you have {subject} {count} times in a row. Nothing has changed since: use the "
                "information you already have and proceed with writing or answering.",
                data,
            )
        if count == s.warn_at:
            return Verdict(
                self.name, Action.WARN, "read_tracker.repeat_warning",
                f"You have {subject} {count} times in a row and the content has not changed. Use what you "
                "already have; if you are stuck in a loop, stop re-reading and move on.",
                data,
            )
        return None

    # ---- per-file layer ----------------------------------------------------------------------------
    def _count_files(self, call: ToolCall) -> Verdict | None:
        files = self.run.target(call).effect_files
        if not files:  # most calls name no file
            return None
        s = self.settings
        out: Verdict | None = None
        if s.file_reverts_warn_at is not None:
            for path in files.get("revert", ()):
                n = increment(self.file_reverts, path)
                if n >= s.file_reverts_warn_at and (n - s.file_reverts_warn_at) % s.file_reverts_warn_at == 0:
                    out = Verdict(
                        self.name, Action.WARN, "read_tracker.file_reverts",
                        f"You have put {path} back {n} times in this task (git checkout/restore, or a copy "
                        "copied over it): each attempt is undone and tried again. Before another revert, write "
                        "down why the last change failed and change the approach, or keep this version and "
                        "fix it forward.",
                        {"path": path, "count": n, "warn_at": s.file_reverts_warn_at},
                    )
        if not self._counts_reads:
            return out
        for path in files.get("read", ()):
            n = increment(self.file_reads, path)
            if s.file_reads_block_at is not None and n >= s.file_reads_block_at:
                return Verdict(
                    self.name, Action.BLOCK, "read_tracker.file_reads_block",
                    f"BLOCKED: you have read {path} {n} times in this task (any range, any command); this "
                    "read was not run. Work from what you have already read: make the change, or run a test "
                    "that checks your idea.",
                    {"path": path, "count": n, "block_at": s.file_reads_block_at},
                )
            first = s.file_reads_warn_at
            if first is not None and n >= first and (n - first) % max(s.file_reads_warn_every, 1) == 0:
                out = Verdict(
                    self.name, Action.WARN, "read_tracker.file_reads",
                    f"You have read {path} {n} times in this task (any range, any command). Reading it "
                    "again will not show anything new: note what you need from it, then make the change or "
                    "run a check that tests your idea.",
                    {"path": path, "count": n, "warn_at": first, "block_at": s.file_reads_block_at},
                )
        return out

    def _exact_reread(self, call: ToolCall, result: ToolResult) -> Verdict | None:
        previous, self._previous = self._previous, call.fingerprint
        target = self.run.target(call)
        if target.effect != "read" or not target.targets:  # most calls: no read of a file
            return None
        text = result.text  # the call succeeded: its text is what it showed
        # a repeat in a row is the consecutive layer's; a read that returned no text showed nothing
        if not text or previous == call.fingerprint:
            return None
        n = increment(self._rereads, TextKey(call.fingerprint, text) if SAMPLED else (call.fingerprint, text))
        at = self._exact_reread_at
        assert at is not None
        if n != at:
            return None
        path = target.targets[0]
        return Verdict(
            self.name, Action.WARN, "read_tracker.exact_reread",
            f"You have run this exact read of {path} {n} times and got the same text each time: it is "
            "already in the conversation above. Scroll back to it instead of reading again, and move on to "
            "the change or the next question.",
            {"path": path, "count": n, "warn_at": at},
        )

    def _stub(self, region: Region, hits: int) -> Verdict:
        path, offset, limit = region
        data = {"kind": "read", "path": path, "offset": offset, "limit": limit, "hits": hits}
        if hits == 1:
            return Verdict(
                self.name, Action.BLOCK, "read_tracker.unchanged",
                f"File unchanged since last read: {path} (offset {offset}, limit {limit}). The content of "
                "your earlier read is still current; refer to it instead of reading again.",
                data,
            )
        count = hits + 1
        return Verdict(
            self.name, Action.BLOCK, "read_tracker.repeat_block",
            f"BLOCKED: you have read {path} (offset {offset}, limit {limit}) {count} times and it has not "
            "changed since. Stop re-reading it and proceed with writing or answering.",
            {**data, "count": count},
        )


ENGINE = ReadTracker
