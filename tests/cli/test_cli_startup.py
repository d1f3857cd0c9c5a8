"""`loopguard` starts lean: `--help` loads no command's module, `loopguard NAME --help` only NAME's (which
defines its arguments without its implementation), `run` none of the other commands' modules, and each
command still loads what it needs when it runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(cli.__file__).parent
COMMAND_NAMES = ["run", "replay", "validate", "presets", "matrix", "simulate", "diff", "schema", "import", "bench",
                 "eval", "scan", "serve", "conform", "view", "corpus"]


def module_of(name: str) -> str:
    """A command's module: `cli/_NAME.py`, or the one its `Command` names (`corpus`: `_corpus` is run's runner)."""
    command = next(c for c in cli.COMMANDS if c.name == name)
    return f"pytest_loopguard.cli.{command.module_name or '_' + name}"


# What each command alone needs: loaded when it runs (see test_each_command_loads_its_own_modules_when_it_runs),
# never by another command's start-up.
OWN = {
    "run": ("pytest_loopguard.cli._corpus",),
    "replay": ("pytest_loopguard.cli._timeline",),
    "diff": ("pytest_loopguard.cli._policy_diff", "pytest_loopguard.eval._diff", "pytest_loopguard.report._markdown"),
    "schema": ("pytest_loopguard.io._schema",),
    "import": ("pytest_loopguard.cli._import_logs", "pytest_loopguard.importers", "pytest_loopguard.live._redact"),
    "bench": ("pytest_loopguard.bench._suite",),
    "eval": ("pytest_loopguard.cli._eval_tables", "pytest_loopguard.eval._score", "pytest_loopguard.eval._runs",
             "tabulate"),
    "scan": ("pytest_loopguard.cli._scan_run", "pytest_loopguard.scan._loops", "pytest_loopguard.scan._discover"),
    "conform": ("pytest_loopguard.io._conform", "pytest_loopguard.engines._pipe"),
    "view": ("pytest_loopguard.report._view",),
    "corpus": ("pytest_loopguard.corpora",),
}

# what a plain `loopguard run` does without: tables of plain cells are rendered without tabulate, the live
# session's modules load when a program names them, the ini reader only without PATHS, `-j`'s pool with -j
# (importlib.metadata does load: the engine registry reads the plugin engines' entry points)
NOT_FOR_RUN = ("tabulate", "tomllib", "pytest_loopguard.live._session",
               "pytest_loopguard.live._recorder", "pytest_loopguard.cli._inifile", "pytest_loopguard.cli._jobs")

# all that `--help` loads of the package: the parser and what the commands print with
PARSER = {"pytest_loopguard", "pytest_loopguard._lazy", "pytest_loopguard.errors", "pytest_loopguard.cli",
          "pytest_loopguard.cli._main",
          "pytest_loopguard.cli._common", "pytest_loopguard.report", "pytest_loopguard.report._console"}
HEAVY_LIBRARIES = ("yaml", "tabulate", "rich", "importlib.metadata", "tomllib", "multiprocessing", "pathlib")


def loaded_after(argv: list[str], status: int = 0) -> set[str]:
    """The modules a fresh interpreter holds after `loopguard ARGV` (which must exit with `status`)."""
    code = ("import json, sys\nfrom pytest_loopguard.cli import _main as cli\nstatus = cli.main(sys.argv[1:])\n"
            "print(json.dumps([status, sorted(sys.modules)]))")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True, cwd=ROOT)
    got, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == status, done.stdout + done.stderr
    return set(loaded)


def tiny_trace(folder: Path) -> Path:
    trace = folder / "t.jsonl"
    trace.write_text('{"loopguard": 1, "name": "t"}\n{"tool": "a"}\n', encoding="utf-8")
    return trace


def test_every_command_module_is_on_the_parser_once_in_the_help_order() -> None:
    assert [c.name for c in cli.COMMANDS] == COMMAND_NAMES
    modules = sorted(f"pytest_loopguard.cli.{p.stem}" for p in CLI.glob("_*.py")
                     if {"\ndef add_arguments(", "\ndef run("} <= set(re.findall(r"\ndef \w+\(", p.read_text("utf-8"))))
    assert modules == sorted(module_of(n) for n in COMMAND_NAMES)  # a command module not in COMMANDS fails here
    for command in cli.COMMANDS:
        module = command.module()
        assert callable(module.add_arguments) and callable(module.run), command.name


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["bogus"]], ids=" ".join)
def test_the_parser_alone_loads_no_command(argv: list[str]) -> None:
    loaded = loaded_after(argv, status=2 if argv == ["bogus"] else 0)
    assert {m for m in loaded if m.startswith("pytest_loopguard")} == PARSER
    assert [m for m in HEAVY_LIBRARIES if m in loaded] == []


# what a command's help shows beyond its options: `import --help` lists every format (the importers' registry)
HELP_READS = {"import": ("pytest_loopguard.importers", "pytest_loopguard.core")}


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_a_commands_help_loads_its_module_and_no_implementation(name: str) -> None:
    loaded = loaded_after([name, "--help"])
    ours = {m for m in loaded if m.startswith("pytest_loopguard")}
    if name == "import":  # its help lists the formats, each importer's description read from the importer itself
        ours = {m for m in ours if not m.startswith(HELP_READS[name])}
    assert ours == {*PARSER, module_of(name)}
    # importers read YAML and entry points: `import --help` pays for its list (~0.1 s), no other help does
    heavy = [m for m in HEAVY_LIBRARIES if m in loaded]
    assert heavy == [] or name in HELP_READS, heavy


def test_the_help_lists_every_command_however_it_is_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    listed = capsys.readouterr().out
    for command in cli.COMMANDS:
        assert f"    {command.name:<9} {command.help.split()[0]}" in listed, command.name
    assert cli.main(["-h", "run"]) == 0  # a command named after -h does not change what the help lists
    assert capsys.readouterr().out == listed
    assert cli.main(["bogus"]) == 2
    assert f"(choose from {', '.join(repr(n) for n in COMMAND_NAMES)})" in capsys.readouterr().err


@pytest.mark.parametrize("command", cli.COMMANDS, ids=lambda c: c.name)
def test_each_commands_help_is_its_own(command: cli.Command, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([command.name, "--help"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: loopguard {command.name} [-h]")
    assert " ".join(command.help.split()) in " ".join(shown.split())  # the description, however wrapped


def not_for(name: str) -> tuple[str, ...]:
    """The other commands' modules, and what only they need."""
    return (*(module_of(other) for other in COMMAND_NAMES if other != name),
            *(m for other, modules in OWN.items() if other != name for m in modules if m != "tabulate"))


@pytest.mark.parametrize("name", ["run", "replay", "validate"])
def test_a_command_loads_no_other_commands_modules(name: str, tmp_path: Path) -> None:
    loaded = loaded_after([name, str(tiny_trace(tmp_path))])
    assert [m for m in not_for(name) if m in loaded] == []
    assert module_of(name) in loaded  # the check can see a module that does load


def test_a_plain_run_loads_neither_tabulate_nor_the_live_session_nor_the_pool(tmp_path: Path) -> None:
    for argv in (["run", str(tiny_trace(tmp_path))], ["run", str(ROOT / "traces")]):
        loaded = loaded_after(argv)
        assert [m for m in (*NOT_FOR_RUN, *not_for("run")) if m in loaded] == [], argv


@pytest.mark.parametrize("argv", [
    ["run", "traces/loop_guard"],
    ["replay", "TRACE"],
    ["diff", "TRACE", "--before", "default", "--after", "goose"],
    ["schema"],
    ["import", "tests/importers/fixtures/anthropic_messages.json", "-o", "OUT"],
    ["bench", "--session", "--events", "1", "--policy", "default"],
    ["eval", "TRACE"],
    ["conform", f"{sys.executable} examples/guards/python_guard.py default", "TRACE"],
    ["view", "TRACE", "-o", "OUT.html"],
], ids=lambda argv: argv[0])
def test_each_command_loads_its_own_modules_when_it_runs(argv: list[str], tmp_path: Path) -> None:
    trace = str(tiny_trace(tmp_path))
    argv = [trace if a == "TRACE" else str(tmp_path / "out") if a == "OUT" else
            str(tmp_path / "out.html") if a == "OUT.html" else a for a in argv]
    loaded = loaded_after(argv)
    assert [m for m in OWN[argv[0]] if m not in loaded] == []


def test_the_live_session_names_load_when_asked_for() -> None:
    code = ("import sys, pytest_loopguard as p\nbefore = 'pytest_loopguard.live._session' in sys.modules\n"
            "from pytest_loopguard import Session, ToolReply, Recorder, Redactor\n"
            "print(before, Session.__module__, ToolReply.__module__, Recorder.__module__, Redactor.__module__,\n"
            "      'Session' in dir(p), hasattr(p, 'Sesion'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "pytest_loopguard.live._session", "pytest_loopguard.live._session",
                                   "pytest_loopguard.live._recorder", "pytest_loopguard.live._redact", "True", "False"]


def test_the_package_gives_main_on_first_use_and_nothing_else() -> None:
    code = ("import sys, pytest_loopguard.cli as c\nbefore = 'pytest_loopguard.cli._main' in sys.modules\n"
            "from pytest_loopguard.cli import main\nfrom pytest_loopguard.cli._main import main as real\n"
            "print(before, main is real, c.__all__, hasattr(c, 'COMMANDS'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "['main']", "False"]


@pytest.mark.parametrize("argv", [["--help"], ["schema", "--help"], ["--version"]], ids=" ".join)
def test_the_command_runs_as_a_module_and_as_its_main_module(argv: list[str]) -> None:
    ran = [subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, cwd=ROOT)
           for module in ("pytest_loopguard.cli", "pytest_loopguard.cli._main")]
    assert [r.returncode for r in ran] == [0, 0]
    assert ran[0].stdout == ran[1].stdout and ran[0].stdout.startswith(("usage: loopguard", "loopguard "))


def test_a_skipped_file_is_still_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tiny_trace(tmp_path)
    (tmp_path / "otel.json").write_text('{"resourceSpans": []}', encoding="utf-8")
    assert cli.main(["run", str(tmp_path)]) == 0
    assert "loopguard: skipped:" in capsys.readouterr().err


def test_only_the_processs_own_command_freezes_what_the_imports_made(tmp_path: Path) -> None:
    trace = tiny_trace(tmp_path)
    code = ("import gc, io, sys, contextlib\nfrom pytest_loopguard.cli import _main as cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    cli.main(['run', sys.argv[1]])\n    called = gc.get_freeze_count()\n"
            "    sys.argv = ['loopguard', 'run', sys.argv[1]]\n    cli.main()\n"
            "print(called, gc.get_freeze_count() > 1000)")
    done = subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "True"]  # a program calling main(argv) keeps its collector as it was
