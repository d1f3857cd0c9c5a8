"""Which importers exist (built-in, plugins, `loopguard.importers` entry points) and which fits a source."""

from __future__ import annotations

from collections.abc import Iterable

import pluggy

from ..core.hookspecs import PROJECT
from ..errors import TraceError
from . import hookspecs
from .base import Importer, Source

__all__ = ["ENTRY_POINT_GROUP", "available", "builtin_importers", "detect", "get"]

ENTRY_POINT_GROUP = "loopguard.importers"


def builtin_importers() -> list[Importer]:
    """The importers that ship with pytest-loopguard, in detection order."""
    from .ag2 import AG2GroupChat
    from .magentic import MagenticOne
    from .mini_swe_agent import MiniSweAgent1, MiniSweAgent11
    from .openhands import OpenHandsV0
    from .openhands_sdk import OpenHandsV1
    from .sdk_formats import sdk_importers
    from .swe_agent import SweAgent

    # The SDK-log formats come last: a framework's own log (mini-swe-agent, AG2) may hold chat messages too.
    return [SweAgent(), MiniSweAgent1(), MiniSweAgent11(), OpenHandsV0(), OpenHandsV1(), MagenticOne(),
            AG2GroupChat(), *sdk_importers()]


def available(plugins: Iterable[object] = ()) -> list[Importer]:
    """Built-in importers, then those from `plugins` and from entry points of `loopguard.importers`.

    A later importer with an already-taken name is ignored, so a plugin cannot shadow a built-in by accident.
    """
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    for plugin in plugins:
        pm.register(plugin)
    pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    found = builtin_importers()
    names = {i.name for i in found}
    # pluggy calls the last registered first; reverse so registration order is detection order
    for batch in reversed(pm.hook.loopguard_importers()):
        for imp in batch:
            if imp.name not in names:
                names.add(imp.name)
                found.append(imp)
    return found


def get(name: str, importers: list[Importer]) -> Importer:
    """The importer named `name`; a `TraceError` listing the known names otherwise."""
    for imp in importers:
        if imp.name == name:
            return imp
    known = ", ".join(sorted(i.name for i in importers))
    raise TraceError(f"unknown format {name!r}; expected one of {known}", field="--from")


def detect(source: Source, importers: list[Importer]) -> Importer:
    """The first importer whose `sniff` recognises `source`; a one-line `TraceError` if none does."""
    for imp in importers:
        if imp.sniff(source):
            return imp
    if not source.is_dir and source.head[:1] in ("{", "[") and source.parsed is None and not source.is_jsonl:
        _ = source.document  # raises the parse error: a truncated or broken JSON file, named with its line
    known = ", ".join(i.name for i in importers)
    what = "the file is empty" if not source.is_dir and not source.head else "no importer recognises this file"
    raise TraceError(f"{what}; expected an agent log in one of: {known} (or name the format with --from)",
                     file=source.name)
