"""`loopguard import`: convert agent logs into trace files, one per run, with a table of what was mapped.

Each SRC is a file, an event folder (OpenHands V1) or a folder of logs. A source that cannot be read
(unknown format, truncated JSON) gets one error line and nothing is written for it; the others are
still imported and the command exits 2. Secrets are redacted on the way (built-in patterns, the
project's `[tool.loopguard] redact` rules and `--redact REGEX`) unless `--no-redact` is given.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from .console import fit_table, progress
from .errors import LoopguardError, TraceError
from .importers import ImportedRun, Importer, Source, available, detect, get, to_trace
from .redact import Redactor
from .traceio import dump

__all__ = ["add_arguments", "run"]

LOG_SUFFIXES = (".json", ".jsonl", ".traj")
ORIGINS = ("user", "harness", "agent", "assistant", "system")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="+", metavar="SRC", help="log files, event folders or folders of logs")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="folder for the traces (created)")
    p.add_argument("--from", dest="fmt", metavar="FORMAT", help="the logs' format (default: detect per file)")
    p.add_argument("--format", dest="out_format", choices=("yaml", "jsonl"), default="yaml",
                   help="trace file format (default yaml)")
    p.add_argument("--redact", action="append", default=[], metavar="REGEX",
                   help="also redact what this regex matches; repeatable")
    p.add_argument("--no-redact", action="store_true", help="keep secrets as they are (no redaction at all)")


def _sources(paths: list[str], pool: list[Importer]) -> Iterator[Source | TraceError]:
    """Each SRC as a source; a plain folder gives its logs and event folders (sorted, recursively)."""
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield TraceError("no such file or folder; expected an agent log, an event folder or a folder of logs",
                             file=raw)
        elif path.is_dir():
            found = list(_walk(path, pool))
            if not found:
                yield TraceError("no .json, .jsonl or .traj files in this folder", file=raw)
            yield from found
        else:
            yield Source.from_path(path)


def _walk(folder: Path, pool: list[Importer]) -> Iterator[Source]:
    """An event folder (one an importer recognises) as one source, else its log files and subfolders."""
    source = Source.from_path(folder)
    if any(imp.sniff(source) for imp in pool):
        yield source
        return
    for child in sorted(folder.iterdir()):
        if child.is_dir():
            yield from _walk(child, pool)
        elif child.name.endswith(LOG_SUFFIXES):
            yield Source.from_path(child)


def _messages(counts: Counter[str]) -> str:
    parts = [f"{origin} {counts[f'messages.{origin}']}" for origin in ORIGINS if counts[f"messages.{origin}"]]
    return ", ".join(parts) or "—"


def _unmapped(run: ImportedRun) -> str:
    """Unmapped items grouped by what they are (the position prefix `history[3]: ` dropped)."""
    kinds = Counter(item.split(": ", 1)[-1] for item in run.unmapped)
    return "; ".join(f"{n}× {kind}" if n > 1 else kind for kind, n in kinds.most_common()) or "—"


def run(args: argparse.Namespace) -> int:
    pool = available()
    if args.fmt:
        try:
            get(args.fmt, pool)
        except TraceError as exc:
            print(f"loopguard: error: --from: {exc.problem}", file=sys.stderr)
            return 2
    redactor = None if args.no_redact else Redactor.configured(args.redact)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[list[object]] = []
    notes: list[str] = []
    used: set[str] = set()
    failed = 0
    for source in progress(list(_sources(args.sources, pool)), "importing"):
        if isinstance(source, TraceError):
            print(f"loopguard: error: {source}", file=sys.stderr)
            failed += 1
            continue
        try:
            imp = get(args.fmt, pool) if args.fmt else detect(source, pool)
            runs = list(imp.convert(source))
            traces = [to_trace(_redacted(r, redactor), source.name) for r in runs]
        except LoopguardError as exc:
            print(f"loopguard: error: {exc}", file=sys.stderr)
            failed += 1
            continue
        except OSError as exc:  # unreadable file or event folder: this source fails, the others go on
            print(f"loopguard: error: {exc.filename or source.name}: {exc.strerror}", file=sys.stderr)
            failed += 1
            continue
        for r, trace in zip(runs, traces, strict=True):
            name = _unique(trace.name, used)
            dump(dataclasses.replace(trace, name=name) if name != trace.name else trace,
                 out / f"{name}.{args.out_format}")
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
    if redactor is None:
        return run
    return ImportedRun(run.run_id, redactor.value(run.trace), run.warnings, run.unmapped, run.counts)


def _unique(name: str, used: set[str]) -> str:
    """`name`, or `name-2`, `name-3`... when two runs share an id (both are written, neither overwritten)."""
    candidate, n = name, 1
    while candidate in used:
        n += 1
        candidate = f"{name}-{n}"
    used.add(candidate)
    return candidate
