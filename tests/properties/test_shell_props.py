"""The shell reader never raises, whatever the text, and stays linear on long lines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard.core._shell import (
    EFFECTS,
    MAX_BASHLEX_CHARS,
    MAX_READ_CHARS,
    _parsed_commands,
    _plain_commands,
    read_command_line,
)

PIECES = [*"ab./-'\"$`|&;<>()\\{}[]*~#=\n\t ", "cat ", "sed -n ", "cd ", "<<EOF\n", "EOF", "edit ", "open ", "goto "]
SHELLISH = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@given(st.text() | SHELLISH)
def test_any_text_gives_commands_and_never_raises(line: str) -> None:
    for command in read_command_line(line):
        assert command.effect in EFFECTS
        assert all(isinstance(t, str) and t for t in command.targets)


def test_a_very_long_line_is_read_by_the_linear_fallback() -> None:
    # far beyond the bashlex limit: must answer (the fallback splits it) rather than recurse or crawl; the
    # commands in its first MAX_READ_CHARS characters are read (docs/engines.md, "Shell command lines")
    line = " && ".join(f"sed -n '{i},{i + 5}p' f{i % 7}.py" for i in range(4000))
    assert len(line) > 10 * MAX_BASHLEX_CHARS
    commands = read_command_line(line)
    assert len(commands) == line[:MAX_READ_CHARS].count("sed") and commands[3].targets == ("f3.py",)
    nested = "$(" * 3000 + "cat a" + ")" * 3000
    assert isinstance(read_command_line(nested), tuple)


# pieces of plain lines and of what makes a line not plain, to find where the two readings could differ
PLAIN_PIECES = [*"ab1 2./-'\"|&;<>=*~[]#$\t(){}`\\!\n%+é0", " ", " ", "cat ", "x=1 ", "2>", ">&", "&>", ">>",
                "&&", "||", "|&", "in ", "<", ">|", "'a b'", '"c d"', "10>", "sed -n ", "'1,5p' ", "f.py", "2>&1",
                "'a\\\\b'", "\"it's\"", "'s/\\\\*x/y/' ", "'a\"b'"]
PLAINISH = st.lists(st.sampled_from(PLAIN_PIECES), min_size=1, max_size=16).map("".join)


@given(PLAINISH)
def test_a_plain_line_reads_as_bashlex_reads_it(line: str) -> None:
    fast = _plain_commands(line)
    if fast is not None:  # not plain: bashlex reads it (nothing to compare)
        assert [(c.words, c.redirects) for c in fast] == [(c.words, c.redirects) for c in _parsed_commands(line)]
