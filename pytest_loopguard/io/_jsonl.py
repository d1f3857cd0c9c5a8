"""Reading a JSONL trace line by line from an untrusted file: the header, then each step with the loader's
checks (`_faststep` for the common well-formed line, the loader's own reader for anything else), in bounded
memory. The streaming replay (`_stream`) and the plugin read through it."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import IO, Any

from ..core._limits import MAX_FILE_BYTES
from ..core._model import Step, Trace
from ..core._safeload import open_regular, parse_json
from ..errors import TraceError, warn
from ._faststep import step_from_line
from ._format import loads, trace_from_mapping

__all__ = ["has_llm", "header", "objective", "open_regular", "rows", "steps"]


_BLOCK = 1 << 20  # read and decode a MiB at a time: per-line reads cost more than the JSON parse of a short line


def _blocks(handle: IO[bytes], path: str) -> Iterator[list[str]]:
    """Every line as text, a block of lines at a time: split at "\\n" only (as the loader splits) and
    decoded as strict UTF-8 a block of whole lines at once. A line is at most MAX_FILE_BYTES long (the
    loader's bound on a whole file); the file itself may be any length."""
    parts: list[bytes] = []  # the start of a line that runs past the blocks read so far
    held = 0
    offset = 0  # bytes of the file decoded so far (for the error on a bad byte)
    lineno = 0
    # a small file is read in one block of its own size: a MiB allocated per file costs more than its parse
    want = min(_BLOCK, os.fstat(handle.fileno()).st_size + 1)
    while True:
        block = handle.read(want)
        if not block:
            break
        cut = block.rfind(b"\n")
        if cut < 0:
            held += len(block)
            if held > MAX_FILE_BYTES:
                raise TraceError(f"line longer than {MAX_FILE_BYTES} bytes", file=path, line=lineno + 1)
            parts.append(block)
            continue
        if held + block.find(b"\n") > MAX_FILE_BYTES:  # only the first line can run past one block
            raise TraceError(f"line longer than {MAX_FILE_BYTES} bytes", file=path, line=lineno + 1)
        data = b"".join((*parts, block[:cut])) if parts else block[:cut]
        text = _decode(data, path, offset, lineno)
        lines = text.split("\n")
        lineno += len(lines)
        offset += len(data) + 1
        yield lines
        parts, held = [block[cut + 1:]], len(block) - cut - 1
    if held:
        yield [_decode(b"".join(parts), path, offset, lineno)]


def _decode(data: bytes, path: str, offset: int, lineno: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {offset + exc.start})",
                         file=path, line=lineno + data.count(b"\n", 0, exc.start) + 1) from None


class Rows:
    """The non-blank lines of a file in order, with their line numbers: one at a time as (line number, text,
    whether it is the last) for the header, then the rest in bulk through `lines`, which the steps read."""

    __slots__ = ("_at", "_base", "_blocks", "_lines")

    def __init__(self, handle: IO[bytes], path: str) -> None:
        self._blocks = _blocks(handle, path)
        self._lines: list[str] = []  # the block being read
        self._at = 0  # its next line
        self._base = 0  # the lines of the file before it

    def __iter__(self) -> Rows:
        return self

    def __next__(self) -> Any:  # tuple[int, str, bool]; Any keeps it boxed, as mypyc's tp_iternext must return
        if not self._skip_blank():
            raise StopIteration
        lineno, text = self._base + self._at + 1, self._lines[self._at]
        self._at += 1
        return lineno, text, not self._skip_blank()

    def _skip_blank(self) -> bool:
        """Moves to the next non-blank line; False at the end of the file."""
        while True:
            lines, at = self._lines, self._at
            while at < len(lines):
                text = lines[at]
                if text and not text.isspace():
                    self._at = at
                    return True
                at += 1
            self._base += len(lines)
            self._lines, self._at = next(self._blocks, []), 0
            if not self._lines:
                return False

    def lines(self) -> Iterator[tuple[int, str]]:
        """(line number, text) of each non-blank line not read yet; the rows are read only through it from then on."""
        lines, base = self._lines, self._base
        first = self._at
        while True:
            # one loop per block, not a generator per layer: this runs once per line of the file
            for lineno, text in enumerate(lines[first:] if first else lines, base + first + 1):
                if text and not text.isspace():
                    yield lineno, text
            base += len(lines)
            next_block = next(self._blocks, None)
            if next_block is None:
                return
            lines, first = next_block, 0


def rows(handle: IO[bytes], path: str) -> Rows:
    """The file's non-blank lines (see `Rows`)."""
    return Rows(handle, path)


def header(rows: Iterator[tuple[int, str, bool]], path: str) -> Trace:
    """The header line read by the loader itself (a trace with no steps yet), so a file that is not a
    trace, or a bad header, is reported exactly as loading the file would report it."""
    first = next(rows, None)
    if first is None:
        raise TraceError("the file holds no trace (expected a header line)", file=path, line=1)
    lineno, text, _last = first
    # the common header, a mapping the loader takes as it is, is built from its JSON as the loader builds
    # it (without a step-less whole-file load around it); anything else goes through the loader
    if "loopguard" in text:
        try:
            raw = parse_json(text, path, lineno)
            if isinstance(raw, Mapping) and "loopguard" in raw and "steps" not in raw:
                return trace_from_mapping({**raw, "steps": []}, path=path)
        except TraceError:
            pass
    return loads("\n" * (lineno - 1) + text, fmt="jsonl", path=path)[0]


def steps(rows: Rows, path: str, torn: list[str] | None) -> Iterator[Step]:
    """Each step line read with the loader's checks (`faststep`). A torn last line (a run cut off
    mid-write) is left out, warned about and noted in `torn` (None: a silent first read), as the loader does."""
    lines = rows.lines()
    for index, (lineno, text) in enumerate(lines):
        try:
            step = step_from_line(text, index, path, lineno)
        except TraceError as exc:
            # a JSON syntax error is a torn line only on the last non-blank line: none may follow it
            if not exc.problem.startswith("JSON syntax error") or next(lines, None) is not None:
                raise
            if torn is not None:
                message = f"{path}:{lineno}: torn last line ignored ({exc.problem.removeprefix('JSON syntax error: ')})"
                warn(message)
                torn.append(message)
            return
        yield step





def has_llm(path: str) -> bool:
    """Whether the file holds an llm step: a first read, as `objective`'s. A bad line stops it with the
    error the replay would report on reaching that line (no held step has been replayed yet either way)."""
    with open_regular(path) as handle:
        lines = rows(handle, path)
        next(lines, None)
        return any(step.kind == "llm" for step in steps(lines, path, None))


def objective(header: Trace, path: str) -> str:
    """The run's objective: the header's task, else the first user message (found by a first read)."""
    if header.task is not None and header.task.objective:
        return header.task.objective
    with open_regular(path) as handle:
        lines = rows(handle, path)
        next(lines, None)
        for step in steps(lines, path, None):
            if step.message is not None and step.message.from_user:
                return step.message.text
    return ""


