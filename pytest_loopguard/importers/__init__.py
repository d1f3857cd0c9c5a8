"""Importers: agent logs (SWE-agent, mini-swe-agent, OpenHands, multi-agent chats...) into loopguard traces.

Library entry points: `import_runs` (a path or `Source` → `ImportedRun`s), `import_traces` (→ `Trace`s)
and `tar_traces` (the members of a tarball, read without unpacking). Formats are pluggable like engines:
entry points of the `loopguard.importers` group, or `IMPORTERS.register` in code (docs/plugins.md); a
plugin's importer writes its steps with `build.ImportedRunBuilder`.
"""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._convert import import_runs, import_traces, tar_traces, to_trace
    from .base import ImportedRun, Importer, Row, Source, trace_name
    from .bench import import_bench
    from .build import ImportedRunBuilder
    from .recognise import skip_note
    from .registry import ENTRY_POINT_GROUP, IMPORTERS, available, builtin_importers, detect, get, register_importer

__all__ = [
    "ENTRY_POINT_GROUP",
    "IMPORTERS",
    "ImportedRun",
    "ImportedRunBuilder",
    "Importer",
    "Row",
    "Source",
    "available",
    "builtin_importers",
    "detect",
    "get",
    "import_bench",
    "import_runs",
    "import_traces",
    "register_importer",
    "skip_note",
    "tar_traces",
    "to_trace",
    "trace_name",
]

__getattr__, __dir__ = exports(__name__, {
    "_convert": ("import_runs", "import_traces", "tar_traces", "to_trace"),
    "base": ("ImportedRun", "Importer", "Row", "Source", "trace_name"),
    "bench": ("import_bench",),
    "build": ("ImportedRunBuilder",),
    "recognise": ("skip_note",),
    "registry": ("ENTRY_POINT_GROUP", "IMPORTERS", "available", "builtin_importers", "detect", "get",
                 "register_importer"),
})
