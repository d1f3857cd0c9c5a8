"""The shell command-line reader: hand cases per command family, and the real command lines of the corpus."""

from __future__ import annotations

import json
import re
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from pytest_loopguard.core._shell import (
    Command,
    _parsed_commands,
    _plain_commands,
    _Simple,
    _strip_bodies,
    read_command_line,
)
from pytest_loopguard.core._targets import CallTarget

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "real"


def main(line: str) -> tuple[str, str, tuple[str, ...]]:
    t = CallTarget.of(read_command_line(line))
    return t.effect, t.verb, t.targets


# (line, the main command's effect, verb, targets)
CASES = [
    ("cat a.py", "read", "cat", ("a.py",)),
    ("head -n 20 README.md", "read", "head", ("README.md",)),
    ("tail -5 ./logs/../out.log", "read", "tail", ("out.log",)),
    ("sed -n '25,35p' django/db/models/constraints.py", "read", "sed", ("django/db/models/constraints.py",)),
    ("sed -n -e '1,5p' a.py b.py", "read", "sed", ("a.py", "b.py")),
    ("sed -i 's/a/b/' f.py", "write", "sed", ("f.py",)),
    ("sed -i.bak -e 's/a/b/' f.py", "write", "sed", ("f.py",)),
    ("nl -ba f.py | sed -n '1,5p'", "read", "nl", ("f.py",)),
    ("nl -b a f.py", "read", "nl", ("f.py",)),
    ("grep -rn 'class X' src/ tests", "search", "grep", ("src", "tests")),
    ("grep -e foo -e bar a.py", "search", "grep", ("a.py",)),
    ("grep -A 3 foo a.py", "search", "grep", ("a.py",)),
    ("rg -g '*.py' foo src", "search", "rg", ("src",)),
    ("rg foo", "search", "rg", ()),
    ("ls -la src", "list", "ls", ("src",)),
    ("find . -name '*.py' | head -20", "list", "find", (".",)),
    ("git checkout src/a.py", "revert", "git checkout", ("src/a.py",)),
    ("git checkout -- Makefile", "revert", "git checkout", ("Makefile",)),
    ("git checkout main", "other", "git checkout", ()),
    ("git checkout -b fix/a.py", "other", "git checkout", ()),
    ("git restore --staged a.py", "revert", "git restore", ("a.py",)),
    ("git diff HEAD~1 src/x.py", "read", "git diff", ("src/x.py",)),
    ("git -C repo diff x.py", "read", "git diff", ("repo/x.py",)),
    ("git status", "list", "git status", ()),
    ("cp src/marshmallow/schema.py.backup src/marshmallow/schema.py", "revert", "cp", ("src/marshmallow/schema.py",)),
    ("cp schema.py.fixed schema.py", "revert", "cp", ("schema.py",)),
    ("cp /tmp/orig/a.py src/a.py", "revert", "cp", ("src/a.py",)),
    ("mv a.py~ a.py", "revert", "mv", ("a.py",)),
    ("cp a.py b.py", "write", "cp", ("b.py",)),
    ("cp a.py a.py.backup", "write", "cp", ("a.py.backup",)),
    ("cp a.py b.py dest/", "write", "cp", ("dest/a.py", "dest/b.py")),
    ("python reproduce.py 2>&1 | tail -n 5", "run", "python", ("reproduce.py",)),
    ("python3.11 -u ./x.py --flag", "run", "python", ("x.py",)),
    ("python -m pytest tests/test_a.py::test_b -x", "run", "pytest", ("tests/test_a.py",)),
    ("pytest -k foo tests/", "run", "pytest", ("tests",)),
    ("python -m pip install -e .", "run", "python -m pip", ()),
    ("python -c 'print(1)'", "run", "python -c", ()),
    ("timeout 10 python x.py", "run", "python", ("x.py",)),
    ("PYTHONPATH=. python x.py", "run", "python", ("x.py",)),
    ("./run.sh arg", "run", "run.sh", ("run.sh",)),
    ("cd /repo && nl -ba ./a/../f.py | sed -n '1,5p'", "read", "nl", ("/repo/f.py",)),
    ("cd sub && cd .. && cat ./y.py", "read", "cat", ("y.py",)),
    ("cd src && python -m pytest t.py", "run", "pytest", ("src/t.py",)),
    ("cd $HOME && cat a", "read", "cat", ("a",)),
    ("cat <<'EOF' > f.py\nprint(1)\nEOF\n", "write", "cat", ("f.py",)),
    ("cat > f.py <<EOF\nx = 'unbalanced\nEOF\npython f.py", "run", "python", ("f.py",)),
    ("echo hi > out.txt 2>&1", "write", "echo", ("out.txt",)),
    ("python x.py > /dev/null", "run", "python", ("x.py",)),
    ("wc -l < data.csv", "read", "wc", ("data.csv",)),
    ("bash -c 'cat x.txt'", "read", "cat", ("x.txt",)),
    ("[[ -f x ]] && cat x", "read", "cat", ("x",)),
    ("echo 'unterminated", "other", "echo", ()),
    ("cat 'unbalanced a.py", "read", "cat", ("'unbalanced", "a.py")),  # words as written
    ("for f in *.py; do cat $f; done", "read", "cat", ()),
    ("echo $(cat a.txt)", "read", "cat", ("a.txt",)),
    ("open \"django/x.py\" 30", "read", "open", ("django/x.py",)),
    ("create reproduce_bug.py", "write", "create", ("reproduce_bug.py",)),
    ("str_replace_editor view /repo/f.py --view_range 1 20", "read", "view", ("/repo/f.py",)),
    ("str_replace_editor undo_edit /repo/f.py", "revert", "undo_edit", ("/repo/f.py",)),
    ("curl -s https://example.com/a", "read", "curl", ("https://example.com/a",)),
    ("", "other", "", ()),
]


@pytest.mark.parametrize(("line", "effect", "verb", "targets"), CASES, ids=[c[0][:40] for c in CASES])
def test_hand_cases(line: str, effect: str, verb: str, targets: tuple[str, ...]) -> None:
    assert main(line) == (effect, verb, targets)


def test_swe_agent_commands_on_the_open_file_are_marked() -> None:
    assert read_command_line("goto 100") == (Command("goto", "read", on_open=True),)
    assert read_command_line("scroll_down") == (Command("scroll_down", "read", on_open=True),)
    # the edit's body is data: it is neither commands nor targets
    edit = "edit 12:14\n    return open('x')\nend_of_edit"
    assert read_command_line(edit) == (Command("edit", "write", on_open=True),)
    assert read_command_line("search_file foo") == (Command("search_file", "search", on_open=True),)
    assert read_command_line("search_file foo b.py") == (Command("search_file", "search", ("b.py",)),)


def test_a_chain_keeps_every_command_and_files_filters_by_effect() -> None:
    t = CallTarget.of(read_command_line("cp a.py.bak a.py && sed -n 1,5p a.py && python -m pytest t.py"))
    assert [(c.verb, c.effect) for c in t.commands] == [("cp", "revert"), ("sed", "read"), ("pytest", "run")]
    assert t.files("read") == ("a.py",) and t.files("revert") == ("a.py",)
    assert t.files() == ("a.py", "t.py")
    assert (t.effect, t.verb, t.targets) == ("run", "pytest", ("t.py",))


# ---- the real runs -----------------------------------------------------------------------------------
def mini_v1_commands(name: str) -> list[str]:
    """The ```bash block of every assistant message with exactly one (the turns the harness accepted)."""
    messages = json.loads((REAL / name).read_text(encoding="utf-8"))["messages"]
    blocks = [re.findall(r"```bash\s*\n(.*?)\n```", m["content"], re.S) for m in messages if m["role"] == "assistant"]
    return [b[0] for b in blocks if len(b) == 1]


def mini_v11_commands(name: str) -> list[str]:
    messages = json.loads((REAL / name).read_text(encoding="utf-8"))["messages"]
    return [json.loads(call["function"]["arguments"])["command"]
            for m in messages if m["role"] == "assistant" for call in m.get("tool_calls") or []]


def test_django_16560_reads_constraints_py_about_sixty_times_in_many_forms() -> None:
    # SOURCES.md: 59 reads of the file (labels.yaml: "about 60x"), `sed -n '25,35p'` 5x, `sed -n '70,85p'` 4x,
    # `python reproduce_issue_v2.py` 12x
    lines = mini_v1_commands("mini-swe-agent-gemini-3-pro/django__django-16560.traj.json")
    targets = [CallTarget.of(read_command_line(line)) for line in lines]
    path = "django/db/models/constraints.py"
    reads = [t for t in targets if path in t.files("read")]
    assert 59 <= len(reads) <= 60
    distinct = {line for line, t in zip(lines, targets, strict=True) if path in t.files("read")}
    assert len(distinct) > 30  # shifting ranges and forms
    assert sum("'25,35p'" in line for line, t in zip(lines, targets, strict=True) if t in reads) == 5
    assert sum("'70,85p'" in line for line, t in zip(lines, targets, strict=True) if t in reads) == 4
    assert sum(t.files("run") == ("reproduce_issue_v2.py",) for t in targets) == 12
    # its in-place edits of the same file are writes, never reads
    assert sum(t.effect == "write" and t.targets == (path,) for t in targets) > 20


def test_marshmallow_1343_restores_schema_py_fifteen_times() -> None:
    # SOURCES.md: `cp ….backup …` 9x and `cp ….fixed …` 6x
    lines = mini_v11_commands("mini-swe-agent-deepseek/marshmallow-code__marshmallow-1343.traj.json")
    reverts = Counter(
        line.split()[1].rsplit(".", 1)[-1]
        for line in lines
        if CallTarget.of(read_command_line(line)).files("revert") == ("src/marshmallow/schema.py",)
    )
    assert reverts == {"backup": 9, "fixed": 6}


def real_command_lines() -> list[str]:
    """Every command line of the real mini-swe-agent and SWE-agent runs."""
    lines: list[str] = []
    for path in sorted(REAL.glob("mini-swe-agent-*/*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("trajectory_format") == "mini-swe-agent-1.1":
            lines += mini_v11_commands(str(path.relative_to(REAL)))
        else:
            lines += mini_v1_commands(str(path.relative_to(REAL)))
    for path in sorted(REAL.glob("swe-agent/*.traj")):
        lines += [step["action"] for step in json.loads(path.read_text(encoding="utf-8"))["trajectory"]]
    return lines


def test_every_real_command_line_reads_without_error() -> None:
    lines = real_command_lines()
    assert len(lines) > 500
    read = [CallTarget.of(read_command_line(line)) for line in lines]
    # most real commands name what they are about
    assert sum(bool(t.targets) for t in read) > len(read) // 2


# ---- plain lines: read without bashlex, as bashlex reads them ---------------------------------------
def simple(commands: list[_Simple] | None) -> list[tuple[list[str], list[tuple[str, str]]]] | None:
    return None if commands is None else [(c.words, c.redirects) for c in commands]


def plain_and_parsed(line: str) -> tuple[object, object]:
    text = _strip_bodies(line.replace("\\\n", " "))
    return simple(_plain_commands(text)), simple(_parsed_commands(text))


def assert_plain_lines_read_as_bashlex_reads_them(lines: list[str]) -> None:
    plain = 0
    for line in lines:
        fast, parsed = plain_and_parsed(line)
        if fast is not None:
            plain += 1
            assert fast == parsed, line
    # most agent commands are plain: the scan, not bashlex, reads them
    assert plain > 0.9 * len(lines), (plain, len(lines))


def test_real_plain_lines_read_as_bashlex_reads_them() -> None:
    assert_plain_lines_read_as_bashlex_reads_them(real_command_lines())


@pytest.mark.parametrize(("line", "plain"), [
    ("sed -n '1,50p' a.py", [(["sed", "-n", "1,50p", "a.py"], [])]),
    ('grep -n "foo bar" x.py | head -5', [(["grep", "-n", "foo bar", "x.py"], []), (["head", "-5"], [])]),
    ("X=1 cd src && ls", [(["cd", "src"], []), (["ls"], [])]),  # an assignment is no word
    ("> f X=1 cat", [(["X=1", "cat"], [(">", "f")])]),  # ... except after a redirect, for bashlex
    ("cat a 2>/dev/null; echo a2>y 2>&1", [(["cat", "a"], [(">", "/dev/null")]), (["echo", "a2"], [(">", "y")])]),
    ("ls >> f < g >&h >|i &>j", [(["ls"], [(">>", "f"), ("<", "g"), (">&", "h"), (">|", "i"), ("&>", "j")])]),
    ("cat a\nls b\n\ncat c", [(["cat", "a"], []), (["ls", "b"], []), (["cat", "c"], [])]),  # a newline is a `;`
    ("cat a &&\n  ls |\nwc", [(["cat", "a"], []), (["ls"], []), (["wc"], [])]),  # ... or the line goes on
    ("ls\n;cat", None),
    ("ls # x", None),  # comments: bashlex reads `#` its own way
    ("--x='a b' c", None),  # `=` in the first word that is no assignment: bashlex decides
    ("'a''b'", None),  # two quoted parts in one word: bashlex unquotes them its own way
    ("--x='a\\b'", None),  # ... and a backslash in a quoted part after other characters
    ("sed -i 's/a\\*b/c/' f", [(["sed", "-i", "s/a\\*b/c/", "f"], [])]),  # a word that is one quoted part
    ("python -c \"print('x')\"", [(["python", "-c", "print('x')"], [])]),
    ("echo 2> 2>f", None),
    ("2>f echo", None),
    ("a |& b", None),
    ("a && > f", None),
    ("a &&", None),
    ("for f in a b; do cat $f; done", None),
    ("echo $HOME", None),
    ("cat a # note", None),
    ("cat a >&-", None),
    ("cd ~ && X=~/a ls", None),
])
def test_plain_scan_cases(line: str, plain: object) -> None:
    fast, parsed = plain_and_parsed(line)
    assert fast == plain
    if fast is not None:
        assert fast == parsed


@pytest.mark.slow
def test_calibration_plain_lines_read_as_bashlex_reads_them() -> None:
    tarball = REAL.parent / "calibration" / "mini-swe-agent-gemini-3-pro-swebench.tar.gz"
    lines: list[str] = []
    with tarfile.open(tarball) as tar:
        for member in tar:
            if member.name.endswith(".traj.json"):
                data = tar.extractfile(member).read()  # type: ignore[union-attr]
                for m in json.loads(data)["messages"]:
                    if m["role"] == "assistant":
                        lines += re.findall(r"```bash\s*\n(.*?)\n```", m["content"], re.S)
    assert len(lines) > 5000
    assert_plain_lines_read_as_bashlex_reads_them(lines)
