"""`loopguard scan`: the coding agents' session logs on this machine, imported in memory, and the loops in them."""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._discover import AGENTS, LogFile, discover, logs_under
    from ._loops import LOOP_ENGINES, Loop, find_loops
    from ._report import scan_document, write_scan_report
    from ._session import SessionScan, scan_log

__all__ = [
    "AGENTS",
    "LOOP_ENGINES",
    "LogFile",
    "Loop",
    "SessionScan",
    "discover",
    "find_loops",
    "logs_under",
    "scan_document",
    "scan_log",
    "write_scan_report",
]

__getattr__, __dir__ = exports(__name__, {
    "_discover": ("AGENTS", "LogFile", "discover", "logs_under"),
    "_loops": ("LOOP_ENGINES", "Loop", "find_loops"),
    "_report": ("scan_document", "write_scan_report"),
    "_session": ("SessionScan", "scan_log"),
})
