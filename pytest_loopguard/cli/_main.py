"""The `loopguard` command: the parser built from the subcommands' modules, and the dispatch to one of them.

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
    loopguard eval PATHS [--labels F] [--policy P...]      score policies on labelled real runs (docs/eval.md)

Each subcommand is one module (`_run`, `_replay` ... `_eval`) with one interface, `Command`: its name, its
one-line help, `add_arguments(parser)` and `run(args) -> int`. A command module imports only what defining
its arguments needs; `run` imports the rest, so building the whole parser costs no command its start-up.

Bad input (a malformed trace, an unknown preset) is reported in one line per bad file without a traceback;
the other files still run. Exit status: 0 ok, 1 an expectation failed, 2 some input was bad (this wins over
1: a corpus with a bad file is not a passing corpus), 3 an internal error (a bug in loopguard, never bad input,
or a `run -j` worker process killed), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from typing import Final, NoReturn, Protocol

from .. import __version__
from ..errors import LoopguardError
from . import _bench, _diff, _eval, _import, _matrix, _presets, _replay, _run, _schema, _simulate, _validate
from ._common import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, err, error, tolerant_streams

__all__ = ["COMMANDS", "Command", "build_parser", "main"]


class Command(Protocol):
    """A `loopguard` subcommand: a module with these four names."""

    @property
    def NAME(self) -> str: ...  # upper case: in a command's module it is a constant

    @property
    def HELP(self) -> str: ...  # the line `loopguard --help` shows, and the command's description

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...  # the exit status


# in the order `loopguard --help` lists them
COMMANDS: Final[tuple[Command, ...]] = (
    _run, _replay, _validate, _presets, _matrix, _simulate, _diff, _schema, _import, _bench, _eval,
)


class _Parser(argparse.ArgumentParser):
    """argparse with the one error prefix: a subcommand's usage error reads `loopguard: error:` too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"loopguard: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The `loopguard` parser, every subcommand's arguments on it (none of their implementations imported)."""
    parser = _Parser(
        prog="loopguard", description="Replay agent tool-call traces through loop policies and check the verdicts."
    )
    parser.add_argument("--version", action="version", version=f"loopguard {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_arguments(sub.add_parser(command.NAME, help=command.HELP, description=command.HELP))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `loopguard` command; returns the exit status (0 ok, 1 mismatch, 2 bad input, 3 internal error)."""
    tolerant_streams()
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits on usage errors and --help; callers want a status
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    if argv is None:
        # the process's own command (not a call from a program or a test, which pass argv): what the imports
        # made lives as long as the process, so the collector's full passes need not walk it again (~1% of a
        # 1,000-file run, measured with callgrind)
        gc.freeze()
    command = next(c for c in COMMANDS if args.command == c.NAME)
    try:
        return command.run(args)
    except LoopguardError as exc:
        error(exc)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # output piped into `head`: nothing left to say
        return EXIT_OK
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback (`run -j` has ended its workers by now)
        err("loopguard: interrupted")
        return EXIT_INTERRUPTED
    except OSError as exc:  # e.g. -o into a folder that does not exist
        error(f"{exc.filename or ''}: {exc.strerror}")
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug, not bad input: never exit 1, which means "an expectation failed"
        err(f"loopguard: internal error (please report it): {type(exc).__name__}: {str(exc)[:200]}")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
