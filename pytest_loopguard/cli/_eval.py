"""`loopguard eval PATHS`: score policies on labelled real runs, side by side, or sweep one setting.

    loopguard eval PATHS... [--labels FILE] [--policy P ...] [--json] [--markdown] [--sweep E.S=A..B]
    loopguard eval --labels FILE [...]    (no PATHS: the runs the labels name, each file once)
    loopguard eval PATHS... --heeded K    (per rule: warnings and blocks the agent heeded within K calls)
"""

from __future__ import annotations

import argparse
from typing import Any

from ._common import EXIT_BAD_INPUT, EXIT_OK, error


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATHS",
                   help="traces, agent logs (imported), a tarball of logs with a resolved.json, or a corpus (its "
                        "manifest, archive or installed name; scored with its labels); none: the files the --labels "
                        "name")
    p.add_argument("--labels", metavar="FILE", help="loop labels (the format of corpus/real/labels.yaml)")
    p.add_argument("--policy", action="append", metavar="P", help="a preset or policy file; repeatable")
    p.add_argument("--json", action="store_true", help="print every figure and every run's score as JSON")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    p.add_argument("--sweep", metavar="ENGINE.SETTING=A..B",
                   help="vary one setting and print the recall / false-stop frontier")
    p.add_argument("--heeded", metavar="K", type=int,
                   help="per rule, how often the agent changed course (did not repeat the call) within K calls of a "
                        "warning or block: on runs recorded with a live guard, simulated runs and replayed logs")


def run(args: argparse.Namespace) -> int:
    """Load runs (and labels), score each policy, print the tables or JSON; 2 on bad input."""
    import json

    from ..eval._labels import load_labels
    from ..eval._runs import ScoredRun, load_runs
    from ..eval._score import match_labels, score_policy
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
    labelled = match_labels(labels, runs) if labels is not None else {}
    if args.heeded is not None:
        return _heeded(args, names, policies, runs)
    if sweep is not None:
        document: dict[str, Any] = {}
        for name, policy in zip(names, policies, strict=True):
            scores = [score_policy(swept(policy, sweep, v), runs, labelled) for v in sweep.values]
            if args.json:
                document[name] = [{"value": v, **s.to_dict()} for v, s in zip(sweep.values, scores, strict=True)]
            else:
                print(f"{name}: sweep {sweep.engine}.{sweep.setting} over {len(runs)} runs")
                print(table(sweep_rows(sweep, scores), sweep_headers(sweep, scores), args.markdown))
        if args.json:
            print(json.dumps(document, indent=2))
        return EXIT_OK
    scores = [score_policy(p, runs, labelled, name=n) for n, p in zip(names, policies, strict=True)]
    if args.json:
        print(json.dumps({"runs": len(runs), "labelled": len(labelled),
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
