#!/usr/bin/env python3
"""Hash every replay verdict, to check that a refactor changed no behaviour.

For every trace file under traces/ (recursively), every run under ../shared/corpus/real and every run of the
calibration tarball, under every bundled preset, the script runs the trace (a recorded trace is replayed, a
`mode: simulate` scenario goes through the simulators, as `loopguard run` does; a trace file under traces/ also
under the policy it names itself, key suffix `::(own)`) and hashes the full result:
per step the combined action and each verdict's engine, action, reason, message and data, then the outcome,
stopped_at and stopped_by (canonical JSON, sorted keys). It writes {"source::trace-name::preset": sha256}
and prints one total digest.

    python tools/verdict_hashes.py --out /tmp/lg/hashes_before.json
    python tools/verdict_hashes.py --out /tmp/lg/hashes_after.json --compare /tmp/lg/hashes_before.json

Public API only (the package's top level), except `_internals()` below, which finds the few internal
functions (corpus loading, the replay/simulate dispatcher) wherever the package keeps them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest_loopguard
from pytest_loopguard import LoopguardError, load_file, replay, resolve_policy

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / ".." / "shared" / "corpus"
REAL = SHARED / "real"
CALIBRATION = SHARED / "calibration" / "mini-swe-agent-gemini-3-pro-swebench.tar.gz"


def _internals() -> tuple[Callable[..., Any], Callable[..., Any], Callable[[], list[str]]]:
    """(load_runs, execute, preset_names), each looked up in the modules that have held it.

    load_runs(paths, skip=...) -> runs with `.trace`, `.file`, `.row`, `.member` (the eval corpus loader);
    execute(trace, policy) -> ReplayResult (replay, or simulate a scenario); preset_names() -> names.
    """

    def find(name: str, modules: tuple[str, ...]) -> Any:
        for mod in modules:
            try:
                return getattr(import_module(mod), name)
            except (ImportError, AttributeError):
                continue
        return None

    load_runs = find("load_runs", ("pytest_loopguard.evalruns", "pytest_loopguard.eval._runs",
                                   "pytest_loopguard.eval.runs", "pytest_loopguard._evalruns"))
    if load_runs is None:
        raise SystemExit("verdict_hashes: cannot find load_runs (evalruns); add its module to _internals()")
    execute = find("execute", ("pytest_loopguard.runner", "pytest_loopguard.run.runner",
                               "pytest_loopguard.core.runner", "pytest_loopguard._runner",
                               "pytest_loopguard.run._runner"))
    if execute is None:  # the dispatcher, rebuilt from the simulators' own entry point
        from loopguard_simulators.scenario import simulate

        def execute(trace: Any, policy: Any = None) -> Any:
            return simulate(trace, policy).result if trace.mode == "simulate" else replay(trace, policy)

    names = find("preset_names", ("pytest_loopguard.policy", "pytest_loopguard.core.policy",
                                  "pytest_loopguard.policy._presets", "pytest_loopguard._policy"))
    aliases = find("ALIASES", ("pytest_loopguard.policy", "pytest_loopguard.core.policy",
                               "pytest_loopguard.policy._presets", "pytest_loopguard._policy")) or {}

    def presets() -> list[str]:
        # every bundled preset, aliases left out (an alias is the same policy under a second name)
        found = names() if names is not None else [
            p.stem for p in Path(pytest_loopguard.__file__).parent.rglob("presets/*.yaml")]
        return sorted(set(found) - set(aliases))

    return load_runs, execute, presets


LOAD_RUNS, EXECUTE, PRESETS = _internals()


def _plain(value: Any) -> Any:
    """`value` as plain JSON data (mappings to dicts, sequences and sets to lists, sets sorted): the corpus
    package's digest of verdicts uses the same form, so there is one writer of it."""
    from pytest_loopguard.corpora._corpus import _plain as plain

    return plain(value)


def result_doc(result: Any) -> dict[str, Any]:
    return {
        "steps": [
            {"action": s.action,
             "verdicts": [{"engine": v.engine, "action": v.action, "reason": v.reason, "message": v.message,
                           "data": _plain(v.data)} for v in s.verdicts]}
            for s in result.steps
        ],
        "outcome": result.outcome,
        "stopped_at": result.stopped_at,
        "stopped_by": result.stopped_by,
    }


def digest(doc: Any) -> str:
    text = json.dumps(doc, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# --- the traces: (key prefix "source::name", trace) ------------------------------------------------------


def _unique(prefix: str, seen: set[str]) -> str:
    key, n = prefix, 1
    while key in seen:
        n += 1
        key = f"{prefix}#{n}"
    seen.add(key)
    return key


def repo_traces(seen: set[str], rejected: list[str]) -> Iterator[tuple[str, Any]]:
    for path in sorted(p for p in (REPO / "traces").rglob("*") if p.is_file()):
        rel = path.relative_to(REPO).as_posix()
        try:
            traces = load_file(path)
        except LoopguardError as exc:  # not a trace file (or one the loader rejects): not hashed
            rejected.append(f"{rel}: {str(exc).splitlines()[0]}")
            continue
        for trace in traces:
            yield _unique(f"{rel}::{trace.name}", seen), trace


def corpus_runs(
    paths: list[Path], label: str, seen: set[str], skip: tuple[Path, ...] = ()
) -> Iterator[tuple[str, Any]]:
    for run in LOAD_RUNS(paths, skip=skip):
        if run.member is not None:
            where = f"{label}/{run.member}"
        else:
            rel = Path(run.file).resolve().relative_to(REAL.resolve()).as_posix()
            where = f"{label}/{rel}" + (f"#{run.row}" if run.rows > 1 else "")
        yield _unique(f"{where}::{run.trace.name}", seen), run.trace


# --- running ---------------------------------------------------------------------------------------------

_JOBS: list[tuple[str, Any]] = []
OWN = "(own)"


def _hash_one(i: int) -> list[tuple[str, str]]:
    """Every preset's hash for job `i` (a forked worker reads the jobs and policies it inherited)."""
    key, trace = _JOBS[i]
    out = [(f"{key}::{name}", digest(result_doc(EXECUTE(trace, policy)))) for name, policy in _POLICIES]
    if key.startswith("traces/"):  # also the policy the trace file names (often a preset with overrides)
        out.append((f"{key}::{OWN}", digest(result_doc(EXECUTE(trace, None)))))
    return out


_POLICIES: list[tuple[str, Any]] = []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write the hashes here (JSON)")
    ap.add_argument("--compare", type=Path, metavar="OLD.json", help="print every key that differs from OLD")
    ap.add_argument("--skip-calibration", action="store_true", help="leave out the calibration tarball")
    ap.add_argument("-j", "--jobs", type=int, default=0, help="worker processes (default: CPUs; 1 = serial)")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    _POLICIES[:] = [(name, resolve_policy(name)) for name in PRESETS()]
    seen: set[str] = set()
    rejected: list[str] = []
    sources: dict[str, int] = {}
    loaders: list[tuple[str, Callable[[], Iterable[tuple[str, Any]]]]] = [
        ("traces", lambda: repo_traces(seen, rejected)),
        ("real", lambda: corpus_runs([REAL], "real", seen, skip=(REAL / "labels.yaml",))),
        ("calibration", lambda: [] if args.skip_calibration else corpus_runs([CALIBRATION], "calibration", seen)),
    ]
    for label, items in loaders:
        before = len(_JOBS)
        _JOBS.extend(items())
        sources[label] = len(_JOBS) - before
    t_load = time.perf_counter() - t0

    import multiprocessing as mp
    import os

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    jobs = args.jobs or cpus
    indices = range(len(_JOBS))
    if jobs > 1 and "fork" in mp.get_all_start_methods():
        with ProcessPoolExecutor(jobs, mp_context=mp.get_context("fork")) as pool:
            chunks = list(pool.map(_hash_one, indices, chunksize=4))
    else:
        chunks = [_hash_one(i) for i in indices]
    hashes = dict(pair for chunk in chunks for pair in chunk)
    if len(hashes) != (len(_JOBS) * len(_POLICIES) + sources["traces"]):  # keys are made unique above
        raise SystemExit("verdict_hashes: duplicate keys")
    total = digest(sorted(hashes.items()))
    elapsed = time.perf_counter() - t0

    counts = ", ".join(f"{k} {v}" for k, v in sources.items())
    print(f"traces: {counts}; presets: {len(_POLICIES)}; results: {len(hashes)}; "
          f"not loaded: {len(rejected)}; load {t_load:.1f}s, total {elapsed:.1f}s", file=sys.stderr)
    for r in rejected:
        print(f"  not a trace: {r}", file=sys.stderr)
    print(f"total digest: {total}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    if args.compare:
        old = json.loads(args.compare.read_text())
        if args.skip_calibration:  # compare like with like
            old = {k: v for k, v in old.items() if not k.startswith("calibration/")}
        diff = sorted(k for k in old.keys() | hashes.keys() if old.get(k) != hashes.get(k))
        for k in diff:
            state = "missing now" if k not in hashes else "new" if k not in old else "changed"
            print(f"DIFF {state}: {k}")
        print(f"{len(diff)} of {len(old.keys() | hashes.keys())} keys differ")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
