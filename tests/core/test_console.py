"""Terminal output: tables fitted to a terminal's width, colour only for a terminal without NO_COLOR, progress
bars only on a terminal, and plain output whenever rich is missing or the stream is piped."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from tabulate import tabulate

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.report import _console as console
from pytest_loopguard.report._console import emit, fit_table, fit_widths, progress

ROOT = Path(__file__).resolve().parents[2]
ESC = "\x1b["


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def tty_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return monkeypatch


ROWS = [
    ["0", 'browser_click {"index":12,"selector":"#checkout-button"}', "warn", "Warning: tool 'browser_click' has "
     "been called 3 times with identical arguments; change strategy"],
    ["1", "read_file", "allow", ""],
]
HEADERS = ["step", "call", "action", "message"]


def words(text: str) -> str:
    return "".join(text.split())


def cells(table: str) -> list[list[str]]:
    """The rows of a wrapped `simple` table, each cell's wrapped lines joined (whitespace dropped)."""
    lines = table.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line) <= {"-", " "} and line)
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[rule])]
    rows: list[list[str]] = []
    for line in lines[rule + 1:]:
        parts = [line[a:b + 1] for a, b in spans]  # +1: a wrapped cell may touch the gap
        if parts[0].strip():  # the first column (step) starts a new row
            rows.append([""] * len(spans))
        rows[-1] = [old + words(part) for old, part in zip(rows[-1], parts, strict=True)]
    return rows


@pytest.mark.parametrize("width", [40, 60, 80, 100])
def test_table_fits_the_terminal_and_keeps_every_character(tty_env: pytest.MonkeyPatch, width: int) -> None:
    tty_env.setenv("COLUMNS", str(width))
    text = fit_table(ROWS, HEADERS, Terminal())
    assert max(len(line) for line in text.splitlines()) <= width
    # Wrapped, not cut: every character of every cell is still there, in order, in its own cell.
    assert cells(text) == [[words(c) for c in row] for row in ROWS]


def test_piped_output_is_never_fitted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # pytest-xdist sets it for its workers: it must not matter off a terminal
    plain = tabulate(ROWS, headers=HEADERS, tablefmt="simple", disable_numparse=True)
    assert fit_table(ROWS, HEADERS, io.StringIO()) == plain


def test_shrinking_keeps_headers_whole_while_it_can() -> None:
    # natural widths 40, 15, 6; header floors 15 for the middle column: only the first column shrinks.
    assert fit_widths([40, 15, 6], 50, keep=[6, 15, 6]) == [25, None, None]
    # Too narrow even then: the header column shrinks too, never below 8 characters.
    assert fit_widths([40, 15, 6], 20, keep=[6, 15, 6]) == [8, 8, None]


def test_colour_on_a_terminal(tty_env: pytest.MonkeyPatch) -> None:
    out = Terminal()
    emit("step 3  block  loop_guard.consecutive_block", out)
    text = out.getvalue()
    assert ESC in text
    # Colour changes no character: without the escape codes the line is the same.
    assert re.sub(r"\x1b\[[0-9;]*m", "", text) == "step 3  block  loop_guard.consecutive_block\n"


def test_no_colour_with_no_color_set(tty_env: pytest.MonkeyPatch) -> None:
    tty_env.setenv("NO_COLOR", "1")
    out = Terminal()
    emit("block", out)
    assert out.getvalue() == "block\n"


def test_no_colour_when_piped(tty_env: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    emit("block", out)
    assert out.getvalue() == "block\n"


def test_plain_fallback_without_rich(tty_env: pytest.MonkeyPatch) -> None:
    tty_env.setattr(console, "_rich", lambda: None)
    out = Terminal()
    emit("block stop", out)
    assert out.getvalue() == "block stop\n"
    assert list(progress(list(range(50)), "x", Terminal())) == list(range(50))


def test_progress_bar_only_on_a_terminal(tty_env: pytest.MonkeyPatch) -> None:
    items = list(range(30))
    piped = io.StringIO()
    assert list(progress(items, "replaying", piped)) == items and piped.getvalue() == ""
    bar = Terminal()
    assert list(progress(items, "replaying", bar)) == items
    assert "replaying" in bar.getvalue()
    short = Terminal()
    assert list(progress(items[:3], "replaying", short)) == items[:3] and short.getvalue() == ""


def test_command_output_fits_and_is_coloured(tty_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    tty_env.setenv("COLUMNS", "72")
    terminal = Terminal()
    tty_env.setattr("sys.stdout", terminal)
    assert cli.main(["replay", str(ROOT / "traces" / "loop_guard" / "default_warn_runs_then_block.yaml")]) == 0
    text = re.sub(r"\x1b\[[0-9;]*m", "", terminal.getvalue())
    assert ESC in terminal.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 72
    assert any("loop_guard.consecutive_block" in row[4] for row in cells(text.split("\ntrace ")[0]))


def test_zero_count_columns_go_first_when_too_wide(tty_env: pytest.MonkeyPatch) -> None:
    rows = [["a-long-trace-name-" * 3, "2", "0", "0", "ok"], ["short", "1", "0", "3", "ok"]]
    headers = ["trace", "warn", "block", "stop", "status"]
    tty_env.setenv("COLUMNS", "60")
    text = fit_table(rows, headers, Terminal(), droppable=("warn", "block", "stop"))
    assert text.splitlines()[0].split() == ["trace", "warn", "stop", "status"]  # block is 0 everywhere
    assert max(len(line) for line in text.splitlines()) <= 60
    tty_env.setenv("COLUMNS", "200")  # it fits: nothing is left out
    assert fit_table(rows, headers, Terminal(), droppable=("block",)).splitlines()[0].split() == headers


def test_action_words_inside_names_stay_plain(tty_env: pytest.MonkeyPatch) -> None:
    out = Terminal()
    emit("default-warn-runs-then-block  warn", out)
    coloured = re.findall(r"\x1b\[[0-9;]*m([^\x1b]+)\x1b", out.getvalue())
    assert coloured == ["warn"]


def test_progress_over_an_iterator_of_unknown_length(tty_env: pytest.MonkeyPatch) -> None:
    bar = Terminal()
    assert list(progress((i for i in range(3)), "importing", bar)) == [0, 1, 2]
    assert "importing" in bar.getvalue()  # an unknown length still gets a bar: it cannot be known to be short
    piped = io.StringIO()
    assert list(progress(iter(range(3)), "importing", piped)) == [0, 1, 2] and piped.getvalue() == ""
