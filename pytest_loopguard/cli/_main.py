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
    loopguard scan [PATHS...] [--since D] [--agent A]      the agents' session logs here and their loops (docs/scan.md)
    loopguard view PATHS [--policy P ...] [-o FILE]        a page to read runs step by step (docs/reports.md)
    loopguard corpus init|pack|verify|info|unpack|list     corpus packages (docs/corpora.md)

Each subcommand is one module, `cli/_NAME.py` (or the module its `Command` names), with one interface
(`CommandModule`): `add_arguments(parser)` and `run(args) -> int`. `COMMANDS` names them, with the line
`--help` shows for each. A command's module is imported only when the command is named, and it imports only
what defining its arguments needs (its `run` imports the rest): `loopguard --help` loads no command,
`loopguard run` no other command.

Bad input (a malformed trace, an unknown preset) is reported in one line per bad file without a traceback;
the other files still run. Exit status: 0 ok, 1 an expectation failed, 2 some input was bad (this wins over
1: a corpus with a bad file is not a passing corpus) or the command needs the `pytest` extra, 3 an internal error
(a bug in loopguard, never bad input, or a `run -j` worker process killed), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any, Final, NamedTuple, NoReturn, Protocol, cast

from .. import __version__
from ..errors import LoopguardError, MissingExtraError
from ._common import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, err, error, tolerant_streams

__all__ = ["COMMANDS", "Command", "CommandModule", "build_parser", "main"]


class CommandModule(Protocol):
    """What the module of a `loopguard` subcommand defines."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...  # the exit status


class Command(NamedTuple):
    """A `loopguard` subcommand: its name, the line `loopguard --help` shows for it (also its description), and
    its module's name when that is not `_NAME` (`corpus`: `_corpus` is the corpus runner `run` uses)."""

    name: str
    help: str
    module_name: str = ""

    def module(self) -> CommandModule:
        """`cli/_NAME.py` (or `module_name`), imported on first use."""
        return cast(CommandModule, import_module(f"{__package__}.{self.module_name or '_' + self.name}"))


# in the order `loopguard --help` lists them
COMMANDS: Final = (
    Command("run", "replay every trace under PATHS and check its expectations (exit 1 on a mismatch)"),
    Command("replay", "print one trace's verdict timeline"),
    Command("validate", "load every trace file under PATHS and report every bad one"),
    Command("presets", "print presets' settings side by side"),
    Command("matrix", "first intervention of each trace under each policy"),
    Command("simulate", "run a scenario (mode: simulate) and record the trace it produces"),
    Command("diff", "replay traces under two policies and show interventions that moved (exit 1 when any did)"),
    Command("schema", "print the JSON Schema of the trace format (for editors and validators)"),
    Command("import", "convert agent logs (SWE-agent, mini-swe-agent, OpenHands ...) into traces"),
    Command("bench", "replay speed, live checks, construction and loading, as ratios to a bare loop"),
    Command("eval", "score policies on labelled real runs: loops caught, false stops, noise"),
    Command("scan", "find the coding agents' session logs on this machine and the loops in them"),
    Command("serve", "the Guard behind the guard protocol on stdin/stdout, for agents in any language"),
    Command("conform", "replay traces through an external guard and compare its verdicts step by step"),
    Command("view", "write a page to read runs step by step: calls, verdicts, engine state, loops, policies"),
    Command("corpus", "corpus packages: init, pack, verify, info, unpack, list (a named, checksummed set of runs)",
            "_corpora"),
)

if TYPE_CHECKING:  # mypy checks that every command's module has the interface; nothing is imported here
    from . import (
        _bench,
        _conform,
        _corpora,
        _diff,
        _eval,
        _import,
        _matrix,
        _presets,
        _replay,
        _run,
        _scan,
        _schema,
        _serve,
        _simulate,
        _validate,
        _view,
    )

    _MODULES: tuple[CommandModule, ...] = (
        _run, _replay, _validate, _presets, _matrix, _simulate, _diff, _schema, _import, _bench, _eval, _scan,
        _serve, _conform, _view, _corpora,
    )
    _SubParsersAction = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    _SubParsersAction = argparse._SubParsersAction


class _Parser(argparse.ArgumentParser):
    """argparse with the one error prefix: a subcommand's usage error reads `loopguard: error:` too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"loopguard: error: {message}\n")


class _Unbuilt:
    """A subcommand's parser before its name is met: the options to build it with."""

    __slots__ = ("options",)

    def __init__(self, **options: Any) -> None:
        self.options = options


class _Commands(_SubParsersAction):
    """The subcommands' action. A subcommand's parser is built, and its module imported to define its arguments,
    when argparse meets its name: a parse builds one (`loopguard --help` none), where argparse would build every
    one (each ~0.8M instructions, most of it gettext looking for translations). Every name and help line is
    there from the start, for `--help` and for the error naming a command that does not exist."""

    def __init__(self, option_strings: Sequence[str], prog: str, parser_class: type[argparse.ArgumentParser],
                 **kwargs: Any) -> None:
        super().__init__(option_strings, prog, _Unbuilt, **kwargs)  # type: ignore[arg-type]  # built in __call__
        self.build = parser_class
        self.commands: dict[str, Command] = {}

    def add_command(self, command: Command) -> None:
        self.add_parser(command.name, help=command.help, description=command.help)
        self.commands[command.name] = command

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        name = values[0]  # the command's name (argparse has checked it), then its arguments
        unbuilt = self.choices[name]
        if isinstance(unbuilt, _Unbuilt):
            built = self.build(**unbuilt.options)
            self.commands[name].module().add_arguments(built)
            self.choices[name] = built
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    """The `loopguard` parser: every subcommand on it, each one built when it is named."""
    parser = _Parser(
        prog="loopguard", description="Replay agent tool-call traces through loop policies and check the verdicts."
    )
    parser.add_argument("--version", action="version", version=f"loopguard {__version__}")
    commands = cast(_Commands, parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                                     action=_Commands))
    for command in COMMANDS:
        commands.add_command(command)
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
        # the guard processes this command starts share the CPU of the thread that talks to them (three times
        # the requests per second: engines/_pipe.py); the command's own processes only, never a caller's
        from ..core._machine import GUARD_CPU_ENV

        os.environ.setdefault(GUARD_CPU_ENV, "same")
    command = next(c for c in COMMANDS if c.name == args.command)
    try:
        return command.module().run(args)
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
        if (missing := MissingExtraError.of(exc, f"`loopguard {args.command}`")) is not None:
            error(missing)  # a slim install (no `pytest` extra): the tables, the simulators' pages
            return EXIT_BAD_INPUT
        err(f"loopguard: internal error (please report it): {type(exc).__name__}: {str(exc)[:200]}")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
