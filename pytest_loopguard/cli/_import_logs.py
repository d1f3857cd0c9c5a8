"""What `loopguard import` does: convert agent logs into trace files, one per run, with a table of what was mapped.

Each SRC is a file, an event folder (OpenHands V1) or a folder of logs. A source that cannot be read
(unknown format, truncated JSON) gets one error line and nothing is written for it; the others are
still imported and the command exits 2 (3 when an importer raised something other than our error: a bug,
reported with where it was raised). Secrets are redacted on the way (built-in patterns, the project's
`[tool.loopguard] redact` rules and `--redact REGEX`) unless `--no-redact` is given.

A source is known by its resolved path (an archive member by its archive's resolved path and its name):
each trace records a digest of it and of the run id (`source.x-import-source`, `source.x-import-run`),
so re-importing replaces what the same source wrote, whatever the paths were typed as and however
redaction renamed its runs, and never a trace another source wrote. Folder walks do not follow symlinked
folders, and nothing is written through a symlink in OUT: a name a symlink holds is taken.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import os
import tempfile
import traceback
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core._limits import MAX_FILE_BYTES, MAX_INT, MAX_LOG_BYTES, MAX_STRING
from ..core._safeload import one_line, read_bytes, tar_members
from ..errors import LoopguardError, TraceError
from ..importers import ImportedRun, Importer, Source, available, detect, get, to_trace, trace_name
from ..importers.base import LOG_SUFFIXES
from ..io._format import dump, load_file
from ..live._redact import Redactor
from ..report._console import fit_table, progress
from ._common import err, error

__all__ = ["import_logs"]

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
TRACE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")  # what `load` reads: a trace's name in any of them
ORIGINS = ("user", "harness", "agent", "assistant", "system")


def _sources(paths: list[str], pool: list[Importer], out: Path) -> Iterator[tuple[Source, str] | TraceError]:
    """Each SRC as (source, identity); a plain folder gives its logs and event folders (sorted, recursively).

    The output folder is passed over: importing `logs -o logs/traces` twice must not read the traces
    the first run wrote as logs. Names are shown on one line (a newline in a file name is written `\\n`).
    """
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield TraceError("no such file or folder; expected an agent log, an event folder or a folder of logs",
                             file=one_line(raw))
        elif path.is_dir():
            found = list(_walk(path, pool, out.resolve()))
            if not found:
                yield TraceError("no .json, .jsonl, .traj or .aider.chat.history.md files in this folder",
                                 file=one_line(raw))
            yield from found
        elif raw.endswith(TAR_SUFFIXES):
            yield from _tar_sources(path)
        else:
            yield _from_path(path, MAX_LOG_BYTES)


def _from_path(path: Path, limit: int | None = None) -> tuple[Source, str]:
    """A file or event folder as a source named on one line, and its identity: its resolved path."""
    return Source(one_line(str(path)), functools.partial(read_bytes, path, limit), path=path), str(path.resolve())


def _tar_sources(path: Path) -> Iterator[tuple[Source, str] | TraceError]:
    """A tarball's log members, read in memory one at a time (the calibration corpus is kept packed), like a
    folder's files; a corrupt archive ends in one error line naming it (or the member it broke in)."""
    found = 0
    archive = one_line(str(path))
    resolved = str(path.resolve())
    try:
        for member, data in tar_members(path, lambda info: info.name.endswith(LOG_SUFFIXES), MAX_LOG_BYTES):
            found += 1
            if isinstance(data, TraceError):  # over the bound a log file on disk has
                yield data
            else:
                yield Source.from_bytes(f"{archive}:{one_line(member)}", data), f"{resolved}:{member}"
    except TraceError as exc:
        yield exc
        return
    if not found:
        yield TraceError("no .json, .jsonl or .traj members in this archive", file=archive)


def _walk(folder: Path, pool: list[Importer], out: Path) -> Iterator[tuple[Source, str]]:
    """An event folder (one an importer recognises) as one source, else its log files and subfolders.

    A symlinked folder inside is not followed (two links to `.` would make the walk visit exponentially
    many paths, and a link may lead anywhere); a symlinked file is read, once, however many names it has.
    """
    if folder.resolve() == out:
        return
    source = Source.from_path(folder)
    if any(imp.sniff(source) for imp in pool):
        yield _from_path(folder)
        return
    for child in sorted(folder.iterdir()):
        if child.is_dir():
            if not child.is_symlink():
                yield from _walk(child, pool, out)
        elif child.name.endswith(LOG_SUFFIXES):
            yield _from_path(child, MAX_LOG_BYTES)


def _messages(counts: Counter[str]) -> str:
    parts = [f"{origin} {counts[f'messages.{origin}']}" for origin in ORIGINS if counts[f"messages.{origin}"]]
    return ", ".join(parts) or "—"


def _unmapped(run: ImportedRun) -> str:
    """Unmapped items grouped by what they are (the position prefix `history[3]: ` dropped)."""
    kinds = Counter(item.split(": ", 1)[-1] for item in run.unmapped)
    return "; ".join(f"{n}× {kind}" if n > 1 else kind for kind, n in kinds.most_common()) or "—"


def import_logs(args: argparse.Namespace) -> int:
    """Write the traces of every run in `args.sources` to `args.output`; 2 when any source failed."""
    pool = available()
    if args.fmt:
        try:
            get(args.fmt, pool)
        except TraceError as exc:
            error(f"--from: {exc.problem}")
            return 2
    redactor = None if args.no_redact else Redactor.configured(args.redact)
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        error(f"{out}: is a file; expected a folder for the traces (-o)")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    rows: list[list[object]] = []
    notes: list[str] = []
    used: set[str] = set()
    failed = bugs = 0
    seen: set[str] = set()
    index = _Index(out)

    def say(problem: object) -> None:  # a file name may hold a secret as well: the error line is redacted too
        error(redactor.text(str(problem)) if redactor is not None else problem)

    for item in progress(_sources(args.sources, pool, out), "importing"):  # lazily: a log is read when its turn comes
        if isinstance(item, TraceError):
            say(item)
            failed += 1
            continue
        source, identity = item
        # a file named twice (or named and inside a named folder) is one source: its runs once, not `-2` copies
        if identity in seen:
            continue
        seen.add(identity)
        source_key = _digest(identity)
        imp = None
        try:
            imp = get(args.fmt, pool) if args.fmt else detect(source, pool)
            converted = list(imp.convert(source))
            keys = [_digest(f"{identity}\0{r.run_id}") for r in converted]
            runs = [_fitted(_redacted(_keyed(r, source_key, k), redactor))
                    for r, k in zip(converted, keys, strict=True)]
            traces = [to_trace(r, source.name) for r in runs]
        except TraceError as exc:
            say(exc.located(file=source.name))
            failed += 1
            continue
        except LoopguardError as exc:
            say(exc)
            failed += 1
            continue
        except OSError as exc:  # unreadable file or event folder: this source fails, the others go on
            say(f"{one_line(str(exc.filename or source.name))}: {exc.strerror}")
            failed += 1
            continue
        except Exception as exc:
            # importers are plugins (third-party code among them): one that trips over an odd log is a bug,
            # exit 3 at the end, but it must not cost the user the other sources or end in a traceback
            which = f"the {imp.name} importer" if imp is not None else "format detection"
            err(f"loopguard: internal error (please report it): {source.name}: {which} failed: "
                f"{one_line(type(exc).__name__ + ': ' + str(exc))[:200]} at {_raised_at(exc)}")
            bugs += 1
            continue
        for r, trace, key in zip(runs, traces, keys, strict=True):
            name, replaced = _place(trace.name, source_key, key, out, used, index)
            target = out / f"{name}.{args.out_format}"
            try:
                size = _write(dataclasses.replace(trace, name=name) if name != trace.name else trace, target)
                if size is not None:  # `load` would refuse it: write no trace it refuses
                    say(f"{source.name}: run {name} gives a trace of {size} bytes; a trace file "
                        f"holds at most {MAX_FILE_BYTES}")
                    failed += 1
                    continue
                for old in replaced:  # the same run written before in another format or name: one file per run
                    if old != target and not old.is_symlink():
                        old.unlink()
            except OSError as exc:  # this run cannot be written (a full disk, no permission): the others go on
                say(f"{one_line(str(target))}: {exc.strerror}")
                failed += 1
                continue
            if name != trace.name:
                notes.append(f"{name}: note: the name {trace.name} is another run's (in this import or in {out})")
            c = r.counts
            rows.append([name, imp.name, c["calls"], c["failed"], c["denied"], c["cancelled"], c["rejected"],
                         _messages(c), _unmapped(r)])
            notes += [f"{name}: warning: {one_line(w)}" for w in r.warnings]
    if rows:
        print(fit_table(rows, ["trace", "from", "calls", "failed", "denied", "cancelled", "rejected", "messages",
                               "unmapped"]))
    for note in notes:
        print(note)
    secrets = f", {redactor.count} distinct secrets redacted" if redactor is not None else ", not redacted"
    ended = f"; {failed + bugs} sources failed" if failed + bugs else ""
    print(f"{len(rows)} traces written to {out}{secrets}{ended}")
    return 3 if bugs else 2 if failed else 0


def _raised_at(exc: BaseException) -> str:
    """Where a bug was raised (the innermost frame: file name and line), for the report."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name}" if frames else "?"


def _digest(text: str) -> str:
    # a digest, not the path: the path may hold a secret that redaction takes out of `source.origin`
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def _keyed(run: ImportedRun, source_key: str, run_key: str) -> ImportedRun:
    """The run with its identity in the trace: the source's and the run's digest; the log's path in it (the
    header's `source.origin`, each step's `source.file`) as `portable_path` gives it."""
    source = run.trace.get("source")
    source = dict(source) if isinstance(source, dict) else {"kind": "imported"}
    source["x-import-source"], source["x-import-run"] = source_key, run_key
    trace = {**run.trace, "source": source}
    origin = source.get("origin")
    if isinstance(origin, str) and (shown := portable_path(origin)) != origin:
        source["origin"] = shown
        steps = trace.get("steps")
        if isinstance(steps, list):
            trace["steps"] = [{**s, "source": {**s["source"], "file": portable_path(s["source"]["file"])}}
                              if isinstance(s, dict) and isinstance(s.get("source"), dict)
                              and isinstance(s["source"].get("file"), str) else s for s in steps]
    return dataclasses.replace(run, trace=trace)


def portable_path(name: str) -> str:
    """A log's path as a trace keeps it: relative to where the import ran when the log lies under it, else
    its file name (an archive's member keeps its own path after the archive's) — never the importing
    machine's absolute path, which would travel with a shared corpus and match nothing elsewhere."""
    archive, sep, member = name.partition(":")
    if not archive.endswith(TAR_SUFFIXES):  # a colon in a file's own path
        archive, sep, member = name, "", ""
    path = Path(archive)
    if not path.is_absolute():
        return name
    try:
        shown = path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        shown = path.name
    return f"{shown}{sep}{member}"


def _write(trace: Any, target: Path) -> int | None:
    """Write `trace` to `target` without following a symlink: into a new file beside it, renamed over it
    (`_place` never picks a name a symlink holds). None when written; the size when over MAX_FILE_BYTES."""
    fd, tmp = tempfile.mkstemp(prefix=".loopguard-import-", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    try:
        dump(trace, tmp)
        size = os.stat(tmp).st_size
        if size > MAX_FILE_BYTES:
            return size
        os.replace(tmp, target)
        return None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _redacted(run: ImportedRun, redactor: Redactor | None) -> ImportedRun:
    """The run with secrets replaced everywhere it shows: the trace, its name (also the file name), and the
    warnings and unmapped items printed under the table (CI logs keep them)."""
    if redactor is None:
        return run
    trace = redactor.value(run.trace)
    run_id = redactor.text(run.run_id)
    # the name is made from the raw id, whose separators became `-`: a key glued on that way is no longer
    # recognised, so the name is made again from the redacted id (placeholders' `<:>` become `-` too)
    trace["name"] = trace_name(run_id if run.trace.get("name") == trace_name(run.run_id) else trace["name"])
    return ImportedRun(run_id, trace, redactor.value(run.warnings), redactor.value(run.unmapped), run.counts)


def _fitted(run: ImportedRun) -> ImportedRun:
    """The run with every string longer than a trace holds (MAX_STRING) cut to that length, and every integer
    beyond ±2^53 written as its text, with a warning saying so: a 20 MB command output or a 64-bit id must
    not make the whole run a trace that `load` refuses."""
    cut: list[int] = []
    big: list[str] = []

    def fit(value: Any) -> Any:
        if isinstance(value, str) and len(value) > MAX_STRING:
            cut.append(len(value))
            return value[:MAX_STRING]
        if isinstance(value, int) and not isinstance(value, bool) and not -MAX_INT <= value <= MAX_INT:
            # a trace holds integers within ±2^53 (what a JSON number holds exactly) and `load` refuses others:
            # a log's bigger one (an id, a cost in nano-units) is kept exactly, as its decimal text
            big.append(str(value))
            return str(value)
        if isinstance(value, dict):
            return {k: fit(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fit(v) for v in value]
        return value

    fitted = fit(run.trace)
    if not cut and not big:
        return run
    warnings = []
    if cut:
        warnings.append(f"{len(cut)} string(s) longer than {MAX_STRING} characters (the longest {max(cut)}) cut "
                        f"to {MAX_STRING}, the longest a trace holds")
    if big:
        warnings.append(f"{len(big)} integer(s) beyond ±2^53 written as text (a trace holds no larger number): "
                        f"{big[0][:40]}")
    return ImportedRun(run.run_id, fitted, [*run.warnings, *warnings], run.unmapped, run.counts)


class _Index:
    """What the trace files already in OUT were imported from: read once, when a name is first placed."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._by_run: dict[str, str] | None = None  # x-import-run -> the stem it was written under
        self._sources: dict[Path, set[str] | None] = {}  # file -> its runs' x-import-source (None: not ours)

    def sources(self, path: Path) -> set[str] | None:
        """The import sources of the traces in `path`, or None: not an imported trace this can replace."""
        if path not in self._sources:
            self._sources[path] = _import_sources(path)
        return self._sources[path]

    def stem_of_run(self, run_key: str) -> str | None:
        if self._by_run is None:
            self._by_run = {}
            for path in sorted(self.out.iterdir()) if self.out.is_dir() else ():
                if path.name.endswith(TRACE_SUFFIXES) and not path.is_symlink() and path.is_file():
                    for key in _import_runs(path):
                        self._by_run.setdefault(key, path.name.rsplit(".", 1)[0])
        return self._by_run.get(run_key)


def _place(name: str, source_key: str, run_key: str, out: Path, used: set[str],
           index: _Index) -> tuple[str, list[Path]]:
    """The name to write a run under, and the trace files already in `out` that it replaces.

    The name an earlier import of this same run (same source, same run id) was written under, when it is
    free in this import: redaction may have numbered its placeholders differently this time. Else `name`,
    or `name-2`, `name-3`... when the name is taken: by another run of this import, by a trace in `out`
    that came from another source (an earlier import of another log, a hand-written trace), or by a
    symlink (never written through). A trace an earlier import wrote from this same source is replaced,
    whatever its format, so re-running an import refreshes its traces instead of duplicating them.
    """
    earlier = index.stem_of_run(run_key)
    replaced: list[Path] = []
    if earlier is not None and earlier.casefold() not in used:
        found = _taken(earlier, source_key, out, index)
        if found is not None:
            used.add(earlier.casefold())
            return earlier, found
    candidate, n = name, 1
    while True:
        # names differing only in case are one file on macOS and Windows: keep the corpus portable
        if candidate.casefold() not in used:
            found = _taken(candidate, source_key, out, index)
            if found is not None:
                used.add(candidate.casefold())
                if earlier is not None:  # this run's file under its old name goes: one file per run
                    replaced += [p for p in (out / f"{earlier}{s}" for s in TRACE_SUFFIXES) if p.is_file()
                                 and not p.is_symlink() and index.sources(p) == {source_key}]
                return candidate, found + replaced
        n += 1
        candidate = f"{name}-{n}"


def _taken(stem: str, source_key: str, out: Path, index: _Index) -> list[Path] | None:
    """The files named `stem` in `out` (any trace suffix) this source may replace, or None when the name is
    taken: a symlink holds it, or a file that is not an import of this source."""
    paths = [out / f"{stem}{s}" for s in TRACE_SUFFIXES]
    if any(p.is_symlink() for p in paths):
        return None
    existing = [p for p in paths if p.is_file()]  # a folder in the way fails this run's write, said as such
    if all(index.sources(p) == {source_key} for p in existing):
        return existing
    return None


def _import_sources(path: Path) -> set[str] | None:
    try:
        traces = load_file(path)
    except (LoopguardError, OSError):
        return None  # unreadable: not ours to replace
    keys = {str(t.source.get("x-import-source")) for t in traces if t.source.get("kind") == "imported"}
    if len(keys) != 1 or len(traces) == 0 or any(t.source.get("kind") != "imported" for t in traces):
        return None
    return keys


def _import_runs(path: Path) -> list[str]:
    try:
        return [str(t.source["x-import-run"]) for t in load_file(path) if t.source.get("x-import-run")]
    except (LoopguardError, OSError):
        return []
