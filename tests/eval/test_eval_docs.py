"""docs/eval.md: its example table is what the command above it prints today, so the page cannot rot."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "eval.md").read_text(encoding="utf-8")


def test_the_example_table_is_the_commands_output(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    command = re.search(r"```console\n\$ (loopguard eval [^\n]+)\n```", DOC)
    assert command is not None
    table = re.search(r"<!-- eval-table:start -->\n(.*?)\n<!-- eval-table:end -->", DOC, re.S)
    assert table is not None
    monkeypatch.chdir(ROOT)  # the doc's paths are relative to the repository root
    argv = shlex.split(command.group(1))[1:]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.rstrip("\n") == table.group(1), "docs/eval.md's table is out of date: paste the command's output"
