"""The shell reader never raises, whatever the text, and stays linear on long lines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard.shell import EFFECTS, MAX_BASHLEX_CHARS, read_command_line

PIECES = [*"ab./-'\"$`|&;<>()\\{}[]*~#=\n\t ", "cat ", "sed -n ", "cd ", "<<EOF\n", "EOF", "edit ", "open ", "goto "]
SHELLISH = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@given(st.text() | SHELLISH)
def test_any_text_gives_commands_and_never_raises(line: str) -> None:
    for command in read_command_line(line):
        assert command.effect in EFFECTS
        assert all(isinstance(t, str) and t for t in command.targets)


def test_a_very_long_line_is_read_by_the_linear_fallback() -> None:
    # far beyond the bashlex limit: must answer (the fallback splits it) rather than recurse or crawl
    line = " && ".join(f"sed -n '{i},{i + 5}p' f{i % 7}.py" for i in range(4000))
    assert len(line) > 10 * MAX_BASHLEX_CHARS
    commands = read_command_line(line)
    assert len(commands) == 4000 and commands[3].targets == ("f3.py",)
    nested = "$(" * 3000 + "cat a" + ")" * 3000
    assert isinstance(read_command_line(nested), tuple)
