"""`loopguard eval PATHS`: score policies on labelled real runs, side by side, or sweep one setting.

    loopguard eval PATHS... [--labels FILE] [--policy P ...] [--json] [--markdown] [--sweep E.S=A..B]
    loopguard eval --labels FILE [...]    (no PATHS: the runs the labels name, each file once)
    loopguard eval PATHS... --heeded K    (per rule: warnings and blocks the agent heeded within K calls)
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from ._common import EXIT_BAD_INPUT, EXIT_OK, err, error

if TYPE_CHECKING:
    from ..eval._runs import ScoredRun
    from ..eval._score import Replayed
    from ..runtime._policy import Policy


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATHS",
                   help="traces, agent logs (imported), a tarball of logs with a resolved.json, or a corpus (its "
                        "manifest, archive or installed name; scored with its labels); none: the files the --labels "
                        "name")
    p.add_argument("--labels", metavar="FILE",
                   help="a loop labels file (YAML: each run's file, calls and labelled loops; docs/eval.md); the runs "
                        "given are scored, and labelled runs not among them are named")
    p.add_argument("--policy", action="append", metavar="P", help="a preset or policy file; repeatable")
    p.add_argument("--json", action="store_true", help="print every figure and every run's score as JSON")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    p.add_argument("--sweep", metavar="ENGINE.SETTING=A..B",
                   help="vary one setting and print the recall / false-stop frontier")
    p.add_argument("--heeded", metavar="K", type=int,
                   help="per rule, how often the agent changed course (did not repeat the call) within K calls of a "
                        "warning or block: on runs recorded with a live guard, simulated runs and replayed logs")
    from ._backend import add_arguments as backend_arguments

    backend_arguments(p, "replay")


# runs per batch: a run is a whole agent session (hundreds of steps), replayed under every policy and sweep value
MIN_RUNS: Final = 4
MAX_RUNS: Final = 64


def _replays(args: argparse.Namespace, runs: list[ScoredRun], policies: list[Policy]) -> Iterator[list[Replayed]]:
    """Each policy's replays of every run, in order, made on -j processes or the Dask cluster: the runs go out
    once, in batches, each replayed there under every policy (a sweep's values too)."""
    from ..eval._score import replay_runs
    from ._backend import batched, ordered

    chunks: list[Sequence[ScoredRun]] = []

    def make(workers: int) -> list[tuple[Sequence[ScoredRun], list[Policy]]]:
        chunks[:] = batched(runs, workers, MIN_RUNS, MAX_RUNS)
        return [(chunk, policies) for chunk in chunks]

    def describe(b: int) -> str:
        names = [r.run_id for r in chunks[b]]
        return names[0] if len(names) == 1 else f"{len(names)} runs, {names[0]} .. {names[-1]}"

    per_policy: list[list[Replayed]] = [[] for _ in policies]
    for batch in ordered(replay_runs, make, args, describe):
        for mine, theirs in zip(per_policy, batch, strict=True):
            mine.extend(theirs)
    yield from per_policy


def run(args: argparse.Namespace) -> int:
    """Load runs (and labels), score each policy, print the tables or JSON; 2 on bad input, 3 on a lost batch."""
    from ._backend import run_checked

    return run_checked(_score, args)


def _score(args: argparse.Namespace) -> int:
    import json

    from ..eval._labels import RunLabel, load_labels
    from ..eval._runs import load_runs
    from ..eval._score import PolicyScore, match_labels, score_policy
    from ..runtime._policy import resolve_policy
    from ._eval_tables import parse_sweep, render, sweep_headers, sweep_rows, swept, table

    names: list[str] = args.policy or ["default"]
    policies = [resolve_policy(n) for n in names]  # a bad name fails before any replay
    sweep = parse_sweep(args.sweep) if args.sweep else None
    if not args.paths and not args.labels:
        error("eval: name the runs to score (PATHS), or a labels file (--labels) to score the runs it names")
        return EXIT_BAD_INPUT
    paths = args.paths
    labels_path: str | None = args.labels
    if paths:  # a corpus named here runs its traces and logs, scored with its labels unless --labels says
        from ._corpus_refs import eval_paths

        paths, labels_path = eval_paths(paths, labels_path)
    labels = load_labels(labels_path) if labels_path else None
    if not paths and labels is not None:  # the labels say which runs: each file they name, once, in their order
        paths = list(dict.fromkeys(labels.base / label.file for label in labels.runs))
    runs: list[ScoredRun] = load_runs(paths, skip=[labels_path] if labels_path else [])
    absent: list[RunLabel] = []
    labelled = match_labels(labels, runs, absent=absent) if labels is not None else {}
    if absent and labels is not None:
        shown = ", ".join(label.run_id for label in absent[:3]) + (", ..." if len(absent) > 3 else "")
        err(f"loopguard: eval: {len(absent)} labelled runs of {labels.path} were not among the runs given "
            f"(not scored): {shown}")
    if args.heeded is not None:
        return _heeded(args, names, policies, runs)
    # each policy, or each of its sweep's values
    scored = [[swept(p, sweep, v) for v in sweep.values] if sweep is not None else [p] for p in policies]
    # None: each replayed here as it is scored; else made on other processes, in the order they are scored
    elsewhere = args.jobs > 1 or args.backend != "local"
    replays = _replays(args, runs, [p for group in scored for p in group]) if elsewhere else None

    def score(policy: Policy, name: str | None = None) -> PolicyScore:
        return score_policy(policy, runs, labelled, name=name, replays=next(replays) if replays else None)

    if sweep is not None:
        document: dict[str, Any] = {}
        for name, group in zip(names, scored, strict=True):
            scores = [score(p) for p in group]
            if args.json:
                document[name] = [{"value": v, **s.to_dict()} for v, s in zip(sweep.values, scores, strict=True)]
            else:
                print(f"{name}: sweep {sweep.engine}.{sweep.setting} over {len(runs)} runs")
                print(table(sweep_rows(sweep, scores), sweep_headers(sweep, scores), args.markdown))
        if args.json:
            print(json.dumps(document, indent=2))
        return EXIT_OK
    scores = [score(p, n) for n, p in zip(names, policies, strict=True)]
    if args.json:
        print(json.dumps({"runs": len(runs), "labelled": len(labelled), "absent": [a.run_id for a in absent],
                          "policies": [s.to_dict() for s in scores]}, indent=2))
    else:
        print(render(scores, markdown=args.markdown))
    return EXIT_OK


def _heeded(args: argparse.Namespace, names: list[str], policies: list[Any], runs: list[Any]) -> int:
    """`--heeded K`: one table per policy, a row per rule and source (eval/_heeded.py)."""
    import json

    from ..eval._heeded import heed_rows
    from ._eval_tables import table

    within: int = args.heeded
    if within < 1:
        error(f"eval: --heeded: expected a number of calls >= 1, got {within}")
        return EXIT_BAD_INPUT
    document: dict[str, Any] = {}
    for name, policy in zip(names, policies, strict=True):
        rows = heed_rows(runs, policy, within)
        if args.json:
            document[name] = [r.to_dict() for r in rows]
            continue
        print(f"{name}: warnings and blocks heeded within {within} calls, over {len(runs)} runs")
        body = [[r.reason, r.source, str(r.given), str(r.heeded), "—" if r.rate is None else f"{100 * r.rate:.0f}%"]
                for r in rows]
        print(table(body, ["rule", "source", "given", "heeded", "rate"], args.markdown))
    if args.json:
        print(json.dumps({"within": within, "policies": document}, indent=2))
    return EXIT_OK
