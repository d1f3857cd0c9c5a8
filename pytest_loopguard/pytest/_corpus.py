"""`pytest --loopguard-corpus NAME|PATH`: a shared corpus's traces and agent logs collected as tests, replayed under
its runs' own policies or `--loopguard-policy`.

The corpus's files become the session's paths (added to the command line's paths, or in place of the default
ones when none were given); its agent logs are collected like trace files, their runs imported in memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..errors import LoopguardError

if TYPE_CHECKING:
    from ..core._model import Trace

__all__ = ["add_corpora", "import_log"]


def add_corpora(config: pytest.Config, refs: list[str], update: bool) -> tuple[tuple[Path, ...], dict[str, str]]:
    """Resolve the corpora named by `--loopguard-corpus` and put their files on the session's paths: (their
    folders, to collect from, and each agent log's path -> its importer)."""
    if update:
        raise pytest.UsageError("--loopguard-update rewrites your own traces, never a shared corpus's; drop "
                                "--loopguard-corpus")
    from ..corpora import resolve_corpus

    folders: list[Path] = []
    logs: dict[str, str] = {}
    files: list[str] = []
    for ref in refs:
        try:
            corpus = resolve_corpus(ref)
        except LoopguardError as exc:
            raise pytest.UsageError(f"--loopguard-corpus: {exc}") from None
        folders.append(corpus.folder.resolve())
        for f in corpus.manifest.of_kind("trace", "log"):
            path = (corpus.folder / f.path).resolve()
            files.append(str(path))
            if f.kind == "log" and f.format is not None:
                logs[str(path)] = f.format
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args.extend(files)
    else:  # no paths given: the corpus alone, not the project's default test paths
        config.args[:] = files
    return tuple(folders), logs


def import_log(path: Path, fmt: str) -> list[Trace]:
    """The runs of a corpus's agent log, imported with its manifest's importer."""
    from ..core._limits import MAX_LOG_BYTES
    from ..importers import Source, import_traces

    return import_traces(Source.from_path(path, MAX_LOG_BYTES), fmt)
