"""Read a shell command line into its commands, each with a verb, an effect and the files or URLs it is about.

`read_command_line("cd src && nl -ba f.py | sed -n '1,5p'")` gives `(cd: other, nl: read src/f.py, sed: read)`.
Parsing uses bashlex; where bashlex gives up (it raises on some valid bash, and on unbalanced quotes) a
plain `shlex` split on `&&`, `||`, `;`, `|` and newlines takes over, so any text gives an answer and never
an exception. Plain lines (words, simple quoting, `&&`, `||`, `|`, `;`, redirects: most agent commands)
are read by a one-pass scan that gives bashlex's answer about twenty times faster. Results are cached per
distinct line (bounded LRU): agents repeat their commands a lot.

Paths are normalised (`./a` → `a`, `a/../b` → `b`) but stay relative: the run's working directory is not
known, except that a `cd D` earlier in the same line applies to what follows it.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, final

__all__ = ["EDITOR_EFFECTS", "EFFECTS", "Command", "Effect", "normalise_path", "read_command_line"]

Effect = Literal["read", "search", "list", "write", "revert", "run", "other"]
EFFECTS: Final = ("read", "search", "list", "write", "revert", "run", "other")

# longer lines skip bashlex (its parser is recursive and slow on huge inputs); shlex is linear
MAX_BASHLEX_CHARS: Final = 8_000
# longer lines are read from their first this many characters only (see `_simple_commands`)
MAX_READ_CHARS: Final = 32_768
CACHE_SIZE: Final = 4_096


@final
@dataclass(frozen=True, slots=True)
class Command:
    """One command of a line. `on_open` marks SWE-agent commands that act on the file it has open
    (`goto`, `edit`, `scroll_down`, ...): the run fills in that file (see `RunContext.target`)."""

    verb: str
    effect: Effect
    targets: tuple[str, ...] = ()
    on_open: bool = False


# ---- splitting a line into simple commands ------------------------------------------------------------
@dataclass(slots=True)
class _Simple:
    words: list[str]
    redirects: list[tuple[str, str]]  # (operator, file)


_HEREDOC: Final = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")


def _strip_bodies(line: str, limit: int = MAX_READ_CHARS) -> str:
    """Drop here-document bodies and SWE-agent `edit` bodies: they are data, not commands (and bashlex
    mis-parses quoted delimiters such as `<<'EOF'`). Only the first `limit` characters of what is left are
    sure to be kept (the rest is read no further); a body is skipped by one regex search, not line by line,
    so the cost follows the lines kept, not the size of the line."""
    if "<<" not in line and "end_of_edit" not in line:
        return line
    out: list[str] = []
    size = 0  # characters kept so far, newlines between lines included
    pos, end_at = 0, len(line)
    while pos <= end_at and size <= limit:
        newline = line.find("\n", pos)
        stop = end_at if newline < 0 else newline
        current = line[pos:stop]
        kept = _HEREDOC.sub("", current)
        out.append(kept)
        size += len(kept) + 1
        pos = stop + 1
        ends = [m.group(3) for m in _HEREDOC.finditer(current)]
        if current.lstrip().startswith("edit ") or current.strip() == "edit":
            ends.append("end_of_edit")
        for end in ends:
            # the delimiter is a line that is `end` once stripped of whitespace (as `str.strip` strips);
            # it is skipped too
            found = _delimiter(end).search(line, pos) if pos <= end_at else None
            pos = end_at + 1 if found is None else found.end() + 1
    return "\n".join(out)


@functools.lru_cache(maxsize=64)
def _delimiter(end: str) -> re.Pattern[str]:
    return re.compile(r"^[^\S\n]*" + re.escape(end) + r"[^\S\n]*$", re.MULTILINE)


def _bashlex_commands(line: str) -> list[_Simple]:
    # imported on first use: bashlex builds its parser tables at import (about 0.25 s), which every
    # `import pytest_loopguard` and pytest start-up would pay even when no shell line is ever read
    import bashlex

    out: list[_Simple] = []

    def visit(node: Any) -> None:
        if node.kind != "command":
            for part in _children(node):
                if part.kind not in ("reservedword", "word", "assignment", "redirect", "operator", "pipe"):
                    visit(part)
            return
        words: list[str] = []
        redirects: list[tuple[str, str]] = []
        for part in node.parts:
            if part.kind == "word":
                words.append(part.word)
                for sub in getattr(part, "parts", ()):
                    if sub.kind in ("commandsubstitution", "processsubstitution"):
                        visit(sub.command)
            elif part.kind == "redirect" and part.type in _BASHLEX_REDIRECTS and _is_word(part.output):
                redirects.append((part.type, part.output.word))
        out.append(_Simple(words, redirects))

    for tree in bashlex.parse(line):
        visit(tree)
    return out


def _is_word(node: Any) -> bool:
    return not isinstance(node, int) and node is not None and node.kind == "word"


def _children(node: Any) -> Iterator[Any]:
    for attr in ("parts", "list"):
        value = getattr(node, attr, None)
        if isinstance(value, list):
            yield from value
    command = getattr(node, "command", None)
    if command is not None and not isinstance(command, str):
        yield command


_BASHLEX_REDIRECTS: Final = frozenset({">", ">>", ">|", "&>", "<", ">&"})
_REDIRECT_OPS: Final = frozenset({">", ">>", ">|", "&>", "&>>", "<"})
_SEPARATORS: Final = frozenset({"&&", "||", ";", "&", ";;"})


def _shlex_commands(line: str) -> list[_Simple]:
    out: list[_Simple] = []
    for raw in line.split("\n"):
        try:
            lexer = shlex.shlex(raw, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:  # unbalanced quotes: words as written
            tokens = raw.split()
        current = _Simple([], [])
        pending: str | None = None
        for token in tokens:
            if pending is not None:
                if pending != ">&":
                    current.redirects.append((pending, token))
                pending = None
            elif token in _SEPARATORS or token == "|":
                if current.words:
                    out.append(current)
                current = _Simple([], [])
            elif token in _REDIRECT_OPS or token in (">&", "<<", "<<<"):
                pending = token
            elif token in ("(", ")", "{", "}"):
                continue
            else:
                current.words.append(token)
        if current.words:
            out.append(current)
    return out


# Plain lines: words of letters, digits, `_./,:=+@%^~*?[]-` and at most one quoted part (single-quoted
# without `\\`, `"` or a newline; double-quoted also without `'`, `$`, a backquote or `!`: bashlex unquotes
# others its own way; a word that is only a quoted part may hold backslashes and the other quote), `&&`,
# `||`, `|`, `;`, newlines and redirects; no comments (bashlex reads `#` its own way). Most agent commands
# are such lines; bashlex takes about 1.4 ms for one of them, this scan about 65 µs (the real lines, on a
# loaded machine), with the same answer (tests compare the two on every real command line and random ones).
_PLAIN_TOKEN: Final = re.compile(
    r"(?P<space>[ \t]+)"
    r"|(?P<newline>\n)"
    r"|(?P<op>&&|\|\||[|;])"
    r"|(?P<redirect>>>|>\||>&|&>|>|<)"
    r"|(?P<word>[A-Za-z0-9_./,:=+@%^~*?\[\]-]+(?:'[^'\\\n\"]*'|\"[^\"'$`\\!\n]*\")?[A-Za-z0-9_./,:=+@%^~*?\[\]-]*"
    r"|(?:'[^'\\\n\"]*'|\"[^\"'$`\\!\n]*\")[A-Za-z0-9_./,:=+@%^~*?\[\]-]*"
    # a word that is one quoted part and nothing else: bashlex unquotes it as bash does, backslashes and all
    r"|'[^'\n]*'|\"[^\"$`\\!\n]*\")"
)
_AFTER_WORD: Final = frozenset(" \t\n|&;<>")
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[^~]*$")
# words that may open or close a compound command where they stand: such lines go to bashlex
_RESERVED: Final = frozenset({"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
                              "do", "done", "in", "function", "time", "coproc", "[[", "]]"})


def _unquoted(raw: str) -> str:
    if raw[0] in "'\"" and raw[-1] == raw[0] and len(raw) > 1 and raw.count(raw[0]) == 2:
        return raw[1:-1]  # one quoted part and nothing else (the only form that may hold the other quote)
    for quote in ("'", '"'):
        at = raw.find(quote)
        if at >= 0:  # one quoted part at most (the token's pattern)
            close = raw.index(quote, at + 1)
            return raw[:at] + raw[at + 1:close] + raw[close + 1:]
    return raw


def _plain_commands(text: str) -> list[_Simple] | None:
    """The simple commands of a plain line as bashlex reads them, or None when the line is not plain
    (bashlex reads it then). Where this scan is unsure of bashlex's reading, it gives up rather than guess."""
    out: list[_Simple] = []
    words: list[str] = []
    redirects: list[tuple[str, str]] = []
    started = False  # the current command has a word or an assignment
    redirected = False  # the current command has a redirect (kept or not)
    prefix = True  # nothing but assignments so far: `X=1 cmd`
    pending: str | None = None  # a redirect waiting for its target
    fd_word = False  # the last token was a word of digits only, right before this one
    dangling = False  # the last operator was `&&`, `||` or `|`: a command must follow
    pos, end = 0, len(text)
    match = _PLAIN_TOKEN.match
    while pos < end:
        m = match(text, pos)
        if m is None or m.end() == pos:  # a character no plain line has
            return None
        pos = m.end()
        kind = m.lastgroup
        if kind == "space":
            fd_word = False
            continue
        if kind == "newline" and pending is None:
            fd_word = False
            if not (started or redirected):
                continue  # a blank line, or the line goes on after `&&`, `||`, `|` or `;`
            kind = "op"  # a newline ends a command as `;` does
        if kind == "word":
            raw = m.group()
            if pos < end and text[pos] not in _AFTER_WORD:  # quoted parts run on (`'a''b'`): bashlex's own way
                return None
            if pending is not None:  # the redirect's target
                if raw.isdigit() and pos < end and text[pos] in "<>&":
                    return None  # `2> 2>f`: digits that are the next redirect's descriptor
                if pending != ">&":
                    redirects.append((pending, _unquoted(raw)))
                elif not raw.isdigit():  # `2>&1` copies a descriptor (no file); `>&-` closes one
                    if raw.startswith("-"):
                        return None
                    redirects.append((pending, _unquoted(raw)))
                pending = None
                continue
            if raw in _RESERVED or _unquoted(raw) in _RESERVED:
                return None
            started = True
            dangling = False
            if prefix and "=" in raw:
                if _ASSIGNMENT.match(raw) is None:
                    return None
                continue  # an assignment is no word of the command
            prefix = False
            words.append(_unquoted(raw))
            fd_word = raw.isdigit()
            continue
        if pending is not None:
            return None  # a redirect without its target
        if kind == "redirect":
            if fd_word:  # `cat 2>`: the digits name a descriptor, not a word
                if m.group().startswith("&") or len(words) == 1:  # `2&>`, or digits as the command name
                    return None
                words.pop()
            pending = m.group()
            redirected = True
            prefix = fd_word = False  # bashlex reads `X=1` after a redirect as a word
            continue
        # an operator ends the command; one with nothing but redirects, or none at all, is bashlex's to judge
        if not words and (redirected or not started):
            return None
        out.append(_Simple(words, redirects))
        words, redirects, started, redirected, prefix, fd_word = [], [], False, False, True, False
        dangling = m.group() not in (";", "\n")
        if text.startswith("&", pos):
            return None  # `|&`, `;&`: operators of their own
    if pending is not None or dangling or (not words and redirected) or not (started or out):
        return None  # `a &&` with nothing after it, a command of redirects only, nothing at all
    if started:
        out.append(_Simple(words, redirects))
    return out


def _parsed_commands(text: str) -> list[_Simple]:
    """The simple commands of a line by bashlex, or by the `shlex` split where bashlex gives up."""
    if len(text) <= MAX_BASHLEX_CHARS:
        try:
            return _bashlex_commands(text)
        except Exception:  # bashlex raises many kinds (even RecursionError) on valid bash: fall back
            pass
    return _shlex_commands(text)


def _simple_commands(line: str) -> list[_Simple]:
    # a line is read from its first MAX_READ_CHARS characters (here-document bodies left out): the verb and
    # files of a command of megabytes are at its start, and the `shlex` split costs about 1 µs a character
    # (more on one long word), which on the 8 MiB a trace's string may hold would take seconds
    text = _strip_bodies(line.replace("\\\n", " "), MAX_READ_CHARS)[:MAX_READ_CHARS]
    plain = _plain_commands(text) if len(text) <= MAX_BASHLEX_CHARS else None
    return plain if plain is not None else _parsed_commands(text)


# ---- what each command does ---------------------------------------------------------------------------
_READERS: Final = frozenset({"cat", "head", "tail", "nl", "less", "more", "bat", "wc", "tac", "xxd", "od",
                             "file", "stat", "diff", "cmp", "strings", "hexdump"})
_SEARCHERS: Final = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep"})
_LISTERS: Final = frozenset({"ls", "tree", "du", "dir"})
_WRITERS: Final = frozenset({"touch", "mkdir", "rm", "rmdir", "tee", "truncate", "chmod", "ln", "patch"})
_RUNNERS: Final = frozenset({"node", "ruby", "perl", "php", "bash", "sh", "zsh", "source", "."})
_TOOLS: Final = frozenset({"make", "npm", "npx", "yarn", "pnpm", "cargo", "go", "tox", "nox", "mvn", "gradle",
                           "java", "javac", "gcc", "g++", "clang", "cmake", "pip", "pip3", "uv", "poetry"})
_WRAPPERS: Final = frozenset({"sudo", "time", "nohup", "env", "command", "builtin", "exec", "stdbuf"})
# options that take a value as the next word, per verb (a value is never a target)
_VALUE_OPTIONS: Final[dict[str, frozenset[str]]] = {
    "head": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "tail": frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--pid"}),
    "nl": frozenset({"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"}),
    "bat": frozenset({"-r", "--line-range", "-l", "--language", "-H", "--highlight-line"}),
    "grep": frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "--regexp", "--file", "--max-count", "--include",
                       "--exclude", "--exclude-dir", "--context", "--after-context", "--before-context"}),
    "rg": frozenset({"-e", "-f", "-g", "--glob", "-t", "--type", "-T", "--type-not", "-m", "-A", "-B", "-C",
                     "-M", "-j", "-d", "--max-depth", "--max-count", "--regexp", "--file", "--iglob"}),
    "sed": frozenset({"-e", "-f", "--expression", "--file", "-l", "--line-length"}),
    "awk": frozenset({"-f", "-F", "-v", "--file", "--field-separator", "--assign"}),
    "tree": frozenset({"-L", "-I", "-P", "--filelimit"}),
    "cp": frozenset({"-t", "-S", "--suffix", "--target-directory"}),
    "pytest": frozenset({"-k", "-m", "-p", "-c", "-o", "-n", "-W", "--rootdir", "--maxfail", "--tb",
                         "--deselect", "--ignore", "--durations", "--basetemp", "-r"}),
    "python": frozenset({"-W", "-X", "-Q"}),
    "git": frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"}),
    "curl": frozenset({"-o", "-H", "-d", "-X", "-u", "-A", "-e", "-b", "-c", "-F", "-m", "--output", "--header",
                       "--data", "--request", "--user", "--user-agent", "--max-time", "--data-raw", "-w"}),
    "wget": frozenset({"-O", "-o", "-P", "--output-document", "--header", "-U", "--user-agent"}),
}
_VALUE_OPTIONS["mv"] = _VALUE_OPTIONS["cp"]
_VALUE_OPTIONS["egrep"] = _VALUE_OPTIONS["fgrep"] = _VALUE_OPTIONS["zgrep"] = _VALUE_OPTIONS["grep"]
_VALUE_OPTIONS["ag"] = _VALUE_OPTIONS["ack"] = _VALUE_OPTIONS["grep"]
_PYTHON: Final = re.compile(r"python(?:\d+(?:\.\d+)?)?$")
# SWE-agent's own file viewer: these act on the file `open` (or `create`) made current
_SWE_READ_OPEN: Final = frozenset({"goto", "scroll_up", "scroll_down"})
_SWE_WRITE_OPEN: Final = frozenset({"edit", "insert", "append"})
# editor tools as commands (`str_replace_editor view F`) and as structured calls ({command: view, path: F})
EDITOR_EFFECTS: Final[dict[str, Effect]] = {
    "view": "read", "create": "write", "str_replace": "write", "insert": "write", "undo_edit": "revert",
    "write": "write", "append": "write", "edit": "write", "read": "read",
}
_GIT_EFFECTS: Final[dict[str, Effect]] = {
    "checkout": "revert", "restore": "revert", "reset": "revert", "stash": "revert",
    "diff": "read", "show": "read", "log": "read", "blame": "read", "status": "list", "ls-files": "list",
    "grep": "search", "apply": "write", "am": "write", "rm": "write", "mv": "write",
}
_GIT_VALUE_OPTIONS: Final = frozenset({"-b", "-B", "--orphan", "-s", "--source", "-m", "-n", "-U", "--since",
                                       "--until", "--author", "-L", "--format", "-e", "--unified"})
_UNKNOWN_DIR: Final = "\x00"  # a `cd` we cannot follow: later paths stay as written


def _operands(words: Sequence[str], verb: str) -> list[str]:
    """The non-option words after the command name (options and their values dropped; `--` ends options)."""
    takes_value = _VALUE_OPTIONS.get(verb, frozenset())
    out: list[str] = []
    skip = False
    only_operands = False
    for word in words:
        if skip:
            skip = False
        elif only_operands or word == "-" or not word.startswith("-"):
            out.append(word)
        elif word == "--":
            only_operands = True
        elif word in takes_value:
            skip = True
    return out


def _has_option(words: Sequence[str], *options: str) -> bool:
    return any(w in options or any(w.startswith(o + "=") for o in options if o.startswith("--")) for w in words)


def _path(word: str, cwd: str | None) -> str | None:
    """A normalised target, or None for words that name no file we can know (`-`, `$VAR`, `/dev/null`)."""
    if not word or word == "-" or "$" in word or "`" in word or word.startswith("/dev/") or word.startswith("~"):
        return None
    if "://" in word:
        return word
    if cwd is not None and cwd != _UNKNOWN_DIR and not word.startswith("/"):
        word = posixpath.join(cwd, word)
    norm = posixpath.normpath(word)
    return "." if norm in ("", ".") else norm


def normalise_path(word: str) -> str | None:
    """A path or URL as a target (`./a/../b.py` → `b.py`), or None for `-`, `$VAR`, `~/x`, `/dev/...`, ''."""
    return _path(word, None)


def _is_pathlike(word: str) -> bool:
    # git: a revision (`HEAD~1`, `a..b`, `main`) is not a path; a word with a `/` or an extension is
    return not any(mark in word for mark in ("..", "~", "^", "@{")) and ("/" in word or "." in word)


def _command(words: list[str], cwd: str | None) -> Command:
    while words and (re.match(r"^[A-Za-z_]\w*=", words[0]) or words[0] in _WRAPPERS):
        words = words[1:]
    if words and words[0] == "timeout":
        words = words[2:]
    if not words:
        return Command("", "other")
    head, rest = words[0], words[1:]
    name = posixpath.basename(head)
    if _PYTHON.match(name):
        return _python(rest, cwd)

    def paths(items: Sequence[str]) -> tuple[str, ...]:
        return _paths(items, cwd)

    if name in _READERS:
        return Command(name, "read", paths(_operands(rest, name)))
    if name == "sed":
        ops = _operands(rest, "sed")
        if not _has_option(rest, "-e", "-f", "--expression", "--file") and ops:
            ops = ops[1:]  # the script
        in_place = any(w.startswith("--in-place") or (w.startswith("-") and not w.startswith("--") and "i" in w)
                       for w in rest if w not in _VALUE_OPTIONS["sed"])
        return Command("sed", "write" if in_place else "read", paths(ops))
    if name == "awk":
        ops = _operands(rest, "awk")
        return Command("awk", "read", paths(ops if _has_option(rest, "-f", "--file") else ops[1:]))
    if name in _SEARCHERS:
        ops = _operands(rest, name)
        if not _has_option(rest, "-e", "-f", "--regexp", "--file") and not (name == "rg" and "--files" in rest):
            ops = ops[1:]  # the pattern
        return Command("rg" if name == "rg" else "grep", "search", paths(ops))
    if name == "find":
        roots = []
        for w in rest:
            if w.startswith("-") or w in ("(", "!", ")"):
                break
            roots.append(w)
        return Command("find", "list", paths(roots))
    if name in _LISTERS:
        return Command(name, "list", paths(_operands(rest, name)))
    if name in ("cp", "mv"):
        return _copy(name, _operands(rest, name), cwd)
    if name in _WRITERS:
        ops = _operands(rest, name)
        return Command(name, "write", paths(ops[1:] if name == "chmod" else ops))
    if name == "git":
        return _git(rest, cwd)
    if name in ("pytest", "py.test"):
        return Command("pytest", "run", paths(_test_files(rest)))
    if name in ("bash", "sh", "zsh") and rest and rest[0] == "-c":
        return Command(name, "run")  # the inner line is read by the caller
    if name in _RUNNERS:
        ops = _operands(rest, name)
        return Command(name, "run", paths(ops[:1]))
    if name in _TOOLS:
        return Command(name, "run")
    if name in ("curl", "wget"):
        return Command(name, "read", tuple(w for w in _operands(rest, name) if "://" in w or "." in w))
    if name == "open":
        return Command("open", "read", paths(rest[:1]))
    if name == "create":
        return Command("create", "write", paths(rest[:1]))
    if name in _SWE_READ_OPEN:
        return Command(name, "read", on_open=True)
    if name in _SWE_WRITE_OPEN:
        return Command(name, "write", on_open=True)
    if name == "search_file":
        return Command(name, "search", paths(rest[1:2]), on_open=len(rest) < 2)
    if name == "search_dir":
        return Command(name, "search", paths(rest[1:2]))
    if name == "find_file":
        return Command(name, "list", paths(rest[1:2]))
    if name == "str_replace_editor" and rest:
        sub = rest[0]
        return Command(sub, EDITOR_EFFECTS.get(sub, "other"), paths(_operands(rest[1:], name)[:1]))
    if "/" in head:  # ./script.sh, bin/run: runs that file
        return Command(name, "run", paths([head]))
    return Command(name, "other")


def _python(rest: list[str], cwd: str | None) -> Command:
    ops = _operands(rest, "python")
    if "-c" in rest:
        return Command("python -c", "run")
    if "-m" in rest:
        at = rest.index("-m")
        module = rest[at + 1] if at + 1 < len(rest) else ""
        if module in ("pytest", "py.test"):
            return Command("pytest", "run", _paths(_test_files(rest[at + 2:]), cwd))
        return Command(f"python -m {module}", "run")
    return Command("python", "run", _paths(ops[:1], cwd))


def _test_files(words: Sequence[str]) -> list[str]:
    # a node id names its file: `tests/test_a.py::test_b[1]` is about tests/test_a.py
    return [w.split("::", 1)[0] for w in _operands(words, "pytest")]


def _paths(words: Sequence[str], cwd: str | None) -> tuple[str, ...]:
    return tuple(p for p in (_path(w, cwd) for w in words) if p is not None)


def _copy(verb: str, ops: list[str], cwd: str | None) -> Command:
    """`cp SRC DST` writes DST; it is a revert of DST when SRC is a saved copy of it: `DST.backup`,
    `DST.orig`, `DST.fixed`, `DST~` (DST's name plus any suffix) or a same-named file from elsewhere."""
    if len(ops) < 2:
        return Command(verb, "write", _paths(ops, cwd))
    *sources, dest = ops
    if len(sources) > 1 or dest.endswith("/"):
        return Command(verb, "write", _paths([posixpath.join(dest, posixpath.basename(s)) for s in sources], cwd))
    src_name, dest_name = posixpath.basename(sources[0]), posixpath.basename(dest.rstrip("/"))
    revert = bool(dest_name) and (src_name == dest_name or src_name.startswith(dest_name + ".")
                                  or src_name == dest_name + "~")
    return Command(verb, "revert" if revert else "write", _paths([dest], cwd))


def _git(rest: list[str], cwd: str | None) -> Command:
    i = 0
    while i < len(rest) and rest[i].startswith("-"):  # global options: -C DIR, -c k=v, --no-pager
        if rest[i] == "-C" and i + 1 < len(rest):
            cwd = _chdir(cwd, rest[i + 1])
        i += 2 if rest[i] in _VALUE_OPTIONS["git"] else 1
    if i >= len(rest):
        return Command("git", "other")
    sub, args = rest[i], rest[i + 1:]
    verb = f"git {sub}"
    effect = _GIT_EFFECTS.get(sub, "other")
    if sub in ("checkout", "switch") and _has_option(args, "-b", "-B", "--orphan"):
        return Command(verb, "other")
    if sub == "grep":
        ops = _operands(args, "grep")
        return Command(verb, "search", _paths(ops[1:], cwd))
    if "--" in args:
        files = [w for w in args[args.index("--") + 1:]]
    else:
        files, skip = [], False
        for w in args:
            if skip:
                skip = False
            elif w in _GIT_VALUE_OPTIONS:
                skip = True
            elif not w.startswith("-") and _is_pathlike(w):
                files.append(w)
    if effect == "revert" and sub == "checkout" and not files:
        return Command(verb, "other")  # a branch switch
    return Command(verb, effect, _paths(files, cwd))


def _chdir(cwd: str | None, target: str) -> str:
    if target.startswith("/"):
        return posixpath.normpath(target)
    if cwd == _UNKNOWN_DIR or "$" in target or target.startswith("~") or target == "-":
        return _UNKNOWN_DIR
    return posixpath.normpath(posixpath.join(cwd, target)) if cwd else posixpath.normpath(target)


def _inner_line(words: list[str]) -> str | None:
    """The command line of `bash -c '...'` / `sh -c '...'`."""
    if len(words) >= 3 and posixpath.basename(words[0]) in ("bash", "sh", "zsh") and words[1] in ("-c", "-lc"):
        return words[2]
    return None


def _read(line: str, depth: int) -> tuple[Command, ...]:
    out: list[Command] = []
    cwd: str | None = None
    for simple in _simple_commands(line):
        words = simple.words
        inner = _inner_line(words)
        if inner is not None and depth < 3:
            out.extend(_read(inner, depth + 1))
            continue
        if words and words[0] in ("cd", "pushd"):
            cwd = _chdir(cwd, words[1]) if len(words) > 1 else _UNKNOWN_DIR
            out.append(Command(words[0], "other"))
            continue
        command = _command(words, cwd)
        if command.verb or command.targets:
            out.append(command)
        for op, target in simple.redirects:
            path = _path(target, cwd)
            if path is None or path.isdigit():
                continue
            out.append(Command(command.verb or op, "read" if op == "<" else "write", (path,)))
    return tuple(out)


@functools.lru_cache(maxsize=CACHE_SIZE)
def read_command_line(line: str) -> tuple[Command, ...]:
    """The commands of a shell command line, in order. Never raises; text that is no command gives ()."""
    try:
        return _read(line, 0)
    except RecursionError:  # pathological nesting: nothing can be said about this line
        return ()
