"""`loopguard corpus init`: a folder of traces and agent logs described by a new (or refreshed) manifest."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import LoopguardError
from ._corpus import Corpus, labels_problems, manifest_files, published
from ._files import classify, folder_files
from ._manifest import (
    MANIFEST_NAME,
    OWN_POLICY,
    CorpusError,
    Manifest,
    Source,
    load_manifest,
    manifest_text,
    parse_manifest,
)

__all__ = ["init_corpus"]

_LABEL_NAMES = ("labels.yaml", "labels.yml")


def _default_name(folder: Path) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", folder.resolve().name.lower()).strip("-._")
    return name[:100] or "corpus"


def _inside(folder: Path, raw: str, what: str) -> str | None:
    """The corpus-relative POSIX path of a file named on the command line (relative to the working folder or
    to the corpus folder); None when no such file exists. A file outside the corpus is refused: a corpus
    ships what it names."""
    for candidate in (Path(raw), folder / raw):
        if candidate.is_file():
            try:
                return candidate.resolve().relative_to(folder.resolve()).as_posix()
            except ValueError:
                raise CorpusError(f"{what}: the file must be inside the corpus folder {folder}", file=raw) from None
    return None


def init_corpus(
    folder: str | Path,
    *,
    name: str | None = None,
    version: str | None = None,
    licence: str | None = None,
    description: str | None = None,
    labels: str | None = None,
    policies: Sequence[str] = (),
    obtained: str | None = None,
    url: str | None = None,
    redacted: bool | None = None,
    update: bool = False,
) -> Corpus:
    """Write `folder`'s manifest: every file listed with its kind and checksum, the runs replayed under each
    policy (`own` when none is given) for `published_with`. With `update`, an existing manifest's fields are
    kept unless given again, and its files and results are refreshed. Returns the corpus."""
    root = Path(folder)
    if not root.is_dir():
        raise CorpusError("no such folder", file=str(root))
    old: Manifest | None = None
    if (root / MANIFEST_NAME).exists():
        if not update:
            raise CorpusError("a manifest is already here; --update refreshes its files and published results",
                              file=str(root / MANIFEST_NAME))
        old = load_manifest(root / MANIFEST_NAME)
    if old is None and not licence:
        raise CorpusError("name the corpus's licence with --licence (an SPDX id such as MIT or CC-BY-4.0, or "
                          "'proprietary')", file=str(root))
    paths = folder_files(root)
    if not paths:
        raise CorpusError("the folder holds no files", file=str(root))
    if labels:
        labels_rel = _inside(root, labels, "--labels")
        if labels_rel is None:
            raise CorpusError("--labels: no such file", file=labels)
    else:
        labels_rel = old.labels if old else next((n for n in _LABEL_NAMES if n in paths), None)
    wanted = list(policies) or ([p.policy for p in old.published_with] if old else [OWN_POLICY])
    # a policy that is a file is shipped in the corpus (kind `policy`); any other name is a preset (or `own`)
    names = [_inside(root, p, "--policy") or p for p in wanted]
    policy_files = {n for n in names if (root / n).is_file()}
    kinds: dict[str, tuple[str, str | None]] = {}
    for rel in paths:
        if rel == labels_rel:
            kinds[rel] = ("labels", None)
        elif rel in policy_files:
            kinds[rel] = ("policy", None)
        else:
            try:
                kinds[rel] = classify(root / rel)
            except LoopguardError as exc:  # a trace that does not load: not something to publish
                raise CorpusError(f"does not load: {exc}", file=str(root / rel)) from None
    base = old or Manifest(
        name=name or _default_name(root), version="0.1.0", licence=licence or "", description="",
        redacted=False, sources=(Source((".",), obtained or "not stated", url),), files=())
    manifest = replace(
        base,
        name=name or base.name,
        version=version or base.version,
        licence=licence or base.licence,
        description=description or base.description or f"The agent runs of {name or base.name}.",
        redacted=base.redacted if redacted is None else redacted,
        labels=labels_rel,
        files=manifest_files(root, kinds),
        sources=(Source((".",), obtained, url),) if obtained and old is not None else base.sources,
        published_with=(),
    )
    corpus = Corpus(root, manifest)
    runs = list(corpus.runs())
    if labels_rel is not None and (wrong := labels_problems(corpus, runs)):
        raise wrong[0]  # labels that do not fit their runs (docs/eval.md): not something to publish either
    manifest = replace(manifest, published_with=tuple(published(corpus, p, runs) for p in dict.fromkeys(names)))
    text = manifest_text(manifest)
    parse_manifest(text, str(root / MANIFEST_NAME))  # what is written reads back: the schema's own check
    (root / MANIFEST_NAME).write_text(text, encoding="utf-8")
    return Corpus(root, load_manifest(root / MANIFEST_NAME))
