"""The `loopguard` command on folders with broken and hostile files: every bad file is reported in one line,
the rest runs, and the exit status says which (2 bad input over 1 mismatch; 3 only for a bug, never 1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from files import write

from pytest_loopguard.cli import _corpus as stream
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.cli import _policy_diff as policy_diff
from pytest_loopguard.io import _runner as runner

GOOD = "loopguard: 1\nname: good\nsteps:\n  - {tool: a}\nexpect: {outcome: incomplete}\n"
MISMATCH = "loopguard: 1\nname: mismatch\nsteps:\n  - {tool: a}\nexpect: {outcome: completed}\n"
BAD_SCENARIO = ("loopguard: 1\nname: bad-scenario\nmode: simulate\nagent: {behaviour: retrier, call: {tool: a}, "
                "attempts: 100000}\n")



@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A folder with one good trace and one bad file of each kind."""
    root = tmp_path / "corpus"
    write(root, "good.yaml", GOOD)
    bad = [
        write(root, "deep.json", '{"loopguard": 1, "name": "d", "steps": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        write(root, "latin1.yaml", b"loopguard: 1\nname: caf\xe9\nsteps: []\n"),
        write(root, "tag.yaml", "loopguard: 1\nname: !!python/name:os.system\nsteps: []\n"),
        write(root, "preset-path.yaml", "loopguard: 1\nname: p\npolicy: ../../etc/x\nsteps: []\n"),
        write(root, "torn.jsonl", '{"loopguard": 1, "na'),
        write(root, "scenario.yaml", BAD_SCENARIO),
    ]
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "fifo.yaml")
        bad.append(root / "fifo.yaml")
    return root, bad


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("loopguard: error: ")]


@pytest.mark.parametrize("command", [["run"], ["validate"], ["matrix", "--policies", "default,spacebot"]])
def test_every_bad_file_is_reported_in_one_line_and_the_rest_runs(
    command: list[str], corpus: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, bad = corpus
    status, out, err = run(capsys, command[0], str(root), *command[1:])
    assert status == 2
    lines = error_lines(err)
    # every command judges a scenario when it loads it (runner.check_scenario), so each reports all of them
    assert len(lines) == len(bad)
    for path in bad:
        assert sum(str(path) in line for line in lines) == 1, path
    if command[0] == "validate":
        assert out.startswith("1 traces in 1 files ok")  # the good trace; the bad scenario is an error
    else:
        assert any(line.startswith("good") for line in out.splitlines())


def test_bad_input_wins_over_a_mismatch(corpus: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]) -> None:
    root, _ = corpus
    write(root, "mismatch.yaml", MISMATCH)
    status, out, _ = run(capsys, "run", str(root))
    assert status == 2 and "1 mismatched" in out
    status, _, _ = run(capsys, "run", str(root / "mismatch.yaml"))
    assert status == 1


def test_an_internal_error_exits_3_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise TypeError("an engine bug")

    monkeypatch.setattr(runner, "execute", broken)  # what `replay` and `matrix` import when they run
    monkeypatch.setattr(stream, "execute", broken)  # `loopguard run` replays each file as it reads it
    monkeypatch.setattr(policy_diff, "execute", broken)
    path = write(tmp_path, "good.yaml", GOOD)
    for argv in (["run", str(path)], ["replay", str(path)], ["matrix", str(path), "--policies", "default"],
                 ["diff", str(path), "--before", "default", "--after", "goose"]):
        status, _, err = run(capsys, *argv)
        assert status == 3, argv
        assert err.strip() == "loopguard: internal error (please report it): TypeError: an engine bug"


@pytest.mark.parametrize("command", ["replay", "simulate", "validate"])
def test_single_file_commands_refuse_hostile_files_in_one_line(
    command: str, corpus: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, bad = corpus
    for path in bad:
        if path.name == "scenario.yaml" and command != "simulate":
            continue
        status, _, err = run(capsys, command, str(path))
        assert status == 2, path
        assert str(path) in err and len(error_lines(err) or err.strip().splitlines()) == 1, err


def test_a_trace_policy_file_does_not_depend_on_the_working_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    write(repo, "pyproject.toml", "")
    write(repo, "policies/strict.yaml", "preset: default\nloop_guard: {warn_at: 1}\n")
    trace = write(repo, "traces/x.yaml", "loopguard: 1\nname: x\npolicy: policies/strict.yaml\n"
                  "steps:\n  - {tool: a, expect: warn}\n")
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, "policies/strict.yaml", "preset: default\n")  # would not warn: must not be used
    monkeypatch.chdir(elsewhere)
    status, _, err = run(capsys, "run", str(trace))
    assert status == 0, err


def test_import_refuses_hostile_logs_in_one_line_and_imports_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    bad = [
        write(logs, "deep.json", '{"trajectory": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        write(logs, "deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n"),
    ]
    zero = logs / "zero.json"
    zero.symlink_to("/dev/zero")  # would read until memory runs out
    bad.append(zero)
    if hasattr(os, "mkfifo"):
        os.mkfifo(logs / "fifo.json")  # would block forever
        bad.append(logs / "fifo.json")
    for path in bad:
        status, _, err = run(capsys, "import", "-o", str(tmp_path / "out"), str(path))
        assert status == 2, path
        assert sum(line.startswith("loopguard: error: ") for line in err.splitlines()) == 1, err
        assert str(path) in err
