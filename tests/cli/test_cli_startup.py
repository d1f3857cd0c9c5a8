"""`loopguard run` and `replay` start lean: the diff, import and eval commands' modules (and the importers)
are not imported for them, and those commands still parse and run when named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopguard import cli

HEAVY = ("pytest_loopguard.diff_cmd", "pytest_loopguard.import_cmd", "pytest_loopguard.eval_cmd",
         "pytest_loopguard.importers")


def loaded_after(argv: list[str]) -> list[str]:
    code = ("import json, sys\nfrom pytest_loopguard import cli\nstatus = cli.main(sys.argv[1:])\n"
            f"print(json.dumps([status, [m for m in {list(HEAVY)!r} if m in sys.modules]]))")
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
