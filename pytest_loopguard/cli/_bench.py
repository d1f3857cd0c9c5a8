"""`loopguard bench`: replay speed, live checks, construction and loading, as ratios to a bare loop."""

from __future__ import annotations

import argparse

from ._common import EXIT_OK, out, policy_type, print_json, table_text


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", type=_positive_int, default=5000, help="events per replay row (default 5000)")
    p.add_argument("--policy", action="append", type=policy_type, metavar="P",
                   help="a preset, policy file or inline {mapping}; repeatable")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3, help="repeats per row; min and median are shown (default 3)")
    p.add_argument("--stream", type=int, default=0, metavar="N", help="also run one N-event JSONL file")
    p.add_argument("--corpus", type=int, default=0, metavar="N", help="also run a corpus of N trace files")
    p.add_argument("--json", action="store_true")
    p.add_argument("--session", action="store_true", help="time a live Session (recording, redacting) instead")
    p.add_argument("--integrations", action="store_true",
                   help="time each framework integration against its framework's own scripted run instead")
    p.add_argument("--import", dest="import_paths", nargs="*", metavar="PATH",
                   help="time the importers on these folders or tarballs instead (default: the shared corpus)")


def run(args: argparse.Namespace) -> int:
    from ..bench._suite import run_suite, suite_json, suite_table  # the generator and the timers
    from ..buildinfo import build_name, compiled_modules
    from ..runtime._policy import ALIASES, preset_names, resolve_policy

    if args.import_paths is not None:
        from ..importers.bench import DEFAULT_PATHS, import_bench

        timings = import_bench(args.import_paths or list(DEFAULT_PATHS))
        out(table_text(timings, ["corpus", "files", "runs", "steps", "seconds", "runs/s"]))
        return EXIT_OK
    if args.integrations:
        from ..bench._integrations import integration_rows

        rows = integration_rows(repeat=max(args.repeat, 1))
        if args.json:
            print_json(suite_json(rows, repeat=args.repeat, build=build_name(), compiled=list(compiled_modules())))
        else:
            out(suite_table(rows))
            out("× baseline here: the guarded run's cost over the same run without the integration")
            for row in rows:
                if "skipped" in row.extra:
                    out(f"{row.item}: {row.extra['skipped']}")
                beside = [f"{k[:-len('_ratio')].replace('_', ' ')} {v:.2f}×" for k, v in row.extra.items()
                          if k.endswith("_ratio")]
                if beside:
                    out(f"{row.item.split(',')[0]}, the same run under {', '.join(beside)} (each over unguarded)")
        return EXIT_OK
    names = args.policy or [n for n in preset_names() if n not in ALIASES]
    policies = [resolve_policy(n) for n in names]
    if args.session:
        from ..bench._replay import bench_table, run_bench

        out(bench_table(run_bench(policies, events=args.events, seed=args.seed, session=True)))
        out(f"{args.events} events per preset fed live through a recording Session, seed {args.seed}")
        return EXIT_OK
    rows = run_suite(policies, events=args.events, repeat=args.repeat, seed=args.seed, stream=args.stream,
                     corpus=args.corpus)
    if args.json:
        print_json(suite_json(rows, events=args.events, repeat=args.repeat, seed=args.seed,
                              build=build_name(), compiled=list(compiled_modules())))
    else:
        out(suite_table(rows))
        for state in sorted({str(r.extra["bytecode_state"]) for r in rows if "bytecode_state" in r.extra}):
            out(f"pytest rows: {state}")
        out(f"{args.events} events per replay row, min and median of {args.repeat} repeats, seed {args.seed}; "
            f"build: {build_name()}")
    return EXIT_OK
