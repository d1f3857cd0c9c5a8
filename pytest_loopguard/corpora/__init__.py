"""Corpus packages: a folder of traces and agent logs with a manifest (`loopguard-corpus.yaml`) that names it,
licenses it, says where its runs come from and what they gave, and checksums every file; packed into one
archive, verified, and found by name when installed (entry points of `loopguard.corpora`). docs/corpora.md.
"""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._archive import pack_corpus, unpack_corpus, verify_corpus
    from ._corpus import Corpus, CorpusRun, open_corpus
    from ._discover import ENTRY_POINT_GROUP, installed_corpora, resolve_corpus
    from ._init import init_corpus
    from ._manifest import MANIFEST_NAME, CorpusError, Manifest, load_manifest

__all__ = [
    "ENTRY_POINT_GROUP",
    "MANIFEST_NAME",
    "Corpus",
    "CorpusError",
    "CorpusRun",
    "Manifest",
    "init_corpus",
    "installed_corpora",
    "load_manifest",
    "open_corpus",
    "pack_corpus",
    "resolve_corpus",
    "unpack_corpus",
    "verify_corpus",
]

__getattr__, __dir__ = exports(__name__, {
    "_archive": ("pack_corpus", "unpack_corpus", "verify_corpus"),
    "_corpus": ("Corpus", "CorpusRun", "open_corpus"),
    "_discover": ("ENTRY_POINT_GROUP", "installed_corpora", "resolve_corpus"),
    "_init": ("init_corpus",),
    "_manifest": ("MANIFEST_NAME", "CorpusError", "Manifest", "load_manifest"),
})
