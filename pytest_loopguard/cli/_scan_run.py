"""What `loopguard scan` does: find the logs, scan each (redacted on import), print the loops and the totals per agent.

A log that cannot be read gets one line on stderr under the tables and the scan goes on; inside a folder the
user named, a file no importer recognises (a settings file beside the logs) is passed over and counted.
`--save DIR` writes the sessions with loops as `loopguard import` writes traces (its names, size bound and
redaction), `--report PATH` the document of scan/_report.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..core._limits import MAX_FILE_BYTES
from ..core._safeload import one_line
from ..errors import LoopguardError, TraceError
from ..importers import ImportedRun, available
from ..io._format import dump
from ..live._redact import Redactor
from ..report._console import fit_table
from ..report._write import report_format
from ..runtime._policy import resolve_policy
from ..scan._discover import AGENTS, LogFile, discover, logs_under
from ..scan._report import LOOP_HEADERS, TOTAL_HEADERS, loop_entry, loop_rows, scan_document, total_rows
from ..scan._report import write_scan_report as write_report
from ..scan._session import ImporterFailed, SessionScan, scan_log
from ._common import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_MISMATCH, EXIT_OK, err, error, out, policy_arg, trace_warnings
from ._import_logs import _digest, _fitted, _Index, _place, _raised_at, _redacted

__all__ = ["scan"]

DAY_SECONDS = 86_400
PROGRESS_AFTER = 10  # logs: fewer are scanned before a bar would be worth drawing

UNRECOGNISED = ("no importer recognises", "the file is empty")
INTERNAL = "internal error (please report it)"  # import's words for a bug of ours or an importer's (exit 3)


class _Shown:
    """How a path or a message is shown: the home folder as `~`, secrets redacted."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        home = os.environ.get("HOME") or os.environ.get("USERPROFILE") or ""
        self.home = home.rstrip("/\\") if len(home) > 1 else ""

    def __call__(self, text: object) -> str:
        s = str(text)
        if self.home:
            s = s.replace(self.home, "~")
        return self.redactor.text(s)


def _progress(logs: Sequence[LogFile], stream: TextIO) -> Iterator[LogFile]:
    """The logs, with a one-line bar on `stream` while a person watches a long scan (a terminal, not `dumb`)."""
    if len(logs) < PROGRESS_AFTER or not stream.isatty() or os.environ.get("TERM") == "dumb":
        yield from logs
        return
    n = len(logs)
    try:
        for i, log in enumerate(logs):
            filled = 30 * i // n
            stream.write(f"\rscanning {i}/{n} [{'#' * filled}{' ' * (30 - filled)}]")
            stream.flush()
            yield log
    finally:
        stream.write("\r\x1b[K")  # the bar leaves nothing behind
        stream.flush()


def _logs(args: argparse.Namespace, errors: list[str], shown: _Shown) -> list[LogFile]:
    if args.paths:
        logs: list[LogFile] = []
        for item in logs_under(args.paths):
            if isinstance(item, Path):
                errors.append(f"{shown(item)}: no such file or folder; expected a session log or a folder of them")
            else:
                logs.append(item)
    else:
        logs = discover(agents=args.agent or AGENTS)
    if args.since is not None:
        cutoff = time.time() - args.since * DAY_SECONDS
        logs = [log for log in logs if log.mtime >= cutoff]
    return logs


def _entry(found: SessionScan, shown: _Shown) -> dict[str, Any]:
    return {"session": found.trace.name, "agent": found.agent, "importer": found.importer,
            "file": shown(found.log.path), "calls": found.calls,
            "loops": [{**entry, "what": shown(entry["what"])} for entry in map(loop_entry, found.loops)]}


def scan(args: argparse.Namespace) -> int:
    pool = available()
    known = {*AGENTS, *(imp.name for imp in pool)}
    unknown = [name for name in args.agent if name not in known]
    if unknown:
        error(f"--agent: unknown agent {unknown[0]!r}; expected one of {', '.join(AGENTS)} or an importer's name")
        return EXIT_BAD_INPUT
    if args.report:
        try:
            report_format(args.report)  # before the scan, not after it
        except ValueError as exc:
            error(f"--report: {exc}")
            return EXIT_BAD_INPUT
    policy = policy_arg(args.policy) or resolve_policy("default")
    policy_name = args.policy if isinstance(args.policy, str) else policy.name
    redactor = Redactor.configured(args.redact)
    shown = _Shown(redactor)
    errors: list[str] = []
    bugs: list[str] = []  # internal errors: an importer or the scan raised what is not our one-line error
    logs = _logs(args, errors, shown)
    named = {Path(p).resolve() for p in args.paths if Path(p).is_file()}

    def prepare(run: ImportedRun) -> ImportedRun:
        return _fitted(_redacted(run, redactor))

    sessions: list[dict[str, Any]] = []
    to_save: list[SessionScan] = []  # kept whole only when they are to be saved: a machine holds many sessions
    covered: set[Path] = set()  # log files a scanned session already read (Claude Code subagents)
    passed_over = 0
    with trace_warnings():
        for log in _progress(logs, sys.stderr):
            if log.session is not None and log.path.resolve() in covered:
                continue
            try:
                scans = scan_log(log, policy, pool, prepare)
            except TraceError as exc:
                if log.path.resolve() not in named and log.agent is None and exc.problem.startswith(UNRECOGNISED):
                    passed_over += 1
                else:
                    errors.append(shown(exc))
                continue
            except LoopguardError as exc:
                errors.append(shown(exc))
                continue
            except OSError as exc:  # gone or unreadable since it was listed: this log fails, the others go on
                errors.append(f"{shown(exc.filename or log.path)}: {exc.strerror}")
                continue
            except ImporterFailed as exc:
                # an importer (a plugin among them) tripping over an odd log is its bug: exit 3 as `import`
                # gives, in import's words, and the other logs are still scanned
                what = shown(one_line(str(exc)))[:200]
                bugs.append(f"{shown(one_line(str(log.path)))}: {what} at {_raised_at(exc.cause)}")
                continue
            except Exception as exc:  # our own scanning of a run that imported: a bug too
                what = shown(one_line(f"{type(exc).__name__}: {exc}"))[:200]
                bugs.append(f"{shown(one_line(str(log.path)))}: scanning failed: {what} at {_raised_at(exc)}")
                continue
            for one in scans:
                covered.update(Path(f).resolve() for f in one.files)
                if args.agent and args.paths and not {one.agent, one.importer} & set(args.agent):
                    continue
                sessions.append(_entry(one, shown))
                if args.save and one.loops:
                    to_save.append(one)
    rows = loop_rows(sessions, width=60)
    document = scan_document(sessions, [*errors, *(f"{INTERNAL}: {bug}" for bug in bugs)], {
        "policy": policy_name, "since_days": args.since, "agents": args.agent or list(AGENTS),
        "paths": [shown(p) for p in args.paths] or "each agent's default place",
    })
    if rows:
        out(fit_table(rows, list(LOOP_HEADERS)))
        out()
    if sessions:
        out(fit_table(total_rows(document["totals"]), list(TOTAL_HEADERS)))
        out()
    if args.save:
        errors += _save(Path(args.save), to_save, shown)
        document["errors"] = [*errors, *(f"{INTERNAL}: {bug}" for bug in bugs)]
    if args.report:
        write_report(args.report, document)
    loops = len(rows)
    with_loops = sum(1 for s in sessions if s["loops"])
    spent = sum(lp["calls"] for s in sessions for lp in s["loops"])
    tokens = sum(lp["tokens"] for s in sessions for lp in s["loops"])
    out(f"loopguard scan: {len(sessions)} sessions in {len(logs)} logs under {policy_name}: {loops} loops in "
        f"{with_loops} sessions ({spent} calls, {tokens:,} tokens inside loops)")
    if passed_over:
        err(f"loopguard: {passed_over} files in the folders named are not session logs (no importer recognises "
            "them): passed over")
    for line in errors:
        error(line)
    for bug in bugs:
        err(f"loopguard: {INTERNAL}: {bug}")
    if bugs:
        return EXIT_INTERNAL
    if errors:
        return EXIT_BAD_INPUT
    return EXIT_MISMATCH if loops else EXIT_OK


def _save(folder: Path, found: list[SessionScan], shown: _Shown) -> list[str]:
    """Write each session (with loops) as a trace (YAML) into `folder`, named and bounded as `import` does."""
    problems: list[str] = []
    if folder.exists() and not folder.is_dir():
        return [f"{shown(folder)}: is a file; expected a folder for the traces (--save)"]
    folder.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    index = _Index(folder)
    written = 0
    for one in found:
        # identified as `import` identifies a run (digests of the log's resolved path and the run), so saving
        # the same scan again replaces its traces instead of writing NAME-2 copies
        identity = str(one.log.path.resolve())
        source_key, run_key = _digest(identity), _digest(f"{identity}\0{one.run.run_id}")
        name, replaced = _place(one.trace.name, source_key, run_key, folder, used, index)
        target = folder / f"{name}.yaml"
        source = {**one.trace.source, "x-import-source": source_key, "x-import-run": run_key}
        trace = dataclasses.replace(one.trace, name=name, source=source)
        try:
            dump(trace, target)
            if target.stat().st_size > MAX_FILE_BYTES:
                target.unlink()
                problems.append(f"{shown(one.log.path)}: the session's trace exceeds {MAX_FILE_BYTES} bytes: "
                                "not saved")
                continue
            for old in replaced:
                if old != target and not old.is_symlink():
                    old.unlink()
        except OSError as exc:
            problems.append(f"{shown(target)}: {exc.strerror}")
            continue
        written += 1
    out(f"loopguard scan: {written} sessions with loops saved to {shown(folder)} (redacted)")
    return problems

