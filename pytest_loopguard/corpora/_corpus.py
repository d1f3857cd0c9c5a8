"""A corpus on disk (a folder and its manifest), its runs, what replaying them under a policy gives, and `verify`.

A run is one trace of a trace file, or one run an importer reads from a log; its id is the file's path in
the corpus, with `#i` when the file holds several. The verdicts digest of a policy hashes, run by run in
file order, the run's id and name and, per step, the combined action and each verdict's engine, action,
reason, message and data, then the outcome: what `tools/verdict_hashes.py` hashes, for one corpus.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from ..core._limits import MAX_LOG_BYTES
from ..errors import LoopguardError, TraceError
from ._files import find_secrets, folder_files, sha256_of
from ._manifest import MANIFEST_NAME, OWN_POLICY, CorpusError, CorpusFile, Manifest, Published, load_manifest

if TYPE_CHECKING:
    from ..core._model import ReplayResult, Trace
    from ..runtime._policy import Policy

__all__ = ["Corpus", "CorpusRun", "labels_problems", "manifest_files", "open_corpus", "published", "verify_folder"]


@final
@dataclass(frozen=True, slots=True)
class CorpusRun:
    """One run of the corpus: the file it is in, its place among the file's runs, and its trace."""

    file: CorpusFile
    row: int
    rows: int  # how many runs the file holds
    trace: Trace

    @property
    def run_id(self) -> str:
        """The file's path, with `#row` when the file holds several runs."""
        return self.file.path if self.rows == 1 else f"{self.file.path}#{self.row}"


@final
@dataclass(frozen=True, slots=True)
class Corpus:
    """A corpus found on disk: its folder and manifest; where its traces, logs and labels are."""

    folder: Path
    manifest: Manifest

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def manifest_path(self) -> Path:
        return self.folder / MANIFEST_NAME

    @property
    def trace_paths(self) -> list[Path]:
        """The loopguard trace files (what `loopguard run` and pytest collect), in manifest order."""
        return [self.folder / f.path for f in self.manifest.of_kind("trace")]

    @property
    def log_paths(self) -> list[Path]:
        """The agent logs (read through their importer), in manifest order."""
        return [self.folder / f.path for f in self.manifest.of_kind("log")]

    @property
    def run_paths(self) -> list[Path]:
        """Every file holding runs, traces and logs, in manifest order (what `loopguard eval` reads)."""
        return [self.folder / f.path for f in self.manifest.of_kind("trace", "log")]

    @property
    def labels_path(self) -> Path | None:
        return None if self.manifest.labels is None else self.folder / self.manifest.labels

    def traces_of(self, cfile: CorpusFile) -> list[Trace]:
        """The traces of one file: loaded, or imported with the manifest's importer (a `TraceError` if bad)."""
        path = self.folder / cfile.path
        if cfile.kind == "trace":
            from ..io._runner import load_runnable

            return load_runnable(path)
        from ..importers import Source, import_traces

        return import_traces(Source.from_path(path, MAX_LOG_BYTES), cfile.format)

    def runs(self) -> Iterator[CorpusRun]:
        """Every run, file by file in manifest order; a file that does not load raises its `TraceError`."""
        for cfile in self.manifest.of_kind("trace", "log"):
            traces = self.traces_of(cfile)
            for i, trace in enumerate(traces):
                yield CorpusRun(cfile, i, len(traces), trace)

    def policy(self, name: str) -> Policy | None:
        """A `published_with` policy: None for `own`, a policy file in the corpus, or a preset."""
        from ..runtime._policy import resolve_policy

        if name == OWN_POLICY:
            return None
        listed = {f.path for f in self.manifest.of_kind("policy")}
        return resolve_policy(str(self.folder / name) if name in listed else name)


def open_corpus(folder: str | Path) -> Corpus:
    """The corpus in `folder` (its manifest loaded and validated; files are checked by `verify_folder`)."""
    root = Path(folder)
    if not (root / MANIFEST_NAME).is_file():
        raise CorpusError(f"no {MANIFEST_NAME} here; `loopguard corpus init` writes one", file=str(root))
    return Corpus(root, load_manifest(root / MANIFEST_NAME))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return value


def _result_doc(run_id: str, result: ReplayResult) -> dict[str, Any]:
    return {
        "run": run_id, "name": result.trace.name,
        "steps": [{"action": str(s.action),
                   "verdicts": [{"engine": v.engine, "action": str(v.action), "reason": v.reason,
                                 "message": v.message, "data": _plain(v.data)} for v in s.verdicts]}
                  for s in result.steps],
        "outcome": str(result.outcome), "stopped_at": result.stopped_at, "stopped_by": result.stopped_by,
    }


def published(corpus: Corpus, policy_name: str, runs: list[CorpusRun] | None = None) -> Published:
    """What replaying every run under `policy_name` gives: runs, mismatches, interventions, verdicts digest."""
    from ..core._expect import check
    from ..io._runner import execute

    policy = corpus.policy(policy_name)
    digest = hashlib.sha256()
    count = mismatches = interventions = 0
    for run in corpus.runs() if runs is None else runs:
        result = execute(run.trace, policy)
        count += 1
        mismatches += bool(check(result))
        interventions += sum(1 for s in result.steps if str(s.action) not in ("allow", "not_reached"))
        doc = _result_doc(run.run_id, result)
        digest.update(json.dumps(doc, sort_keys=True, default=str, ensure_ascii=False,
                                 separators=(",", ":")).encode("utf-8"))
        digest.update(b"\n")
    return Published(policy_name, count, mismatches, interventions, digest.hexdigest())


def verify_folder(corpus: Corpus, *, replay: bool = True) -> list[LoopguardError]:
    """Every problem of a corpus folder, one error each: files missing, unlisted or changed (checksum), a
    trace or log that does not load, labels that do not load or fit the runs, a policy that does not
    resolve, a secret in a corpus that says it is redacted, and (with `replay`) a published policy whose
    replay gives other results."""
    folder, manifest = corpus.folder, corpus.manifest
    problems: list[LoopguardError] = []
    where = str(corpus.manifest_path)
    present = set(folder_files(folder))
    listed = {f.path for f in manifest.files}
    problems += [CorpusError("a file the manifest does not list; list it (loopguard corpus init --update) or "
                             "remove it", file=str(folder / p)) for p in sorted(present - listed)]
    intact = True
    for f in manifest.files:
        path = str(folder / f.path)
        if f.path not in present:
            problems.append(CorpusError("missing: the manifest lists it", file=path))
            intact = False
        elif (actual := sha256_of(folder / f.path)) != f.sha256:
            problems.append(CorpusError(f"checksum mismatch: sha256 {actual[:12]}..., the manifest says "
                                        f"{f.sha256[:12]}... (the file was changed)", file=path, field="sha256"))
            intact = False
    if not intact:
        return problems  # the contents are not what was published: reading them says nothing more
    runs: list[CorpusRun] = []
    for f in manifest.of_kind("trace", "log"):
        try:
            traces = corpus.traces_of(f)
        except TraceError as exc:
            problems.append(exc.located(file=str(folder / f.path)))
            continue
        runs += [CorpusRun(f, i, len(traces), t) for i, t in enumerate(traces)]
    if manifest.labels is not None and not problems:
        problems += labels_problems(corpus, runs)
    for p in manifest.published_with:
        try:
            corpus.policy(p.policy)
        except LoopguardError as exc:
            problems.append(CorpusError(f"policy {p.policy!r} does not resolve: {exc}", file=where,
                                        field="published_with"))
    if manifest.redacted:
        problems += [s.error() for s in find_secrets(folder, sorted(listed), manifest.secret_rules,
                                                     manifest.secret_allow)]
    if replay and not problems:
        for p in manifest.published_with:
            got = published(corpus, p.policy, runs)
            if got != p:
                diffs = [f"{k} {getattr(p, k)} -> {getattr(got, k)}" if k != "verdicts" else "verdicts differ"
                         for k in ("runs", "mismatches", "interventions", "verdicts")
                         if getattr(p, k) != getattr(got, k)]
                problems.append(CorpusError(f"replayed under {p.policy!r}, the runs give other results than "
                                            f"published: {', '.join(diffs)}", file=where, field="published_with"))
    return problems


def labels_problems(corpus: Corpus, runs: list[CorpusRun]) -> list[LoopguardError]:
    """The labels file's problems: it does not load, or a label does not fit its run (a missing run or row, a
    call count or range that differs)."""
    from ..eval._labels import load_labels
    from ..eval._runs import ScoredRun
    from ..eval._score import match_labels

    assert corpus.labels_path is not None
    scored = [ScoredRun(r.trace, corpus.folder / r.file.path, r.row, r.rows) for r in runs]
    try:
        match_labels(load_labels(corpus.labels_path), scored)
    except LoopguardError as exc:
        return [exc]
    return []


def manifest_files(folder: Path, kinds: Mapping[str, tuple[str, str | None]]) -> tuple[CorpusFile, ...]:
    """The `files` list of a folder: each file's kind and importer (from `kinds`) and its checksum."""
    return tuple(CorpusFile(p, kinds[p][0], sha256_of(folder / p), kinds[p][1]) for p in sorted(kinds))
