"""`loopguard run [PATHS]`: replay every trace under PATHS and check its expectations, on one process or N."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import LoopguardError
from ._common import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_MISMATCH,
    EXIT_OK,
    err,
    error,
    out,
    policy_arg,
    policy_type,
    print_json,
    report_errors,
    report_warnings,
    skipped_line,
    trace_warnings,
)

if TYPE_CHECKING:
    from ..core._expect import Mismatch
    from ..core._model import ReplayResult
    from ..errors import NotATraceError
    from ._dask import Cluster



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATHS",
                   help="files, folders or corpora (a corpus's manifest, archive or installed name: docs/corpora.md); "
                        "default: the loopguard_paths ini option, as pytest reads it; else traces")
    p.add_argument("--policy", type=policy_type,
                   help="replay every trace under this preset, policy file or inline {mapping} instead of its own")
    p.add_argument("--json", action="store_true", help="print a JSON list, one entry per trace")
    p.add_argument("--coverage", action="store_true", help="print rule coverage (reason codes no trace triggers)")
    p.add_argument("--report", metavar="PATH", help="write a report file: .json, .md or .html")
    from ._backend import add_arguments as backend_arguments

    backend_arguments(p, "replay")


def run(args: argparse.Namespace) -> int:
    if args.jobs <= 1 and args.backend == "local" and args.scheduler is None:
        return _replay_corpus(args)
    from ._backend import check
    from ._jobs import WorkerLost

    check(args)
    try:
        if args.backend == "dask":
            from ._dask import Cluster

            with Cluster(args.jobs, args.scheduler) as cluster:
                return _replay_corpus(args, cluster)
        return _replay_corpus(args)
    except WorkerLost as exc:  # killed (out of memory?) rather than a bug: no "please report it"
        error(exc)
        return EXIT_INTERNAL


def _replay_corpus(args: argparse.Namespace, cluster: Cluster | None = None) -> int:
    import itertools
    from pathlib import Path

    from ..report._console import progress
    from ..report._tables import json_entry, mismatch_table, summary_table
    from ._corpus import run_paths
    from ._corpus_refs import corpora_in, log_items

    policy = policy_arg(args.policy)
    results: list[tuple[ReplayResult, list[Mismatch]]] = []
    errors: list[LoopguardError] = []
    skipped: list[NotATraceError] = []
    if args.paths:
        paths = args.paths
    else:
        from ._inifile import trace_paths  # reads pytest's ini files (tomllib): only when no PATHS are given

        paths = trace_paths(Path.cwd())
    timelines = bool(args.coverage or args.report)  # coverage and reports read every step's verdicts
    # a corpus (its manifest, archive or installed name) runs its traces as named files, then its agent logs
    unresolved: list[LoopguardError] = []  # reported as bad input while the other paths run
    paths, corpora = corpora_in(paths, errors=unresolved)
    if args.jobs > 1 or cluster is not None:  # the same items in the same order from several processes (run_jobs)
        from ._jobs import run_jobs

        items = run_jobs(paths, policy, args.policy, args.jobs, skipped=skipped, stream=not timelines,
                         cluster=cluster)
    else:
        items = run_paths(paths, policy, skipped=skipped, stream=not timelines)
    items = itertools.chain(unresolved, items, log_items(corpora, policy))
    with trace_warnings():  # each file is replayed as it is read (JSONL streamed): memory stays flat
        for item in progress(items, "replaying"):
            if isinstance(item, LoopguardError):
                errors.append(item)
            else:
                results.append(item)
                report_warnings([item[0].trace])
    for note in skipped:
        err(skipped_line(note))
    if args.json:
        print_json([{**json_entry(r, m), "mismatches": [str(x) for x in m]} for r, m in results])
    else:
        if results:
            out(summary_table(results))
        for result, _ in results:
            if (what_if := result.what_if_note()) is not None:
                out(f"{result.trace.path}::{result.trace.name}: {what_if}")
        for result, mismatches in results:
            if mismatches:
                out()
                out(f"{result.trace.path}::{result.trace.name}")
                out(mismatch_table(result, mismatches))
        failed = sum(1 for _, m in results if m)
        out()
        out(f"loopguard: {len(results)} traces replayed, {failed} mismatched")
    if args.coverage or args.report:
        from ..report._run_report import run_report  # report and coverage rendering stay off the plain run's path

        run_report(args, results, policy)
    report_errors(errors)
    if errors:
        return EXIT_BAD_INPUT
    return EXIT_MISMATCH if any(m for _, m in results) else EXIT_OK
