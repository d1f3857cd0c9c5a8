"""Corpora named where `loopguard run` and `loopguard eval` take paths: a manifest file, a corpus archive, or the
name of an installed corpus (a path that does not exist), each replaced by its runs' files.

A plain folder stays a folder, even one holding a manifest: `run FOLDER` runs the files that are there.
The check is on the names alone, so a command given only files and folders imports no corpus code.
"""

from __future__ import annotations

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


def names_corpus(raw: str | Path) -> bool:
    """Whether a path argument names a corpus: a manifest file, a corpus archive (a tarball of agent logs is
    not one), or nothing on disk (a name)."""
    p = Path(raw)
    if str(raw).lower().endswith(_ARCHIVES) and p.is_file():
        from ..corpora._archive import is_corpus_archive

        return is_corpus_archive(p)
    return p.name == CORPUS_MANIFEST or not p.exists()


def corpora_in(paths: Sequence[str | Path], *, logs: bool = False) -> tuple[list[str | Path], list[Corpus]]:
    """`paths` with each corpus reference resolved: (its trace files, or with `logs` its trace and log files,
    in place of the reference, and the other paths as they are; the corpora found)."""
    if not any(names_corpus(p) for p in paths):
        return list(paths), []
    from ..corpora import resolve_corpus

    plain: list[str | Path] = []
    found: list[Corpus] = []
    for raw in paths:
        if names_corpus(raw):
            corpus = resolve_corpus(raw)
            found.append(corpus)
            plain += corpus.run_paths if logs else corpus.trace_paths
        else:
            plain.append(raw)
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
