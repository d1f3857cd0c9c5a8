"""`loopguard corpus`: describe a folder of runs as a corpus, pack it, verify it, show it, unpack it, list them.

    loopguard corpus init FOLDER --licence L [--name N] [--version V] [--labels F] [--policy P ...] ...
    loopguard corpus pack FOLDER [-o OUT]          one deterministic .tar.gz (refuses secrets, unlisted files)
    loopguard corpus verify FOLDER|MANIFEST|ARCHIVE [--no-replay]   exit 1 on any problem, one line each
    loopguard corpus info NAME|PATH [--json]       the manifest's summary
    loopguard corpus unpack ARCHIVE DEST           safely, into a new folder
    loopguard corpus list                          the installed corpora (entry points `loopguard.corpora`)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ._common import EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK, err, out, print_json

if TYPE_CHECKING:
    from ..corpora import Corpus


def add_arguments(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = actions.add_parser("init", help="write FOLDER's manifest: every file's kind and checksum, the "
                                           "published results", description="write a corpus manifest")
    init.add_argument("folder", metavar="FOLDER")
    init.add_argument("--name", help="the corpus's name (default: the folder's)")
    init.add_argument("--version", help="its version (default 0.1.0)")
    init.add_argument("--licence", "--license", dest="licence", help="its licence (SPDX id); required the first time")
    init.add_argument("--description", help="one paragraph on what the runs are")
    init.add_argument("--labels", metavar="FILE", help="the loop labels file (default: labels.yaml if there)")
    init.add_argument("--policy", action="append", metavar="P",
                      help="a policy it is published with: a preset, a policy file in FOLDER, or `own` (each run's "
                           "own; the default); repeatable")
    init.add_argument("--obtained", metavar="TEXT", help="how the runs were obtained (one source for the folder)")
    init.add_argument("--url", help="where they come from")
    redacted = init.add_mutually_exclusive_group()
    redacted.add_argument("--redacted", action="store_true", default=None,
                          help="state that secrets were redacted (verify then refuses any it finds)")
    redacted.add_argument("--not-redacted", dest="redacted", action="store_false", help="state that they were not")
    init.add_argument("--update", action="store_true", help="refresh an existing manifest's files and results")
    pack = actions.add_parser("pack", help="write the corpus as one .tar.gz", description="pack a corpus")
    pack.add_argument("folder", metavar="FOLDER")
    pack.add_argument("-o", "--out", metavar="OUT", help="the archive, or a folder for NAME-VERSION.tar.gz")
    verify = actions.add_parser("verify", help="check checksums, the manifest, every run and the published results",
                                description="verify a corpus folder or archive")
    verify.add_argument("path", metavar="FOLDER|MANIFEST|ARCHIVE")
    verify.add_argument("--no-replay", dest="replay", action="store_false",
                        help="skip replaying the runs under the published policies")
    info = actions.add_parser("info", help="print a corpus's manifest summary", description="show a corpus")
    info.add_argument("ref", metavar="NAME|PATH")
    info.add_argument("--json", action="store_true", help="print the manifest as JSON")
    unpack = actions.add_parser("unpack", help="unpack an archive into a new folder", description="unpack a corpus")
    unpack.add_argument("archive", metavar="ARCHIVE")
    unpack.add_argument("dest", metavar="DEST")
    actions.add_parser("list", help="list the installed corpora", description="list the installed corpora")


def run(args: argparse.Namespace) -> int:
    return _ACTIONS[args.action](args)


def _init(args: argparse.Namespace) -> int:
    from ..corpora import init_corpus

    corpus = init_corpus(args.folder, name=args.name, version=args.version, licence=args.licence,
                         description=args.description, labels=args.labels, policies=args.policy or (),
                         obtained=args.obtained, url=args.url, redacted=args.redacted, update=args.update)
    out(f"wrote {corpus.manifest_path}: {len(corpus.manifest.files)} files")
    _summary(corpus)
    return EXIT_OK


def _pack(args: argparse.Namespace) -> int:
    from ..corpora import open_corpus, pack_corpus
    from ..corpora._archive import pack_problems

    problems = pack_problems(open_corpus(args.folder))
    for line in problems:  # every one, as verify lists them: pack_corpus itself names the first
        err(f"loopguard: {line}")
    if problems:
        err(f"loopguard: not packed: {len(problems)} problem(s)")
        return EXIT_BAD_INPUT
    archive = pack_corpus(args.folder, args.out)
    out(f"wrote {archive}")
    return EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    from ..corpora import verify_corpus

    m, problems = verify_corpus(args.path, replay=args.replay)
    for line in problems:
        err(f"loopguard: {line}")
    if m is None:
        return EXIT_BAD_INPUT  # not even a corpus: no manifest, a malformed one, an unreadable archive
    if problems:
        out(f"{m.name} {m.version}: {len(problems)} problem(s)")
        return EXIT_MISMATCH
    runs = f"{m.published_with[0].runs} runs, " if m.published_with else ""
    replayed = (f"; replayed under {', '.join(p.policy for p in m.published_with)}: as published"
                if args.replay and m.published_with else "")
    out(f"{m.name} {m.version}: ok ({len(m.files)} files, {runs}checksums match{replayed})")
    return EXIT_OK


def _info(args: argparse.Namespace) -> int:
    from ..corpora import resolve_corpus

    corpus = resolve_corpus(args.ref)
    if args.json:
        print_json({"folder": str(corpus.folder), **corpus.manifest.to_mapping()})
    else:
        _summary(corpus)
    return EXIT_OK


def _unpack(args: argparse.Namespace) -> int:
    from ..corpora import unpack_corpus

    corpus = unpack_corpus(args.archive, args.dest)
    out(f"unpacked {corpus.name} {corpus.manifest.version} into {corpus.folder} "
        f"(`loopguard corpus verify {corpus.folder}` checks it)")
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    from ..corpora import installed_corpora

    found = installed_corpora()
    for name, ep in found.items():
        out(f"{name}  ({ep.value})")
    if not found:
        out("no installed corpora (entry points of loopguard.corpora)")
    return EXIT_OK


_ACTIONS: Final[dict[str, Callable[[argparse.Namespace], int]]] = {
    "init": _init, "pack": _pack, "verify": _verify, "info": _info, "unpack": _unpack, "list": _list,
}


def _summary(corpus: Corpus) -> None:
    m = corpus.manifest
    kinds: dict[str, int] = {}
    for f in m.files:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    rows: list[tuple[str, Any]] = [
        ("corpus", f"{m.name} {m.version}"), ("licence", m.licence), ("folder", str(corpus.folder)),
        ("description", " ".join(m.description.split())), ("redacted", "yes" if m.redacted else "no"),
        ("labels", m.labels or "none"),
        ("files", f"{len(m.files)} (" + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) + ")"),
    ]
    rows += [("source", f"{', '.join(s.paths)}: {' '.join(s.obtained.split())}"
              + (f" <{s.url}>" if s.url else "") + (f" ({s.licence})" if s.licence else "")) for s in m.sources]
    rows += [("published", f"{p.policy}: {p.runs} runs, {p.mismatches} mismatched, {p.interventions} "
              f"interventions, verdicts {p.verdicts[:12]}") for p in m.published_with]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        out(f"{key:<{width}}  {value}")
