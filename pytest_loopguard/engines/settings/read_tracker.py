"""read_tracker's settings: the fields a policy file may set (the rule is `engines/read_tracker.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..lru import DEFAULT_MAX_KEYS
from . import EngineSettings, at_least

__all__ = ["Settings"]


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    warn_at: int = 3
    block_at: int = 4
    shared_streak: bool = False  # hermes: reads and searches share one last-key/count pair
    search_pagination: bool = True  # hermes (the seed's version): False
    unchanged_stub: bool = False  # hermes-current: True
    read_offset_default: int = 1
    # arguments that name a read's file when `path` is absent (Hermes reads `path` only: off in its presets)
    path_fallbacks: tuple[str, ...] = ()
    read_limit_default: int = 500
    search_target_default: str = "content"
    search_path_default: str = "."
    search_limit_default: int = 50
    search_offset_default: int = 0
    # per-file layer (default; None = off): thresholds chosen with `loopguard eval`, docs/presets.md
    file_reads_warn_at: int | None = None
    file_reads_warn_every: int = 10
    file_reads_block_at: int | None = None
    exact_reread_warn_at: int | None = None
    file_reverts_warn_at: int | None = None
    # per-region and per-file maps keep at most this many keys: regions drop the first read, counters the
    # least recently used (docs/engines.md, "Bounded state")
    max_keys: int = DEFAULT_MAX_KEYS

    def __post_init__(self) -> None:
        at_least(self, 1, "max_keys")
