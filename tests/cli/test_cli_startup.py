"""`loopguard run` and `replay` start lean: the diff, import and eval commands' modules (and the importers)
are not imported for them, and those commands still parse and run when named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pytest_loopguard.cli._diff", "pytest_loopguard.cli._import", "pytest_loopguard.cli._eval",
         "pytest_loopguard.importers")


# what a plain `loopguard run` does without: tables of plain cells are rendered without tabulate, and the live
# session's modules load when a program names them
NOT_FOR_RUN = ("tabulate", "tomllib", "pytest_loopguard.cli._replay", "pytest_loopguard.live._session",
               "pytest_loopguard.live._recorder", "pytest_loopguard.live._redact", "pytest_loopguard.cli._inifile")


def loaded_after(argv: list[str], modules: tuple[str, ...] = HEAVY) -> list[str]:
    code = ("import json, sys\nfrom pytest_loopguard.cli import _main as cli\nstatus = cli.main(sys.argv[1:])\n"
            f"print(json.dumps([status, [m for m in {list(modules)!r} if m in sys.modules]]))")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    status, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == 0, done.stdout
    return list(loaded)


def test_run_and_replay_import_no_other_command(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"loopguard": 1, "name": "t"}\n{"tool": "a"}\n', encoding="utf-8")
    assert loaded_after(["run", str(trace)]) == []
    assert loaded_after(["replay", str(trace)]) == []
    assert loaded_after(["validate", str(trace)]) == []


def test_a_plain_run_loads_neither_tabulate_nor_the_live_session(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"loopguard": 1, "name": "t"}\n{"tool": "a"}\n', encoding="utf-8")
    assert loaded_after(["run", str(trace)], NOT_FOR_RUN) == []
    assert loaded_after(["run", str(ROOT / "traces")], NOT_FOR_RUN) == []


def test_the_live_session_names_load_when_asked_for() -> None:
    code = ("import sys, pytest_loopguard as p\nbefore = 'pytest_loopguard.live._session' in sys.modules\n"
            "from pytest_loopguard import Session, ToolReply, Recorder, Redactor\n"
            "print(before, Session.__module__, ToolReply.__module__, Recorder.__module__, Redactor.__module__,\n"
            "      'Session' in dir(p), hasattr(p, 'Sesion'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "pytest_loopguard.live._session", "pytest_loopguard.live._session",
                                   "pytest_loopguard.live._recorder", "pytest_loopguard.live._redact", "True", "False"]


@pytest.mark.parametrize("command", ["diff", "import", "eval"])
def test_the_other_commands_still_parse(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli._parser(command).parse_args([command, "--help"])
    assert done.value.code == 0 and f"usage: loopguard {command}" in capsys.readouterr().out


def test_a_skipped_file_is_still_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.jsonl").write_text('{"loopguard": 1, "name": "t"}\n{"tool": "a"}\n', encoding="utf-8")
    (tmp_path / "otel.json").write_text('{"resourceSpans": []}', encoding="utf-8")
    assert cli.main(["run", str(tmp_path)]) == 0
    assert "loopguard: skipped:" in capsys.readouterr().err


def test_only_the_processs_own_command_freezes_what_the_imports_made(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"loopguard": 1, "name": "t"}\n{"tool": "a"}\n', encoding="utf-8")
    code = ("import gc, io, sys, contextlib\nfrom pytest_loopguard.cli import _main as cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    cli.main(['run', sys.argv[1]])\n    called = gc.get_freeze_count()\n"
            "    sys.argv = ['loopguard', 'run', sys.argv[1]]\n    cli.main()\n"
            "print(called, gc.get_freeze_count() > 1000)")
    done = subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "True"]  # a program calling main(argv) keeps its collector as it was
