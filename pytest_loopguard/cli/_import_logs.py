"""What `loopguard import` does: convert agent logs into trace files, one per run, with a table of what was mapped.

Each SRC is a file, an event folder (OpenHands V1) or a folder of logs. A source that cannot be read
(unknown format, truncated JSON) gets one error line and nothing is written for it; the others are
still imported and the command exits 2. Secrets are redacted on the way (built-in patterns, the
project's `[tool.loopguard] redact` rules and `--redact REGEX`) unless `--no-redact` is given.
"""

from __future__ import annotations

import argparse
import dataclasses
import tarfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core._limits import MAX_FILE_BYTES, MAX_LOG_BYTES, MAX_STRING
from ..errors import LoopguardError, TraceError
from ..importers import ImportedRun, Importer, Source, available, detect, get, to_trace, trace_name
from ..io._format import dump, load_file
from ..live._redact import Redactor
from ..report._console import fit_table, progress
from ._common import error

__all__ = ["import_logs"]

LOG_SUFFIXES = (".json", ".jsonl", ".traj")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
TRACE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")  # what `load` reads: a trace's name in any of them
ORIGINS = ("user", "harness", "agent", "assistant", "system")


def _sources(paths: list[str], pool: list[Importer], out: Path) -> Iterator[Source | TraceError]:
    """Each SRC as a source; a plain folder gives its logs and event folders (sorted, recursively).

    The output folder is passed over: importing `logs -o logs/traces` twice must not read the traces
    the first run wrote as logs.
    """
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield TraceError("no such file or folder; expected an agent log, an event folder or a folder of logs",
                             file=raw)
        elif path.is_dir():
            found = list(_walk(path, pool, out.resolve()))
            if not found:
                yield TraceError("no .json, .jsonl or .traj files in this folder", file=raw)
            yield from found
        elif raw.endswith(TAR_SUFFIXES):
            yield from _tar_members(path)
        else:
            yield Source.from_path(path, MAX_LOG_BYTES)


def _tar_members(path: Path) -> Iterator[Source | TraceError]:
    """A tarball's log members, read in memory (the calibration corpus is kept packed), like a folder's files."""
    found: list[Source | TraceError] = []
    try:
        with tarfile.open(path) as tar:
            for info in tar:
                if not (info.isfile() and info.name.endswith(LOG_SUFFIXES)):
                    continue
                name = f"{path}:{info.name}"
                fh = tar.extractfile(info)
                if info.size > MAX_LOG_BYTES or fh is None:  # the bound a log file on disk has
                    found.append(TraceError(f"file too large: {info.size} bytes; at most {MAX_LOG_BYTES}", file=name))
                else:
                    found.append(Source.from_bytes(name, fh.read()))
    except (tarfile.TarError, EOFError, OSError) as exc:
        yield TraceError(f"unreadable archive ({exc}); expected a tar archive of agent logs", file=str(path))
        return
    if not found:
        yield TraceError("no .json, .jsonl or .traj members in this archive", file=str(path))
    yield from found


def _walk(folder: Path, pool: list[Importer], out: Path) -> Iterator[Source]:
    """An event folder (one an importer recognises) as one source, else its log files and subfolders."""
    if folder.resolve() == out:
        return
    source = Source.from_path(folder)
    if any(imp.sniff(source) for imp in pool):
        yield source
        return
    for child in sorted(folder.iterdir()):
        if child.is_dir():
            yield from _walk(child, pool, out)
        elif child.name.endswith(LOG_SUFFIXES):
            yield Source.from_path(child, MAX_LOG_BYTES)


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
    failed = 0
    seen: set[str] = set()
    for source in progress(_sources(args.sources, pool, out), "importing"):  # lazily: a log is read when its turn comes
        if isinstance(source, TraceError):
            error(source)
            failed += 1
            continue
        # a file named twice (or named and inside a named folder) is one source: its runs once, not `-2` copies
        key = str(source.path.resolve()) if source.path is not None else source.name
        if key in seen:
            continue
        seen.add(key)
        imp = None
        try:
            imp = get(args.fmt, pool) if args.fmt else detect(source, pool)
            runs = [_fitted(_redacted(r, redactor)) for r in imp.convert(source)]
            traces = [to_trace(r, source.name) for r in runs]
        except LoopguardError as exc:
            error(exc)
            failed += 1
            continue
        except OSError as exc:  # unreadable file or event folder: this source fails, the others go on
            error(f"{exc.filename or source.name}: {exc.strerror}")
            failed += 1
            continue
        except Exception as exc:
            # importers are plugins (third-party code among them): one that trips over an odd log is a bug
            # to report, but it must not cost the user the other sources or end in a traceback
            which = f"the {imp.name} importer" if imp is not None else "format detection"
            error(f"{source.name}: {which} failed on this file ({type(exc).__name__}: {exc}); "
                  "this is a bug in the importer, please report it")
            failed += 1
            continue
        for r, trace in zip(runs, traces, strict=True):
            name, replaced = _place(trace.name, source.name, out, used)
            target = out / f"{name}.{args.out_format}"
            try:
                dump(dataclasses.replace(trace, name=name) if name != trace.name else trace, target)
                if target.stat().st_size > MAX_FILE_BYTES:  # `load` would refuse it: write no trace it refuses
                    size = target.stat().st_size
                    target.unlink()
                    error(f"{source.name}: run {name} gives a trace of {size} bytes; a trace file "
                          f"holds at most {MAX_FILE_BYTES}")
                    failed += 1
                    continue
                for old in replaced:  # the same run written before in another format: one file per trace
                    if old != target:
                        old.unlink()
            except OSError as exc:  # this run cannot be written (a full disk, no permission): the others go on
                error(f"{target}: {exc.strerror}")
                failed += 1
                continue
            if name != trace.name:
                notes.append(f"{name}: note: the name {trace.name} is another run's (in this import or in {out})")
            c = r.counts
            rows.append([name, imp.name, c["calls"], c["failed"], c["rejected"], _messages(c), _unmapped(r)])
            notes += [f"{name}: warning: {w}" for w in r.warnings]
    if rows:
        print(fit_table(rows, ["trace", "from", "calls", "failed", "rejected", "messages", "unmapped"]))
    for note in notes:
        print(note)
    secrets = f", {redactor.count} distinct secrets redacted" if redactor is not None else ", not redacted"
    print(f"{len(rows)} traces written to {out}{secrets}" + (f"; {failed} sources failed" if failed else ""))
    return 2 if failed else 0


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
    """The run with every string longer than a trace holds (MAX_STRING) cut to that length, and a warning
    saying so: a 20 MB command output must not make the whole run a trace that `load` refuses."""
    cut: list[int] = []

    def fit(value: Any) -> Any:
        if isinstance(value, str) and len(value) > MAX_STRING:
            cut.append(len(value))
            return value[:MAX_STRING]
        if isinstance(value, dict):
            return {k: fit(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fit(v) for v in value]
        return value

    fitted = fit(run.trace)
    if not cut:
        return run
    warning = (f"{len(cut)} string(s) longer than {MAX_STRING} characters (the longest {max(cut)}) cut to "
               f"{MAX_STRING}, the longest a trace holds")
    return ImportedRun(run.run_id, fitted, [*run.warnings, warning], run.unmapped, run.counts)


def _place(name: str, origin: str, out: Path, used: set[str]) -> tuple[str, list[Path]]:
    """The name to write a run under, and the trace files already in `out` that it replaces.

    `name`, or `name-2`, `name-3`... when the name is taken: by another run of this import, or by a trace
    in `out` that came from another source (an earlier import of another log, a hand-written trace). A
    trace that an earlier import wrote from this same source is replaced, whatever its format, so
    re-running an import refreshes its traces instead of duplicating them.
    """
    candidate, n = name, 1
    while True:
        # names differing only in case are one file on macOS and Windows: keep the corpus portable
        if candidate.casefold() not in used:
            existing = [p for p in (out / f"{candidate}{s}" for s in TRACE_SUFFIXES) if p.is_file()]
            if all(_imported_from(p, origin) for p in existing):
                used.add(candidate.casefold())
                return candidate, existing
        n += 1
        candidate = f"{name}-{n}"


def _imported_from(path: Path, origin: str) -> bool:
    """Whether the trace file at `path` was imported from `origin` (the same file, however it was named)."""
    try:
        traces = load_file(path)
    except (LoopguardError, OSError):
        return False  # unreadable: not ours to replace
    for trace in traces:
        if trace.source.get("kind") != "imported":
            return False
        was = str(trace.source.get("origin"))
        if was != origin and not _same_file(was, origin):
            return False
    return True


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).samefile(b)
    except OSError:
        return False
