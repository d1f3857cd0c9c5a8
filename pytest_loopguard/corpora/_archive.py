"""A corpus as one archive: `pack` (deterministic .tar.gz), `unpack` (safe) and `verify` of a folder or an archive.

An archive holds one folder, `NAME-VERSION/`, with the manifest and every file it lists, nothing else: the
manifest first, then the members sorted by path, owner 0:0 without names, mode 0644, one fixed mtime, and a
gzip header without a name or time, so the same corpus always packs to the same bytes. Unpacking reads
members through `core/_safeload.tar_members` (a regular archive file, each member bounded, corruption as
one line) and writes only regular files: a member's path must be relative, without `..`, inside the one
top folder; links, devices and folder entries are never created (a link standing for a listed file leaves
it missing, which verification reports); the members' total size and count are capped.
"""

from __future__ import annotations

import atexit
import gzip
import os
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from io import FileIO
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..core._limits import MAX_LOG_BYTES
from ..core._safeload import one_line, open_regular, regular_fd, tar_members
from ..errors import LoopguardError, TraceError
from ._corpus import Corpus, open_corpus, verify_folder
from ._files import find_secrets
from ._manifest import MANIFEST_NAME, CorpusError, Manifest, checked_path

if TYPE_CHECKING:
    from tarfile import TarInfo

__all__ = ["ARCHIVE_SUFFIXES", "MAX_CORPUS_BYTES", "MAX_CORPUS_FILES", "is_archive", "is_corpus_archive",
           "pack_corpus", "pack_problems",
           "unpack_corpus", "unpacked", "unpacked_for_process", "verify_corpus"]

ARCHIVE_SUFFIXES: Final = (".tar.gz", ".tgz")
MAX_CORPUS_BYTES: Final = 4 * 1024 * 1024 * 1024  # all members together
MAX_CORPUS_FILES: Final = 100_000
_MTIME: Final = 946_684_800  # 2000-01-01: a fixed time, later than the epoch some tools treat as "unset"


def is_archive(path: str | Path) -> bool:
    return str(path).lower().endswith(ARCHIVE_SUFFIXES)


def is_corpus_archive(path: str | Path) -> bool:
    """Whether `path` is a corpus archive (its first member is `FOLDER/loopguard-corpus.yaml`, as `pack` writes
    it) rather than, say, a tarball of agent logs; only the first header is read."""
    try:
        fd, _size = regular_fd(path)
        with FileIO(fd, "r") as raw, tarfile.open(fileobj=raw, mode="r:*") as tar:
            first = tar.next()
    except (LoopguardError, tarfile.TarError, EOFError, OSError, ValueError, zlib.error):
        return False  # not an archive at all: whoever reads it next says why
    return first is not None and first.isfile() and first.name.count("/") == 1 and first.name.endswith(
        "/" + MANIFEST_NAME)


def pack_problems(corpus: Corpus) -> list[str]:
    """Why `pack` refuses the corpus, one line each: what verification finds without replaying (`verify`
    replays; the published results are init's) and every unredacted secret."""
    manifest = corpus.manifest
    problems = [str(p) for p in verify_folder(corpus, replay=False)]
    if not manifest.redacted:  # a corpus that says it is redacted had its secrets reported by verification
        problems += [str(s.error()) for s in find_secrets(corpus.folder, [f.path for f in manifest.files],
                                                          manifest.secret_rules, manifest.secret_allow)]
    return problems


def pack_corpus(folder: str | Path, out: str | Path | None = None) -> Path:
    """Write the corpus in `folder` as one archive (`out`: a file, or a folder for `NAME-VERSION.tar.gz`;
    default the working folder) and return its path. Refused with a `CorpusError` naming the first of
    `pack_problems`: a file the manifest does not list, a changed file, a run that does not load, labels
    that do not fit, an unredacted secret."""
    corpus = open_corpus(folder)
    manifest = corpus.manifest
    problems = pack_problems(corpus)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CorpusError(f"not packed: {problems[0]}{more}", file=str(corpus.folder))
    top = f"{manifest.name}-{manifest.version}"
    if checked_path(top) is not None or "/" in top:
        raise CorpusError(f"the version {manifest.version!r} cannot name the archive's folder", file=str(folder))
    target = Path(out) if out is not None else Path.cwd()
    if target.is_dir():
        target = target / f"{top}.tar.gz"
    partial = target.with_name(target.name + ".partial")
    # a gzip header without a file name or time, over a tar stream written member by member
    with (open(partial, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
          tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar):
        # the manifest first: a reader tells a corpus archive by its first header (`is_corpus_archive`)
        for rel in [MANIFEST_NAME, *sorted(f.path for f in manifest.files)]:
            with open_regular(corpus.folder / rel) as fh:
                info = tarfile.TarInfo(f"{top}/{rel}")
                info.size, info.mtime, info.mode = os.fstat(fh.fileno()).st_size, _MTIME, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, fh)
    os.replace(partial, target)  # never a half-written archive under the final name
    return target


def unpack_corpus(archive: str | Path, dest: str | Path) -> Corpus:
    """Unpack a corpus archive into `dest` (which must not exist yet: its folder becomes the corpus folder)
    and return the corpus (its manifest read; `verify` checks its files). Bad archives are one line."""
    target = Path(dest)
    if target.exists():
        raise CorpusError("already exists; unpack into a new folder", file=str(target))
    where = one_line(str(archive))
    problems: list[tuple[str, str]] = []  # (member, problem)
    tops: set[str] = set()
    total = count = 0

    def wanted(info: TarInfo) -> bool:
        nonlocal total, count
        top, _, rel = info.name.partition("/")
        problem = checked_path(info.name) or (None if rel and top else "not inside the archive's one folder")
        if problem is None and tops and top not in tops:
            problem = f"a second top folder {top!r} (the archive holds one corpus folder)"
        count += 1
        total += info.size
        if count > MAX_CORPUS_FILES:
            problem = f"more than {MAX_CORPUS_FILES} members"
        elif total > MAX_CORPUS_BYTES:
            problem = f"more than {MAX_CORPUS_BYTES} bytes of members"
        if problem is not None:
            problems.append((f"{where}:{one_line(info.name)}", problem))
            return False
        tops.add(top)
        return not problems

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for name, data in tar_members(archive, wanted, MAX_LOG_BYTES):
            if isinstance(data, TraceError):
                raise data
            path = staging.joinpath(*name.split("/")[1:])
            path.parent.mkdir(parents=True, exist_ok=True)
            # O_EXCL | O_NOFOLLOW: a member written twice, or anything already there, is an error, never followed
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        if problems:
            raise CorpusError(problems[0][1], file=problems[0][0])
        if not (staging / MANIFEST_NAME).is_file():
            raise CorpusError(f"no {MANIFEST_NAME} in the archive's folder; not a corpus archive", file=where)
        open_corpus(staging)  # a manifest that reads, before the folder takes its name
        os.replace(staging, target)
    except FileExistsError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise CorpusError("a member is there twice", file=f"{where}:{one_line(str(exc.filename))}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return open_corpus(target)


@contextmanager
def unpacked(archive: str | Path) -> Iterator[Corpus]:
    """The corpus of an archive, unpacked in a temporary folder for as long as the block runs."""
    with tempfile.TemporaryDirectory(prefix="loopguard-corpus-") as tmp:
        yield unpack_corpus(archive, Path(tmp) / "corpus")


def unpacked_for_process(archive: str | Path) -> Corpus:
    """The corpus of an archive, unpacked in a temporary folder removed when the process exits."""
    tmp = tempfile.mkdtemp(prefix="loopguard-corpus-")
    atexit.register(shutil.rmtree, tmp, True)
    return unpack_corpus(archive, Path(tmp) / "corpus")


def verify_corpus(path: str | Path, *, replay: bool = True) -> tuple[Manifest | None, list[str]]:
    """Verify a corpus folder (or its manifest file) or archive: (its manifest, None when there is none to
    read, and one line per problem). An archive's files are named `ARCHIVE:FOLDER/PATH`."""
    p = Path(path)
    if is_archive(p):
        try:
            with unpacked(p) as corpus:
                prefix = str(corpus.folder)
                shown = f"{one_line(str(p))}:{corpus.manifest.name}-{corpus.manifest.version}"
                lines = [str(e).replace(prefix, shown) for e in verify_folder(corpus, replay=replay)]
                return corpus.manifest, lines
        except LoopguardError as exc:
            return None, [str(exc)]
    try:
        corpus = open_corpus(p.parent if p.name == MANIFEST_NAME else p)
    except LoopguardError as exc:
        return None, [str(exc)]
    return corpus.manifest, [str(e) for e in verify_folder(corpus, replay=replay)]
