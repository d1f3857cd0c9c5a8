"""aider chat histories (`.aider.chat.history.md`): sessions, user turns, edits, shell commands and reflections.

aider appends every session to one Markdown file per repository (its `io.py`, `append_chat_history`):
`# aider chat started at <local time>` opens a session; each line a person typed is written as `#### <line>`
followed by two spaces (a multi-line input is consecutive `#### ` lines, an empty input `#### <blank>`);
what aider itself prints (notices, confirmations and their answers, errors) is a blockquote line `> <text>`
followed by two spaces, and a notice of several lines has only its first line quoted, the rest written as
they are up to the line ending in two spaces; the model's replies are written as they are, unquoted.

One file is one run: its sessions follow each other, each opened by a `user` message (`x-session`: 1, 2...)
because a new session starts from an empty context as a new prompt does. Call positions therefore count
from the start of the file, whatever session a loop is in. What becomes a step:

| the history                                          | the trace                                          |
|------------------------------------------------------|----------------------------------------------------|
| `#### ` lines (one turn; `/cmd` and `!cmd` included) | `user` message, `origin: user` (`x-command`)       |
| `> Tokens: N sent, M received.` after a reply        | `llm` step: the reply as its text, N and M tokens  |
| `> litellm.XxxError: ...` (a failed model request)   | unmapped (aider retries or gives up; the run goes  |
|                                                      | on, as the session does)                           |
| `> Applied edit to PATH`                             | `edit {path}` call                                 |
| a failed edit (FAILED_EDIT_MARKERS)                  | `edit` call whose result is the error; args: the   |
|                                                      | file the error names (`path`, or `paths`), else {} |
| `> Skipping edits to PATH` (the person said no)      | `edit {path}` call denied by the user              |
| `> Run shell command(s)? ... y` then `> Running CMD` | one `bash {command}` call per `Running` line       |
| `> Run shell command(s)? ... n` (or `d`)             | the proposed commands as `bash` calls denied       |
| a failure aider sends back to the model (reflection) | `origin: harness` message (`x-reflection`)         |
| `> Only N reflections allowed, stopping.`            | `origin: harness` message (`x-reflections-stopped`) |
| `> Commit SHA MESSAGE` (aider's auto-commits)        | the header's `x-commits` (aider's act, not a call) |

Everything else aider prints (banner, files added, other confirmations) is listed as unmapped. No line is an
error, so a history cut anywhere still imports; only a file that is empty, not UTF-8, or without a session
line is refused. `source.index` is the 1-based line number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from ..core._limits import MAX_INT
from ..errors import TraceError
from .base import ImportedRun, Importer, Source
from .build import ImportedRunBuilder, number_in_text, result

__all__ = ["FAILED_EDIT_MARKERS", "FILE_NAME", "AiderChatHistory"]

FILE_NAME: Final = ".aider.chat.history.md"
SESSION_RE: Final = re.compile(r"^# aider chat started at (.+?)\s*$")

# The texts aider prints when an edit the model wrote could not be applied; each starts one failed `edit`
# call (docs/import.md lists them too). The first is the one aider 0.5x-0.86 prints for SEARCH/REPLACE,
# udiff and whole-file replies alike; the others come from its generic exception path and older versions.
FAILED_EDIT_MARKERS: Final = (
    "The LLM did not conform to the edit format.",
    "Exception while updating files:",
    "Failed to apply edit to ",
)
# the lines that follow a failure and belong to it: the help link and the error aider sends back
EDIT_ERRORS_URL: Final = "https://aider.chat/docs/troubleshooting/edit-errors.html"
BLOCKS_FAILED_RE: Final = re.compile(r"^# (\d+) SEARCH/REPLACE blocks? failed to match!")
BLOCKS_APPLIED_RE: Final = re.compile(r"^# The other (\d+) SEARCH/REPLACE blocks? were applied successfully\.", re.M)
FAILED_FILE_RE: Final = re.compile(r"^## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in "
                                   r"(.+?)\s*$", re.M)
STOP_RE: Final = re.compile(r"^Only (\d+) reflections allowed, stopping\.$")

APPLIED_RE: Final = re.compile(r"^Applied edit to (.+?)$")
DRY_RUN_RE: Final = re.compile(r"^Did not apply edit to (.+?) \(--dry-run\)$")
SKIPPED_RE: Final = re.compile(r"^Skipping edits to (.+?)$")
# a confirmation and the answer aider logged after it: `Question? (Y)es/(N)o... [Yes]: y`
ANSWER_RE: Final = re.compile(r"\(Y\)es/\(N\)o[^\]]*\[[^\]]*\]:\s*(\S*)\s*$")
SHELL_ASK_RE: Final = re.compile(r"^Run shell commands?\? \(Y\)es/")
RUNNING_RE: Final = re.compile(r"^Running (.+)$", re.S)
LINT_ASK_RE: Final = re.compile(r"^(?:Attempt to fix lint errors\?|Fix lint errors in .+\?) \(Y\)es/")
TEST_ASK_RE: Final = re.compile(r"^Attempt to fix test errors\? \(Y\)es/")
LINT_OUTPUT_START: Final = "# Fix any errors below, if possible."
TOKENS_RE: Final = re.compile(r"^Tokens: ([\d.]+)([kM]?) sent,.*?([\d.]+)([kM]?) received\.")
LLM_ERROR_RE: Final = re.compile(r"^litellm\.\w+(?:Error|Exception)\b")
COMMIT_RE: Final = re.compile(r"^Commit ([0-9a-f]{7,40}) (.*)$")
VERSION_RE: Final = re.compile(r"^Aider v(\S+)$")
MODEL_RE: Final = re.compile(r"^(?:Main model|Model): (\S+) with (\S+) edit format")
_SCALE: Final = {"": 1, "k": 1_000, "M": 1_000_000}
_OWN_LINES: Final = (TOKENS_RE, LLM_ERROR_RE, APPLIED_RE, DRY_RUN_RE, SKIPPED_RE, STOP_RE, SHELL_ASK_RE, COMMIT_RE)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One thing the history holds: a session start, a user turn, an aider line (with its continuation
    lines) or a stretch of the model's text; `line` is its first line (1-based)."""

    kind: str  # "session" | "user" | "aider" | "text"
    line: int
    text: str


def _is_user(line: str) -> bool:
    return line.startswith("####") and (len(line) == 4 or line[4] == " ") and line.endswith("  ")


def _is_aider(line: str) -> bool:
    return line.startswith("> ") or line.rstrip() == ">"


def _starts_entry(line: str) -> bool:
    return _is_aider(line) or _is_user(line) or SESSION_RE.match(line) is not None


def _entries(lines: list[str]) -> Iterator[_Entry]:
    """The history's lines grouped into entries (see the module docstring for how aider writes each)."""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        session = SESSION_RE.match(line)
        if session:
            yield _Entry("session", i + 1, session.group(1))
            i += 1
        elif _is_user(line):
            start, parts = i, []
            while i < n and _is_user(lines[i]):
                part = lines[i][5:-2]
                parts.append("" if part.strip() == "<blank>" else part.rstrip())
                i += 1
            text = "\n".join(parts).strip("\n")
            # aider logs an answer a confirmation group gave for the person as a `####` line
            yield _Entry("aider" if ANSWER_RE.search(text) else "user", start + 1, text)
        elif _is_aider(line):
            start, parts = i, [line[2:]]
            i += 1
            if not line.endswith("  "):  # only the first line of a notice of several lines is quoted
                while i < n and not _starts_entry(lines[i]):
                    parts.append(lines[i])
                    i += 1
                    if parts[-1].endswith("  "):
                        break
            yield _Entry("aider", start + 1, "\n".join(parts).rstrip())
        else:
            start = i
            while i < n and not _starts_entry(lines[i]):
                i += 1
            text = "\n".join(lines[start:i]).strip()
            if text:
                yield _Entry("text", start + 1, text)


def _tokens(number: str, scale: str) -> int | None:
    try:
        tokens = float(number) * _SCALE[scale]
    except ValueError:
        return None
    # "1" * 400 is a float of infinity, which round() refuses; past 2^53 it is no count either
    return round(tokens) if tokens <= MAX_INT else None


def _known(text: str) -> bool:
    """An aider line that is a step (or a fact) of its own, never the explanation of a failure before it."""
    return text.startswith(FAILED_EDIT_MARKERS) or any(p.match(text) for p in _OWN_LINES) or bool(
        ANSWER_RE.search(text))


def _answer(text: str) -> str:
    m = ANSWER_RE.search(text)
    return m.group(1).lower()[:1] if m else ""


def _run_id(source: Source) -> str:
    base = source.path.name if source.path is not None else source.name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    prefix = base[: -len(FILE_NAME)] if base.endswith(FILE_NAME) else base.removesuffix(".md")
    if not prefix.strip(".") and source.path is not None:
        prefix = source.path.resolve().parent.name  # `<repo>/.aider.chat.history.md`: the repository's name
    return f"aider-{prefix.strip('.') or 'chat'}"


class _Reader:
    """Turns the entries of one history into steps, keeping what a later line needs (the reply text waiting
    for its usage line, the failure waiting to be sent back, whether shell commands were allowed)."""

    def __init__(self, b: ImportedRunBuilder) -> None:
        self.b = b
        self.reply: list[str] = []  # the model's text since its last usage line
        self.reflection: tuple[int, str, str] | None = None  # (line, text, kind) aider will send back
        self.shell_allowed = False
        self.recent: list[_Entry] = []  # aider lines since the last user turn or reply
        self.sessions = 0
        self.versions: list[str] = []
        self.commits: list[dict[str, Any]] = []
        self.model: str | None = None

    def read(self, entries: list[_Entry]) -> None:
        k = 0
        while k < len(entries):
            entry = entries[k]
            if entry.kind == "session":
                self._session(entry)
            elif entry.kind == "user":
                self._user(entry)
            elif entry.kind == "text":
                self.reply.append(entry.text)
            else:
                k = self._aider(entries, k)
            k += 1
        if self.reply:
            self.b.skip(f"line {entries[-1].line}: model text without a usage line")

    def _new_prompt(self) -> None:
        if self.reply:
            self.b.skip("model text without a usage line (interrupted or failed)")
        self.reply, self.reflection, self.shell_allowed, self.recent = [], None, False, []

    def _session(self, entry: _Entry) -> None:
        self._new_prompt()
        self.sessions += 1
        self.b.message("user", f"aider chat started at {entry.text}", origin="user", index=entry.line,
                       x={"x-session": self.sessions, "x-started-at": entry.text})

    def _user(self, entry: _Entry) -> None:
        self._new_prompt()
        x: dict[str, Any] = {}
        head = entry.text.lstrip()
        if head.startswith(("/", "!")):  # the person's own command (`/code`, `/model`, `!ls`): never a call
            x["x-command"] = "!" if head.startswith("!") else head.split(None, 1)[0]
        self.b.message("user", entry.text, origin="user", index=entry.line, x=x)

    def _aider(self, entries: list[_Entry], k: int) -> int:
        """Read the aider line at `k` (and the lines that belong to it); returns the last index read."""
        entry = entries[k]
        text, line, b = entry.text, entry.line, self.b
        self.recent.append(entry)
        if m := TOKENS_RE.match(text):
            self._reflect()
            b.llm(index=line, input_tokens=_tokens(m.group(1), m.group(2)),
                  output_tokens=_tokens(m.group(3), m.group(4)), text="\n\n".join(self.reply),
                  x={"x-usage": text})
            self.reply, self.shell_allowed, self.recent = [], False, []
        elif LLM_ERROR_RE.match(text):
            # A failed request: aider retries it or gives up on the prompt, and the session goes on. Not an
            # `llm` step with an error, which would end the whole file's run on replay (one run per file).
            self._reflect()  # the request that failed was the one sending the failure back
            b.skip(f"line {line}: failed model request")
        elif m := APPLIED_RE.match(text):
            b.tool("edit", {"path": m.group(1)}, index=line, result=result(text))
        elif m := DRY_RUN_RE.match(text):
            b.tool("edit", {"path": m.group(1)}, index=line, result=result(text), x={"x-dry-run": True})
        elif m := SKIPPED_RE.match(text):
            b.not_run(b.tool("edit", {"path": m.group(1)}, index=line), "denied", text, by="user")
        elif text.startswith(FAILED_EDIT_MARKERS):
            return self._failed_edit(entries, k)
        elif m := STOP_RE.match(text):
            self.reflection = None
            stopped = number_in_text(m.group(1))
            b.message("user", text, origin="harness", index=line,
                      x={"x-reflections-stopped": stopped} if stopped is not None else None)
        elif SHELL_ASK_RE.match(text):
            self._shell_asked(entry)
        elif (m := RUNNING_RE.match(text)) and self.shell_allowed:
            b.tool("bash", {"command": m.group(1)}, index=line)
        elif LINT_ASK_RE.match(text) or TEST_ASK_RE.match(text):
            if _answer(text) in ("y", "a"):
                kind = "lint" if LINT_ASK_RE.match(text) else "test"
                self.reflection = (line, self._output_before(kind), kind)
        elif m := COMMIT_RE.match(text):
            self.commits.append({"line": line, "sha": m.group(1), "message": m.group(2)})
        elif m := VERSION_RE.match(text):
            if m.group(1) not in self.versions:
                self.versions.append(m.group(1))
        elif (m := MODEL_RE.match(text)) and self.model is None:
            self.model = m.group(1)
        else:
            b.skip(f"line {line}: {'confirmation' if ANSWER_RE.search(text) else 'aider notice'}")
        return k

    def _reflect(self) -> None:
        """aider asks the model again with the failure it is waiting to send back: a harness message."""
        if self.reflection is not None:
            at, said, kind = self.reflection
            self.b.message("user", said, origin="harness", index=at, x={"x-reflection": kind})
            self.reflection = None

    def _failed_edit(self, entries: list[_Entry], k: int) -> int:
        """A failed edit: the marker line and the aider lines after it that explain it (the help link, the
        error aider sends back to the model); one failed `edit` call naming the files the error names."""
        first = entries[k]
        detail: list[str] = []
        while k + 1 < len(entries) and entries[k + 1].kind == "aider":
            nxt = entries[k + 1].text
            if nxt in ("", EDIT_ERRORS_URL):
                k += 1
                continue
            # the next thing aider printed is the error it sends back, unless it is a line of its own
            if not first.text.startswith("Failed to apply edit to ") and not _known(nxt):
                detail.append(nxt)
                k += 1
            break
        said = "\n".join(detail)
        files = list(dict.fromkeys(FAILED_FILE_RE.findall(said)))
        if first.text.startswith("Failed to apply edit to "):
            files = [first.text.removeprefix("Failed to apply edit to ").strip()]
        args: dict[str, Any] = {"path": files[0]} if len(files) == 1 else {"paths": files} if files else {}
        x: dict[str, Any] = {}
        if (m := BLOCKS_FAILED_RE.match(said)) and (count := number_in_text(m.group(1))) is not None:
            x["x-blocks-failed"] = count
        if (m := BLOCKS_APPLIED_RE.search(said)) and (count := number_in_text(m.group(1))) is not None:
            x["x-blocks-applied"] = count
        error = first.text + ("\n" + said if said else "")
        self.b.tool("edit", args, index=first.line, result=result(error=error), x=x)
        self.reflection = (first.line, said or first.text, "edit")
        return k

    def _shell_asked(self, entry: _Entry) -> None:
        """`Run shell command(s)?`: a yes lets the `Running` lines that follow be calls; a no (or don't ask
        again) refuses the commands the model proposed, which aider printed just before the question."""
        self.shell_allowed = _answer(entry.text) in ("y", "a")
        if self.shell_allowed:
            return
        subject = self.recent[-2] if len(self.recent) >= 2 else None
        commands = [c.strip() for c in subject.text.split("\n") if c.strip()] if subject is not None else []
        for command in commands:
            step = self.b.tool("bash", {"command": command}, index=entry.line)
            self.b.not_run(step, "denied", entry.text, by="user")

    def _output_before(self, kind: str) -> str:
        """The lint (or test) output aider printed before asking to fix it: what it sends back if told yes."""
        lines = [e.text for e in self.recent[:-1]]
        if kind == "lint":
            starts = [i for i, t in enumerate(lines) if t.startswith(LINT_OUTPUT_START)]
            lines = lines[starts[-1]:] if starts else lines
        return "\n".join(lines).strip() or self.recent[-1].text


class AiderChatHistory(Importer):
    """aider's `.aider.chat.history.md`: one run per file, its sessions in order."""

    name: ClassVar[str] = "aider"
    title: ClassVar[str] = "an aider chat history"
    description: ClassVar[str] = "aider chat history (.aider.chat.history.md): sessions, edits, shell commands"

    def sniff(self, source: Source) -> bool:
        if source.is_dir:
            return False
        base = source.path.name if source.path is not None else source.name
        return base.endswith(FILE_NAME) or source.head.startswith("# aider chat started at ")

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        text = source.text
        if not text.strip():
            raise TraceError("the file is empty; expected an aider chat history", file=source.name)
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        entries = list(_entries(lines))
        if not any(e.kind == "session" for e in entries):
            raise TraceError("no '# aider chat started at' line; expected an aider chat history "
                             "(.aider.chat.history.md)", file=source.name)
        run_id = _run_id(source)
        b = ImportedRunBuilder(run_id, file=source.name, agent="aider")
        reader = _Reader(b)
        reader.read(entries)
        if reader.model:
            b.source["model"] = reader.model
        b.description = f"aider chat history {run_id.removeprefix('aider-')}: {reader.sessions} sessions"
        b.header_x["x-aider-versions"] = reader.versions or None
        b.header_x["x-sessions"] = reader.sessions
        b.header_x["x-commits"] = reader.commits or None
        yield b.build()
