"""Which importers exist (built-in, `loopguard.importers` entry points, registered in code) and which fits a source."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import pluggy

from ..core._registry import Registry
from ..core.hookspecs import PROJECT
from ..errors import TraceError
from . import hookspecs
from .base import Importer, Source

__all__ = ["ENTRY_POINT_GROUP", "IMPORTERS", "available", "builtin_importers", "detect", "get", "register_importer"]

ENTRY_POINT_GROUP: Final = "loopguard.importers"


def _hook_module(target: object) -> bool:
    """The older form of an importer plugin: a module implementing the `loopguard_importers` hook."""
    return callable(getattr(target, "loopguard_importers", None))


# Every importer class `--from` can name and detection can pick, the built-ins in detection order. The
# SDK-log formats come last: a framework's own log (mini-swe-agent, AG2) may hold chat messages too; OTel
# first among them (its `resourceSpans` key is unmistakable), Chat Completions, which takes plain
# role/content lists, last.
IMPORTERS: Final[Registry[Importer]] = Registry(
    "importer", Importer, ENTRY_POINT_GROUP, "IMPORTER",  # type: ignore[type-abstract]  # mypy#4717: abstract base
    builtins={name: f"{__package__}.{spec}" for name, spec in (
        ("swe-agent", "swe_agent:SweAgent"),
        ("mini-swe-agent-1", "mini_swe_agent:MiniSweAgent1"),
        ("mini-swe-agent-1.1", "mini_swe_agent:MiniSweAgent11"),
        ("openhands-v0", "openhands:OpenHandsV0"),
        ("openhands-v1", "openhands_sdk:OpenHandsV1"),
        ("magentic-one", "magentic:MagenticOne"),
        ("ag2-groupchat", "ag2:AG2GroupChat"),
        ("gemini-cli", "gemini_cli:GeminiCliImporter"),
        ("cline", "cline:ClineImporter"),
        ("aider", "aider:AiderChatHistory"),
        ("claude-code", "claude_code:ClaudeCodeImporter"),
        ("codex", "codex:CodexImporter"),
        ("otel", "otel:OtelImporter"),
        ("openai-responses", "openai_responses:ResponsesImporter"),
        ("anthropic", "anthropic:AnthropicImporter"),
        ("openai-chat", "openai_chat:ChatImporter"),
    )},
    older=_hook_module,
)

register_importer: Final = IMPORTERS.register


def builtin_importers() -> list[Importer]:
    """The importers that ship with pytest-loopguard, in detection order."""
    return [cls() for cls in IMPORTERS.builtins()]


def available(plugins: Iterable[object] = ()) -> list[Importer]:
    """Every importer, in detection order: the built-ins, those installed packages declare in the
    `loopguard.importers` entry points and those registered in code (`IMPORTERS`), then those `plugins`
    (and entry points of the older form) return from the `loopguard_importers` hook.

    A hook's importer with an already-taken name is ignored, so it cannot shadow a built-in by accident.
    """
    classes = IMPORTERS.classes()
    found = [cls() for cls in classes.values()]
    hooks = [*plugins, *IMPORTERS.older_plugins()]
    if hooks:
        pm = pluggy.PluginManager(PROJECT)
        pm.add_hookspecs(hookspecs)
        for plugin in hooks:
            pm.register(plugin)
        names = set(classes)
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
