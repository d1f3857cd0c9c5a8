"""Reading a shell command line is bounded: a line of megabytes (a trace's strings hold up to 8 Mi characters)
is read from its first MAX_READ_CHARS characters, here-document bodies left out, in milliseconds; replaying
or running a trace with such a command takes a fraction of a second of CPU (it took minutes in `shlex`)."""

from __future__ import annotations

import contextlib
import io
import json
import random
import time
from pathlib import Path

import pytest

from pytest_loopguard import load_file, replay
from pytest_loopguard.cli._main import main
from pytest_loopguard.core import MAX_STRING
from pytest_loopguard.core._shell import MAX_BASHLEX_CHARS, MAX_READ_CHARS, _strip_bodies, read_command_line


def huge(head: str, filler: str, tail: str = "") -> str:
    """`head`, then `filler` repeated, then `tail`: MAX_STRING characters in all."""
    room = MAX_STRING - len(head) - len(tail)
    return head + filler * (room // len(filler)) + tail


# the forms that cost most: one long word (shlex grows its token a character at a time), many words on an
# unbalanced quote (every word a target), a here-document of megabytes, many short lines, a long line that
# mentions `open` (the SWE-agent opener check)
HUGE_LINES = {
    "one word": huge("cat src/app.py && ", "y"),
    "many words": huge("cat 'x", "y "),
    "here-document": huge("cat > src/big.py <<EOF\n", "<<A\n", "\nEOF\npython src/big.py"),
    "many lines": huge("", "ls\n"),
    "opener at the end": huge("echo ", "y", " && open src/app.py"),
}


def cpu(action: object) -> float:
    assert callable(action)
    started = time.process_time()
    action()
    return time.process_time() - started


@pytest.mark.parametrize("name", list(HUGE_LINES))
def test_a_line_of_megabytes_is_read_in_a_bounded_time(name: str) -> None:
    line = HUGE_LINES[name]
    assert len(line) > MAX_STRING - 10
    read_command_line.cache_clear()
    # 0.05-0.2 s of CPU on a quiet machine; the bound is what unbounded reading took (minutes), with room for a
    # loaded CI machine (0.5 s failed once at load 4 for "many lines", 11k commands)
    assert cpu(lambda: read_command_line(line)) < 2.0


def test_the_start_of_a_huge_line_gives_its_verb_and_files() -> None:
    first = read_command_line(HUGE_LINES["one word"])
    assert (first[0].verb, first[0].effect, first[0].targets) == ("cat", "read", ("src/app.py",))
    # the body is data: what follows it is read although it lies megabytes into the line
    doc = read_command_line(HUGE_LINES["here-document"])
    assert [(c.verb, c.effect, c.targets) for c in doc] == [
        ("cat", "read", ()), ("cat", "write", ("src/big.py",)), ("python", "run", ("src/big.py",))]
    # the unbalanced quote: words as written, from the first MAX_READ_CHARS characters only
    words = read_command_line(HUGE_LINES["many words"])
    assert len(words[0].targets) == len(HUGE_LINES["many words"][:MAX_READ_CHARS].split()) - 1


def test_what_lies_past_the_bound_is_not_read() -> None:
    # documented (docs/engines.md, "Shell command lines"): a command after the first MAX_READ_CHARS
    # characters is not seen; one just before the bound is
    filler = "echo " + "y" * (MAX_READ_CHARS - 40)
    seen = read_command_line(filler + " && cat a.py")
    assert seen[-1].targets == ("a.py",)
    unseen = read_command_line(filler + "y" * 100 + " && cat a.py")
    assert all(c.targets != ("a.py",) for c in unseen)


def test_lines_between_the_bounds_are_read_whole_by_shlex() -> None:
    line = "cd src && cat " + " ".join(f"f{i}.py" for i in range(2_000))
    assert MAX_BASHLEX_CHARS < len(line) < MAX_READ_CHARS
    (_cd, cat) = read_command_line(line)
    assert cat.targets[0] == "src/f0.py" and cat.targets[-1] == "src/f1999.py"


def reference_strip_bodies(line: str) -> str:
    """The line-by-line reading `_strip_bodies` replaced (its answer on every line short of the bound)."""
    import re

    heredoc = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")
    if "<<" not in line and "end_of_edit" not in line:
        return line
    out: list[str] = []
    lines = line.split("\n")
    i = 0
    while i < len(lines):
        current = lines[i]
        out.append(heredoc.sub("", current))
        i += 1
        ends = [m.group(3) for m in heredoc.finditer(current)]
        if current.lstrip().startswith("edit ") or current.strip() == "edit":
            ends.append("end_of_edit")
        for end in ends:
            while i < len(lines) and lines[i].strip() != end:
                i += 1
            i += 1
    return "\n".join(out)


def test_bodies_are_stripped_as_the_line_by_line_reading_did() -> None:
    rng = random.Random(20)
    parts = ["cat <<EOF", "EOF", " EOF ", "EOF\t", "cat <<'X' > f", "X", "edit 1:2", "edit", "end_of_edit",
             "  end_of_edit\r", 'a <<-"EOF" b <<X', "x", "", " ", "ls", "\x0bEOF\x0c", "EOF\u2003", "<<",
             "python a.py", "<<A.b-c", "A.b-c", "EOFX", "xEOF"]
    for _ in range(20_000):
        line = "\n".join(rng.choice(parts) for _ in range(rng.randint(0, 9)))
        assert _strip_bodies(line) == reference_strip_bodies(line), line


def big_trace(folder: Path, command: str) -> Path:
    path = folder / "big.json"
    steps = [
        {"message": {"role": "user", "text": "Fix src/app.py"}},
        {"llm": {"input_tokens": 100, "output_tokens": 10}},
        {"tool": "terminal", "args": {"command": command}, "result": {"text": "ok", "tokens": 10}},
        {"llm": {"input_tokens": 200, "output_tokens": 10}},
        {"tool": "terminal", "args": {"command": "cat src/app.py"}, "result": {"text": "ok", "tokens": 10}},
    ]
    path.write_text(json.dumps({"loopguard": 1, "name": "big", "policy": "default", "steps": steps}))
    return path


@pytest.mark.parametrize("name", ["one word", "many words", "here-document"])
def test_a_trace_with_an_8_mib_command_replays_under_default_in_a_fraction_of_a_second(
        tmp_path: Path, name: str) -> None:
    (trace,) = load_file(big_trace(tmp_path, HUGE_LINES[name]))
    read_command_line.cache_clear()
    results = []
    assert cpu(lambda: results.append(replay(trace, "default"))) < 1.0
    assert results[0].outcome == "incomplete"  # no `done` step: the run ended as written


def test_loopguard_run_on_a_trace_with_an_8_mib_command(tmp_path: Path) -> None:
    path = big_trace(tmp_path, HUGE_LINES["one word"])
    read_command_line.cache_clear()
    status: list[int] = []
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        spent = cpu(lambda: status.append(main(["run", str(path)])))
    assert status == [0], err.getvalue()
    assert spent < 2.0
