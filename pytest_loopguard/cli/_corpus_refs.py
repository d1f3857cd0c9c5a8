"""Corpora named where `loopguard run` and `loopguard eval` take paths: a manifest file, a corpus archive, or the
name of an installed corpus (a path that does not exist), each replaced by its runs' files.

A plain folder stays a folder, even one holding a manifest: `run FOLDER` runs the files that are there.
The check is on the names alone, so a command given only files and folders imports no corpus code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LoopguardError, TraceError
from ..io._format import CORPUS_MANIFEST

if TYPE_CHECKING:
    from ..corpora import Corpus
    from ..runtime._policy import Policy
    from ._corpus import RunItem

__all__ = ["corpora_in", "eval_paths", "log_items", "names_corpus"]


_ARCHIVES = (".tar.gz", ".tgz")
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*(==\S+)?")  # a corpus name (corpora's manifest schema), maybe pinned
_FILES = (".yaml", ".yml", ".json", ".jsonl", ".traj", ".md")  # what names a file, not a corpus


def names_corpus(raw: str | Path) -> bool:
    """Whether a path argument names a corpus: a manifest file, a corpus archive (a tarball of agent logs is
    not one), or an installed corpus's name (`NAME` or `NAME==VERSION`: nothing on disk, no folder in it, no
    file suffix: a missing `traces/x.yaml` is a missing file, reported as one)."""
    p = Path(raw)
    if str(raw).lower().endswith(_ARCHIVES) and p.is_file():
        from ..corpora._archive import is_corpus_archive

        return is_corpus_archive(p)
    if p.name == CORPUS_MANIFEST:
        return True
    return _NAME.fullmatch(str(raw)) is not None and not p.exists() and not str(raw).lower().endswith(_FILES)


def corpora_in(paths: Sequence[str | Path], *, logs: bool = False,
               errors: list[LoopguardError] | None = None) -> tuple[list[str | Path], list[Corpus]]:
    """`paths` with each corpus reference resolved: (its trace files, or with `logs` its trace and log files,
    in place of the reference, and the other paths as they are; the corpora found). A reference that does not
    resolve raises its `CorpusError`, or is appended to `errors` when given (`run` goes on with the rest)."""
    if not any(names_corpus(p) for p in paths):
        return list(paths), []
    from ..corpora import resolve_corpus

    plain: list[str | Path] = []
    found: list[Corpus] = []
    for raw in paths:
        if not names_corpus(raw):
            plain.append(raw)
            continue
        try:
            corpus = resolve_corpus(raw)
        except LoopguardError as exc:
            if errors is None:
                raise
            errors.append(exc)
            continue
        found.append(corpus)
        plain += corpus.run_paths if logs else corpus.trace_paths
    return plain, found


def log_items(corpora: Sequence[Corpus], policy: Policy | None) -> Iterator[RunItem]:
    """Each run of the corpora's agent logs, imported in memory, replayed under `policy` (None: its own) and
    checked, as `loopguard run` items; a log that does not import is its error."""
    if not corpora:
        return
    from ..core._expect import check
    from ..io._runner import execute

    for corpus in corpora:
        for cfile in corpus.manifest.of_kind("log"):
            try:
                traces = corpus.traces_of(cfile)
            except TraceError as exc:
                yield exc.located(file=str(corpus.folder / cfile.path))
                continue
            for trace in traces:
                try:
                    result = execute(trace, policy)
                except LoopguardError as exc:
                    yield exc
                    continue
                yield result, check(result)


def eval_paths(paths: Sequence[str], labels: str | None) -> tuple[list[str | Path], str | None]:
    """`loopguard eval`'s paths with each corpus replaced by its runs' files, and the labels to score them
    with: `labels` when given, else the labels of the one corpus named (two corpora with labels need
    `--labels`: a labels file names the runs of one folder)."""
    plain, found = corpora_in(paths, logs=True)
    if labels is None:
        with_labels = [c.labels_path for c in found if c.labels_path is not None]
        if len(with_labels) > 1:
            raise TraceError("several corpora with labels; name the labels to score with --labels", field="--labels")
        if with_labels:
            labels = str(with_labels[0])
    return plain, labels
