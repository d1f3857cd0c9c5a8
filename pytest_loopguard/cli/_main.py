"""The `loopguard` command: replay a corpus, show one timeline, validate files, compare presets and policies.

    loopguard run [PATHS...] [--policy P] [--json] [-j N] replay and check expectations (exit 1 on a mismatch);
                                                          PATHS default to the loopguard_paths ini option
    loopguard replay FILE[::NAME] [--policy P] [--json]    one trace's verdict timeline
    loopguard validate PATHS...                            load every file, report every bad one
    loopguard presets [NAMES...] [--json]                  presets' settings side by side
    loopguard matrix PATHS --policies a,b [--json]         first intervention per trace and policy
    loopguard simulate FILE [-o OUT] [--policy P] [--json] run a scenario and record its trace
    loopguard diff PATHS --before P --after Q [--json|--markdown]  interventions that moved between two policies
    loopguard schema [-o OUT]                              the trace format's JSON Schema
    loopguard import SRC... -o OUT [--from F]              agent logs -> one trace per run (docs/import.md)
    loopguard bench [--events N] [--repeat R] [--stream N] [--corpus N] [--json]   speed, side by side
    loopguard eval PATHS [--labels F] [--policy P...]      score policies on labelled real runs (eval_cmd)

Bad input (a malformed trace, an unknown preset) is reported in one line per bad file without a traceback;
the other files still run. Exit status: 0 ok, 1 an expectation failed, 2 some input was bad (this wins over
1: a corpus with a bad file is not a passing corpus) or the command needs the `pytest` extra, 3 an internal error
(a bug in loopguard, never bad input, or a `run -j` worker process killed), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TextIO

from .. import __version__
from ..core._expect import Mismatch, check
from ..core._model import ReplayResult, Trace
from ..engines import ENGINE_ORDER, registry
from ..errors import LoopguardError, LoopguardWarning, MissingExtraError, NotATraceError, PolicyError, TraceError
from ..io._format import dump
from ..io._runner import execute, load_runnable, simulate, validate_runnable
from ..report._console import emit, fit_table, progress
from ..report._tables import json_entry, mismatch_table, shorten, summary_table, timeline_table
from ..runtime._policy import ALIASES, Policy, preset_names, resolve_policy
from ..runtime._policy_option import parse_policy_option
from ._corpus import run_paths
from ._jobs import WorkerLost, parse_jobs, run_jobs

__all__ = ["main"]

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # what a shell reports for a command Ctrl-C stopped (128 + SIGINT)
OFF = "—"  # an engine the preset does not enable
SETTING_WIDTH = 28  # long lists (marker words, tool names) are cut so presets fit side by side


# ---- output helpers --------------------------------------------------------------------------------
def _out(text: str = "") -> None:
    emit(text, sys.stdout)  # coloured on a terminal with rich, plain otherwise


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _error(text: object) -> None:
    """One line on stderr with the prefix every command (and argparse) uses for errors."""
    _err(f"loopguard: error: {text}")


def _json(value: Any, stream: TextIO | None = None) -> None:
    # Verdict data may hold tuples or other plain values; str() keeps the output valid JSON. Non-ASCII text is
    # escaped when the stream cannot encode it (PYTHONIOENCODING=ascii), so JSON stays exact either way.
    out = stream or sys.stdout
    utf = (getattr(out, "encoding", None) or "utf-8").lower().replace("-", "").startswith("utf")
    print(json.dumps(value, indent=2, ensure_ascii=not utf, default=str), file=out)


def _tolerant_streams() -> None:
    """A terminal that cannot show `…` or `—` gets `?` instead of a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


@contextmanager
def _trace_warnings() -> Iterator[None]:
    """Silence Python's warning printer for LoopguardWarning: each trace carries its warnings, shown once."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoopguardWarning)
        yield


def _report_warnings(traces: Sequence[Trace]) -> None:
    for trace in traces:
        for text in trace.warnings:
            _err(f"loopguard: warning: {text}")


def _validate(paths: Sequence[str]) -> tuple[list[Trace], list[TraceError]]:
    """`validate_runnable`, each trace's warnings shown once, and a line per non-trace file a folder held."""
    skipped: list[NotATraceError] = []
    with _trace_warnings():
        traces, errors = validate_runnable(paths, skipped=skipped)
    for note in skipped:
        _err(_skipped(note))
    _report_warnings(traces)
    return traces, errors


def _skipped(note: NotATraceError) -> str:
    from ..importers.recognise import skip_note  # the importers load only when a skipped file is reported

    return f"loopguard: skipped: {skip_note(str(note.file), Path(str(note.file)), note)}"


def _report_errors(errors: Sequence[LoopguardError]) -> None:
    for error in errors:
        _error(error)
    if errors:
        n = len(errors)
        _err(f"loopguard: {n} bad input{'s' if n != 1 else ''}")


def _as_trace_error(exc: LoopguardError, trace: Trace) -> TraceError:
    # e.g. a scenario the simulators reject or a policy file that went bad: a bad input like a load error
    if isinstance(exc, TraceError):
        return exc.located(file=trace.path)
    return TraceError(str(exc), file=trace.path)


def _load_one(spec: str) -> Trace:
    """One trace from `FILE` or `FILE::NAME` (a file with several traces needs the name)."""
    path, _, name = spec.partition("::")
    with _trace_warnings():
        traces = load_runnable(path)
    if name:
        chosen = [t for t in traces if t.name == name]
        if not chosen:
            known = ", ".join(t.name for t in traces)
            raise TraceError(f"no trace named {name!r}; the file holds: {known}", file=path)
        traces = chosen
    elif len(traces) > 1:
        known = ", ".join(t.name for t in traces)
        raise TraceError(f"the file holds {len(traces)} traces ({known}); pick one with FILE::NAME", file=path)
    _report_warnings(traces)
    return traces[0]


def _policy_type(text: str) -> str | dict[str, Any]:
    """argparse type of `--policy`: a preset, a policy file or an inline mapping `{preset: x, ...}`."""
    try:
        return parse_policy_option(text)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _policy_arg(spec: str | dict[str, Any] | None) -> Policy | None:
    """The --policy option resolved once (so a bad name fails before any replay), or None."""
    return resolve_policy(spec) if spec is not None else None


def _first_intervention(result: ReplayResult) -> str:
    step = result.first_intervention()
    if step is None:
        return OFF
    reason = next((v.reason for v in step.verdicts if v.action == step.action), "")
    return f"step {step.index}: {step.action} {reason}".rstrip()


# ---- subcommands -----------------------------------------------------------------------------------
def _cmd_run(args: argparse.Namespace) -> int:
    policy = _policy_arg(args.policy)
    results: list[tuple[ReplayResult, list[Mismatch]]] = []
    errors: list[LoopguardError] = []
    skipped: list[NotATraceError] = []
    if args.paths:
        paths = args.paths
    else:
        from ._inifile import trace_paths  # reads pytest's ini files (tomllib): only when no PATHS are given

        paths = trace_paths(Path.cwd())
    timelines = bool(args.coverage or args.report)  # coverage and reports read every step's verdicts
    if args.jobs > 1:  # the same items in the same order from several processes (run_jobs)
        items = run_jobs(paths, policy, args.policy, args.jobs, skipped=skipped, stream=not timelines)
    else:
        items = run_paths(paths, policy, skipped=skipped, stream=not timelines)
    with _trace_warnings():  # each file is replayed as it is read (JSONL streamed): memory stays flat
        for item in progress(items, "replaying"):
            if isinstance(item, LoopguardError):
                errors.append(item)
            else:
                results.append(item)
                _report_warnings([item[0].trace])
    for note in skipped:
        _err(_skipped(note))
    if args.json:
        _json([{**json_entry(r, m), "mismatches": [str(x) for x in m]} for r, m in results])
    else:
        if results:
            _out(summary_table(results))
        for result, mismatches in results:
            if mismatches:
                _out()
                _out(f"{result.trace.path}::{result.trace.name}")
                _out(mismatch_table(result, mismatches))
        failed = sum(1 for _, m in results if m)
        _out()
        _out(f"loopguard: {len(results)} traces replayed, {failed} mismatched")
    if args.coverage or args.report:
        from ..report._run_report import run_report  # report and coverage rendering stay off the plain run's path

        run_report(args, results, policy)
    _report_errors(errors)
    if errors:
        return EXIT_BAD_INPUT
    return EXIT_MISMATCH if any(m for _, m in results) else EXIT_OK


def _cmd_replay(args: argparse.Namespace) -> int:
    from . import _replay as replay_cmd  # `run`, the command a corpus runs most, needs neither it nor tabulate

    if replay_cmd.streams(args) and (status := replay_cmd.run(args, _out, _err)) is not None:
        return status  # a JSONL trace: printed as it is replayed, in bounded memory
    trace = _load_one(args.file)
    result = execute(trace, args.policy)
    if args.html:
        from ..report._run_report import replay_html

        replay_html(args.html, result, args.policy)
    if args.json:
        _json(result.to_dict())
        return EXIT_OK
    _out(timeline_table(result))
    for line in replay_cmd.mismatch_lines(check(result)):
        _out(line)
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    traces, errors = _validate(args.paths)
    for error in errors:
        _error(error)
    files = len({t.path for t in traces})
    _out(f"{len(traces)} traces in {files} files ok, {len(errors)} bad")
    return EXIT_BAD_INPUT if errors else EXIT_OK


def _setting_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_setting_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_setting_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def presets_table(policies: Sequence[Policy]) -> str:
    """Rows `engine.setting`, one column per policy; `—` where the policy does not enable the engine."""
    known = registry()
    engines = [e for e in (*ENGINE_ORDER, *sorted(known)) if any(p.enabled(e) for p in policies)]
    rows: list[list[str]] = []
    for engine in dict.fromkeys(engines):
        for f in dataclasses.fields(known[engine].Settings):
            row = [f"{engine}.{f.name}"]
            for p in policies:
                value = _setting_text(getattr(p.settings(engine), f.name)) if p.enabled(engine) else OFF
                row.append(shorten(value, SETTING_WIDTH))
            rows.append(row)
    # Engines classify calls by the policy's tool table, so its size differs between presets too.
    rows.append(["tools (rules)", *(str(len(p.tools)) for p in policies)])
    return fit_table(rows, ["setting", *(p.name for p in policies)])


def _cmd_presets(args: argparse.Namespace) -> int:
    names = args.names or [n for n in preset_names() if n not in ALIASES]
    policies = [resolve_policy(n) for n in names]
    if args.json:
        _json({p.name: p.to_dict() for p in policies})
    else:
        _out(presets_table(policies))
    return EXIT_OK


def _cmd_matrix(args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.policies.split(",") if n.strip()]
    if not names:
        raise TraceError("--policies needs at least one preset or policy file", field="--policies")
    policies = [resolve_policy(n) for n in names]
    traces, errors = _validate(args.paths)
    table: list[tuple[Trace, list[ReplayResult]]] = []
    for trace in progress(traces, "replaying"):
        try:
            table.append((trace, [execute(trace, p) for p in policies]))
        except LoopguardError as exc:
            errors.append(_as_trace_error(exc, trace))
    if args.json:
        _json([
            {
                "trace": trace.name,
                "file": trace.path,
                "policies": {
                    name: {
                        "outcome": r.outcome,
                        "first_intervention": (
                            None if (s := r.first_intervention()) is None
                            else {"index": s.index, "action": s.action,
                                  "reason": next((v.reason for v in s.verdicts if v.action == s.action), None)}
                        ),
                    }
                    for name, r in zip(names, results, strict=True)
                },
            }
            for trace, results in table
        ])
    else:
        rows = [[trace.name, *(_first_intervention(r) for r in results)] for trace, results in table]
        _out(fit_table(rows, ["trace", *names]))
    _report_errors(errors)
    return EXIT_BAD_INPUT if errors else EXIT_OK


def _cmd_simulate(args: argparse.Namespace) -> int:
    trace = _load_one(args.file)
    if trace.mode != "simulate":
        raise TraceError("not a scenario (a scenario has `mode: simulate`); use `loopguard replay`",
                         file=trace.path, field="mode")
    simulation = simulate(trace, args.policy)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        dump(simulation.recorded, args.output)
    result: ReplayResult = simulation.result
    if args.json:
        _json(result.to_dict())
    else:
        _out(timeline_table(result))
        if args.output:
            _out(f"recorded trace written to {args.output}")
    return EXIT_OK


def _cmd_bench(args: argparse.Namespace) -> int:
    from ..bench._suite import run_suite, suite_json, suite_table  # keeps the generator off other commands' path
    from ..buildinfo import build_name, compiled_modules

    if args.import_paths is not None:
        from tabulate import tabulate

        from ..importers.bench import DEFAULT_PATHS, import_bench

        timings = import_bench(args.import_paths or list(DEFAULT_PATHS))
        _out(tabulate(timings, headers=["corpus", "files", "runs", "steps", "seconds", "runs/s"], tablefmt="simple"))
        return EXIT_OK
    names = args.policy or [n for n in preset_names() if n not in ALIASES]
    policies = [resolve_policy(n) for n in names]
    if args.session:
        from ..bench._replay import bench_table, run_bench

        _out(bench_table(run_bench(policies, events=args.events, seed=args.seed, session=True)))
        _out(f"{args.events} events per preset fed live through a recording Session, seed {args.seed}")
        return EXIT_OK
    rows = run_suite(policies, events=args.events, repeat=args.repeat, seed=args.seed, stream=args.stream,
                     corpus=args.corpus)
    if args.json:
        _json(suite_json(rows, events=args.events, repeat=args.repeat, seed=args.seed,
                         build=build_name(), compiled=list(compiled_modules())))
    else:
        _out(suite_table(rows))
        for state in sorted({str(r.extra["bytecode_state"]) for r in rows if "bytecode_state" in r.extra}):
            _out(f"pytest rows: {state}")
        _out(f"{args.events} events per replay row, min and median of {args.repeat} repeats, seed {args.seed}; "
             f"build: {build_name()}")
    return EXIT_OK


def _cmd_diff(args: argparse.Namespace) -> int:
    from . import _diff as diff_cmd

    status, errors = diff_cmd.run(args, _validate, execute, _out)
    _report_errors(errors)
    return EXIT_BAD_INPUT if errors else status  # a bad input wins over "moved", as in `run`


def _cmd_schema(args: argparse.Namespace) -> int:
    from ..io._schema import schema_text

    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(schema_text())
    else:
        sys.stdout.write(schema_text())
    return EXIT_OK


def _cmd_import(args: argparse.Namespace) -> int:
    from . import _import as import_cmd

    return import_cmd.run(args)


# ---- parser ----------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse with the one error prefix: a subcommand's usage error reads `loopguard: error:` too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"loopguard: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _jobs_type(text: str) -> int:
    try:
        return parse_jobs(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `loopguard` parser; for `run`, `replay` and `validate` (`command`) without the diff, import and eval
    commands, whose modules (and what they import) a replay never needs: start-up is part of every run."""
    lean = command in ("run", "replay", "validate")
    parser = _Parser(
        prog="loopguard", description="Replay agent tool-call traces through loop policies and check the verdicts."
    )
    parser.add_argument("--version", action="version", version=f"loopguard {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        return p

    p = add("run", _cmd_run, "replay every trace under PATHS and check its expectations (exit 1 on a mismatch)")
    p.add_argument("paths", nargs="*", metavar="PATHS",
                   help="files or folders (default: the loopguard_paths ini option, as pytest reads it; else traces)")
    p.add_argument("--policy", type=_policy_type,
                   help="replay every trace under this preset, policy file or inline {mapping} instead of its own")
    p.add_argument("--json", action="store_true", help="print a JSON list, one entry per trace")
    p.add_argument("--coverage", action="store_true", help="print rule coverage (reason codes no trace triggers)")
    p.add_argument("--report", metavar="PATH", help="write a report file: .json, .md or .html")
    p.add_argument("-j", "--jobs", type=_jobs_type, default=1, metavar="N",
                   help="replay on N processes, output identical to one (0 or auto: one per CPU; default 1)")

    p = add("replay", _cmd_replay, "print one trace's verdict timeline")
    p.add_argument("file", metavar="FILE", help="a trace file; FILE::NAME picks one trace of several")
    p.add_argument("--policy", type=_policy_type,
                   help="a preset, policy file or inline {mapping} (default: the trace's own)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--html", metavar="OUT", help="also write the timeline as a self-contained HTML page to OUT")

    p = add("validate", _cmd_validate, "load every trace file under PATHS and report every bad one")
    p.add_argument("paths", nargs="+", metavar="PATHS")

    p = add("presets", _cmd_presets, "print presets' settings side by side")
    p.add_argument("names", nargs="*", metavar="NAMES", help="presets to show (default: all)")
    p.add_argument("--json", action="store_true")

    p = add("matrix", _cmd_matrix, "first intervention of each trace under each policy")
    p.add_argument("paths", nargs="+", metavar="PATHS")
    p.add_argument("--policies", required=True, help="comma-separated presets or policy files")
    p.add_argument("--json", action="store_true")

    p = add("simulate", _cmd_simulate, "run a scenario (mode: simulate) and record the trace it produces")
    p.add_argument("file", metavar="FILE", help="a scenario file; FILE::NAME picks one of several")
    p.add_argument("-o", "--output", metavar="OUT", help="write the recorded trace here (.yaml, .json, .jsonl)")
    p.add_argument("--policy", type=_policy_type,
                   help="a preset, policy file or inline {mapping} (default: the scenario's own)")
    p.add_argument("--json", action="store_true")

    if not lean:
        from . import _diff as diff_cmd
        from . import _import as import_cmd

        p = add("diff", _cmd_diff,
                "replay traces under two policies and show interventions that moved (exit 1 when any did)")
        diff_cmd.add_arguments(p)

    p = add("schema", _cmd_schema, "print the JSON Schema of the trace format (for editors and validators)")
    p.add_argument("-o", "--output", metavar="OUT", help="write it to OUT instead")

    if not lean:
        p = add("import", _cmd_import, "convert agent logs (SWE-agent, mini-swe-agent, OpenHands ...) into traces")
        import_cmd.add_arguments(p)

    p = add("bench", _cmd_bench, "replay speed, live checks, construction and loading, as ratios to a bare loop")
    p.add_argument("--events", type=_positive_int, default=5000, help="events per replay row (default 5000)")
    p.add_argument("--policy", action="append", type=_policy_type, metavar="P",
                   help="a preset, policy file or inline {mapping}; repeatable")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3, help="repeats per row; min and median are shown (default 3)")
    p.add_argument("--stream", type=int, default=0, metavar="N", help="also run one N-event JSONL file")
    p.add_argument("--corpus", type=int, default=0, metavar="N", help="also run a corpus of N trace files")
    p.add_argument("--json", action="store_true")
    p.add_argument("--session", action="store_true", help="time a live Session (recording, redacting) instead")
    p.add_argument("--import", dest="import_paths", nargs="*", metavar="PATH",
                   help="time the importers on these folders or tarballs instead (default: the shared corpus)")

    if not lean:
        from ._eval import add_parser as add_eval  # the command's body lives in its own module

        add_eval(add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `loopguard` command; returns the exit status (0 ok, 1 mismatch, 2 bad input, 3 internal error)."""
    _tolerant_streams()
    parser = _parser(next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on usage errors and --help; callers want a status
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    if argv is None:
        # the process's own command (not a call from a program or a test, which pass argv): what the imports
        # made lives as long as the process, so the collector's full passes need not walk it again (~1% of a
        # 1,000-file run, measured with callgrind)
        gc.freeze()
    try:
        status: int = args.func(args)
    except LoopguardError as exc:
        _error(exc)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # output piped into `head`: nothing left to say
        return EXIT_OK
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback (`run -j` has ended its workers by now)
        _err("loopguard: interrupted")
        return EXIT_INTERRUPTED
    except WorkerLost as exc:  # killed (out of memory?) rather than a bug: no "please report it"
        _error(exc)
        return EXIT_INTERNAL
    except OSError as exc:  # e.g. -o into a folder that does not exist
        _error(f"{exc.filename or ''}: {exc.strerror}")
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug, not bad input: never exit 1, which means "an expectation failed"
        if (missing := MissingExtraError.of(exc, f"`loopguard {args.command}`")) is not None:
            _error(missing)  # a slim install (no `pytest` extra): the tables, the simulators' pages
            return EXIT_BAD_INPUT
        _err(f"loopguard: internal error (please report it): {type(exc).__name__}: {str(exc)[:200]}")
        return EXIT_INTERNAL
    return status


if __name__ == "__main__":
    sys.exit(main())
