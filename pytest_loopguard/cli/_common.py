"""What every `loopguard` subcommand shares: exit statuses, output and error lines, `--policy`, trace warnings.

The parser and every command module import this one before any command runs (`loopguard NAME --help` loads
little else), so it imports nothing heavy at the top: what loads traces or policies, or lays out a table,
imports its modules when called, by then the command is running and needs them.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, TextIO

from ..errors import LoopguardError, LoopguardWarning, PolicyError, TraceError
from ..report._console import emit

if TYPE_CHECKING:
    from ..core._model import Trace
    from ..errors import NotATraceError
    from ..runtime._policy import Policy

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_MISMATCH",
    "EXIT_OK",
    "OFF",
    "as_trace_error",
    "err",
    "error",
    "load_one",
    "out",
    "policy_arg",
    "policy_type",
    "print_json",
    "report_errors",
    "report_warnings",
    "skipped_line",
    "table_text",
    "tolerant_streams",
    "trace_warnings",
    "validate_traces",
]

EXIT_OK: Final = 0
EXIT_MISMATCH: Final = 1
EXIT_BAD_INPUT: Final = 2
EXIT_INTERNAL: Final = 3
EXIT_INTERRUPTED: Final = 130  # what a shell reports for a command Ctrl-C stopped (128 + SIGINT)
OFF: Final = "—"  # a cell with nothing in it: an engine a preset does not enable, a policy that never intervened


# ---- output ----------------------------------------------------------------------------------------
def out(text: str = "") -> None:
    emit(text, sys.stdout)  # coloured on a terminal with rich, plain otherwise


def err(text: str) -> None:
    print(text, file=sys.stderr)


def error(text: object) -> None:
    """One line on stderr with the prefix every command (and argparse) uses for errors; a newline in a file
    name or in a library's message is written as `\\n`, so the error stays one line."""
    from ..core._safeload import one_line  # the loader is imported by then: no cost at start-up

    err(f"loopguard: error: {one_line(str(text))}")


def print_json(value: Any, stream: TextIO | None = None) -> None:
    # Verdict data may hold tuples or other plain values; str() keeps the output valid JSON. Non-ASCII text is
    # escaped when the stream cannot encode it (PYTHONIOENCODING=ascii), so JSON stays exact either way.
    stream = stream or sys.stdout
    utf = (getattr(stream, "encoding", None) or "utf-8").lower().replace("-", "").startswith("utf")
    print(json.dumps(value, indent=2, ensure_ascii=not utf, default=str), file=stream)


def table_text(rows: Sequence[Sequence[Any]], headers: Sequence[str], tablefmt: str = "simple",
               **options: Any) -> str:
    """`rows` laid out by tabulate: every table a command lays out itself comes from here (the others from
    `report._console.fit_table`)."""
    from tabulate import tabulate  # loads with the first table: `run` and `--help` never need it

    text: str = tabulate(rows, headers=headers, tablefmt=tablefmt, **options)
    return text


def tolerant_streams() -> None:
    """A terminal that cannot show `…` or `—` gets `?` instead of a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


# ---- bad input and warnings ------------------------------------------------------------------------
def report_errors(errors: Sequence[LoopguardError]) -> None:
    for problem in errors:
        error(problem)
    if errors:
        n = len(errors)
        err(f"loopguard: {n} bad input{'s' if n != 1 else ''}")


def as_trace_error(exc: LoopguardError, trace: Trace) -> TraceError:
    # e.g. a scenario the simulators reject or a policy file that went bad: a bad input like a load error
    if isinstance(exc, TraceError):
        return exc.located(file=trace.path)
    return TraceError(str(exc), file=trace.path)


@contextmanager
def trace_warnings() -> Iterator[None]:
    """Silence Python's warning printer for LoopguardWarning: each trace carries its warnings, shown once."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoopguardWarning)
        yield


def report_warnings(traces: Sequence[Trace]) -> None:
    for trace in traces:
        for text in trace.warnings:
            err(f"loopguard: warning: {text}")


def skipped_line(note: NotATraceError) -> str:
    """The line naming a file a folder held that is not a trace (an agent log, say, with how to import it)."""
    from pathlib import Path

    from ..importers.recognise import skip_note  # the importers load only when a skipped file is reported

    # the line pytest's summary prints too (docs/import.md shows it), so every command says it one way
    return f"loopguard: {skip_note(str(note.file), Path(str(note.file)), note)}"


# ---- loading traces --------------------------------------------------------------------------------
def validate_traces(paths: Sequence[str]) -> tuple[list[Trace], list[TraceError]]:
    """`validate_runnable`, each trace's warnings shown once, and a line per non-trace file a folder held."""
    from ..io._runner import validate_runnable

    skipped: list[NotATraceError] = []
    with trace_warnings():
        traces, errors = validate_runnable(paths, skipped=skipped)
    for note in skipped:
        err(skipped_line(note))
    report_warnings(traces)
    return traces, errors


def load_one(spec: str) -> Trace:
    """One trace from `FILE` or `FILE::NAME` (a file with several traces needs the name)."""
    from ..io._runner import load_runnable

    path, _, name = spec.partition("::")
    with trace_warnings():
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
    report_warnings(traces)
    return traces[0]


# ---- --policy --------------------------------------------------------------------------------------
def policy_type(text: str) -> str | dict[str, Any]:
    """argparse type of `--policy`: a preset, a policy file or an inline mapping `{preset: x, ...}`."""
    from ..runtime._policy_option import parse_policy_option  # YAML, for an inline mapping

    try:
        return parse_policy_option(text)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def policy_arg(spec: str | dict[str, Any] | None) -> Policy | None:
    """The --policy option resolved once (so a bad name fails before any replay), or None."""
    from ..runtime._policy import resolve_policy

    return resolve_policy(spec) if spec is not None else None
