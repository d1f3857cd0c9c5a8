"""Finding a corpus by name or path: installed corpora (entry points of `loopguard.corpora`), folders, archives.

An installed corpus is a package whose distribution declares, in the `loopguard.corpora` group, an entry point
named as the corpus and pointing at the folder that holds its manifest: `my-corpus = my_corpus_pkg` (the
package's folder: found without importing it, when it is a top-level package), or `my-corpus =
my_corpus_pkg:FOLDER` (an attribute holding the folder's path, or a module whose folder it is).
"""

from __future__ import annotations

import importlib.util
import os
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Final

from ._archive import is_archive, unpacked_for_process
from ._corpus import Corpus, open_corpus
from ._manifest import MANIFEST_NAME, CorpusError

__all__ = ["ENTRY_POINT_GROUP", "corpus_folder", "installed_corpora", "resolve_corpus"]

ENTRY_POINT_GROUP: Final = "loopguard.corpora"


def installed_corpora() -> dict[str, EntryPoint]:
    """The installed corpora by name (the first distribution on sys.path wins a name, as imports do)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return dict(sorted(found.items()))


def corpus_folder(ep: EntryPoint) -> Path:
    """The folder an entry point names; a `CorpusError` naming the entry point when it names none."""
    where = f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP})"
    try:
        if ":" not in ep.value:
            spec = importlib.util.find_spec(ep.value)
            if spec is None:
                raise CorpusError("no such package is installed", file=where)
            if spec.submodule_search_locations:
                return Path(next(iter(spec.submodule_search_locations)))
            if spec.origin is None:
                raise CorpusError("the package has no folder", file=where)
            return Path(spec.origin).parent
        target = ep.load()
    except CorpusError:
        raise
    except Exception as exc:  # an installed package that does not import: its problem, named in one line
        raise CorpusError(f"does not load: {type(exc).__name__}: {exc}", file=where) from None
    if isinstance(target, ModuleType) and target.__file__ is not None:
        return Path(target.__file__).parent
    if isinstance(target, (str, os.PathLike)):
        return Path(target)
    raise CorpusError(f"expected a package, module or folder path, got {type(target).__name__}", file=where)


def resolve_corpus(ref: str | Path) -> Corpus:
    """The corpus `ref` names: a folder holding a manifest, a manifest file, an archive (unpacked into a
    temporary folder removed at exit) or an installed corpus's name, optionally pinned (`NAME==VERSION`).
    A `CorpusError` says what was looked for."""
    p = Path(ref)
    if p.is_dir():
        return open_corpus(p)
    if p.is_file():
        if p.name == MANIFEST_NAME:
            return open_corpus(p.parent)
        if is_archive(p):
            return unpacked_for_process(p)
        raise CorpusError(f"not a corpus: expected a folder holding {MANIFEST_NAME}, that file, or a corpus "
                          "archive (.tar.gz)", file=str(ref))
    name, _, pin = str(ref).partition("==")
    installed = installed_corpora()
    if name not in installed:
        known = ", ".join(installed) or "none"
        raise CorpusError(f"no such file or folder, and no installed corpus of that name (entry points "
                          f"{ENTRY_POINT_GROUP}: {known})", file=str(ref))
    corpus = open_corpus(corpus_folder(installed[name]))
    if corpus.manifest.name != name:
        raise CorpusError(f"the entry point {name!r} names a corpus whose manifest says {corpus.manifest.name!r}",
                          file=str(corpus.manifest_path), field="name")
    if pin and corpus.manifest.version != pin:
        raise CorpusError(f"version {corpus.manifest.version} is installed; {pin} was asked for",
                          file=str(corpus.manifest_path), field="version")
    return corpus
