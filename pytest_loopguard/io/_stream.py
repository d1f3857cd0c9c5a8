"""Streaming replay of JSONL traces: steps are read line by line, replayed as they come, and checked and
counted as they go, so memory stays flat however long the trace (`loopguard run` uses it for .jsonl).

A turn's calls are known only when its last call is read, so the stream holds one stretch of steps (from
one `llm` step to the next) at a time; tool steps before the first `llm` step are held until an `llm`
step says how they group (see `replay.turn_plan`), or until a first read of the file finds it holds none
(`_planned`). A trace whose objective is not in its header (the first user message) is read twice: once
to find that message, once to replay.

Every line gets the loader's checks (`faststep`: a direct construction for the common well-formed line,
the loader's own reader for anything else). The loader's bounds on a whole file (`MAX_FILE_BYTES`,
`MAX_STEPS`) exist because it holds the file and every step's result in memory; a stream holds neither,
so it bounds a line instead.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..core._expect import Mismatch, check, check_reached, check_run
from ..core._limits import MAX_FILE_BYTES
from ..core._model import ReplayResult, Step, StepResult, ToolCall, Trace
from ..core._safeload import parse_json
from ..errors import LoopguardError, NotATraceError, TraceError, warn
from ..runtime._policy import Policy, resolving_once
from ..runtime._replay import Replayer, policy_for, turn_plan
from ._faststep import step_from_line
from ._format import iter_trace_files, loads, trace_from_mapping
from ._runner import execute, load_file

__all__ = ["FileRuns", "RunItem", "StreamedRun", "file_runs", "merged", "replay_jsonl", "run_paths", "trace_files"]


class StreamedRun:
    """What a streamed replay keeps: the header trace, the result without its step timeline (counts
    instead), and the mismatches found as the steps went by."""

    __slots__ = ("mismatches", "result")

    def __init__(self, result: ReplayResult, mismatches: list[Mismatch]) -> None:
        self.result = result
        self.mismatches = mismatches


def _open(path: str) -> IO[bytes]:
    """The file for reading in blocks: a regular file only (a FIFO would block)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise TraceError("not a regular file (a FIFO, device or folder); only regular files are read", file=path)
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}", file=path) from None
    return open(path, "rb", buffering=0)  # blocks are read whole: a buffer would only copy them


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


class _Rows:
    """The non-blank lines of a file in order, with their line numbers: one at a time as (line number, text,
    whether it is the last) for the header, then the rest in bulk through `lines`, which the steps read."""

    __slots__ = ("_at", "_base", "_blocks", "_lines")

    def __init__(self, handle: IO[bytes], path: str) -> None:
        self._blocks = _blocks(handle, path)
        self._lines: list[str] = []  # the block being read
        self._at = 0  # its next line
        self._base = 0  # the lines of the file before it

    def __iter__(self) -> _Rows:
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


def _rows(handle: IO[bytes], path: str) -> _Rows:
    """The file's non-blank lines (see `_Rows`)."""
    return _Rows(handle, path)


def _header(rows: Iterator[tuple[int, str, bool]], path: str) -> Trace:
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


def _steps(rows: _Rows, path: str, torn: list[str] | None) -> Iterator[Step]:
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


_HOLD = 4096  # steps held before the first llm step, at most, unless the file holds an llm step after them


def _planned(steps: Iterator[Step], replayer: Replayer,
             path: str) -> Iterator[tuple[Step, tuple[ToolCall, ...] | None]]:
    """Each step with the calls of the turn it starts, holding one stretch (llm step to llm step) at a time.
    Stops once the run has ended: no later step needs its turn's calls (each is `not_reached`), and the
    caller reads the rest of `steps` itself.

    Tool steps before the first llm step form one turn if an llm step comes later, else one turn each: once
    _HOLD of them are held, a first read of the file (`_has_llm`) says which, so a file with no llm step
    at all is replayed in stretches of _HOLD steps instead of being held whole."""
    held: list[Step] = []
    has_llm = False  # until the first llm step, or the end of the file
    llm_ahead: bool | None = None  # whether the file holds an llm step: asked once, when _HOLD steps are held
    for step in steps:
        if step.kind != "llm":
            held.append(step)
            if has_llm or len(held) < _HOLD:
                continue
            if llm_ahead is None:
                llm_ahead = _has_llm(path)
            if llm_ahead:
                continue  # the held steps start a turn the llm step's stretch ends
            plan = turn_plan(held, has_llm=False).get
            for done in held:
                yield done, plan(done.index)
            held = []
            if replayer.outcome is not None:
                return
            continue
        if held:
            plan = turn_plan(held, has_llm=True).get  # an llm step follows, so the trace has one
            for done in held:
                yield done, plan(done.index)
            if replayer.outcome is not None:
                yield step, None
                return
        has_llm = True
        held = [step]
    plan = turn_plan(held, has_llm=has_llm).get
    for done in held:
        yield done, plan(done.index)


def _has_llm(path: str) -> bool:
    """Whether the file holds an llm step: a first read, as `_objective`'s. A bad line stops it with the
    error the replay would report on reaching that line (no held step has been replayed yet either way)."""
    with _open(path) as handle:
        rows = _rows(handle, path)
        next(rows, None)
        return any(step.kind == "llm" for step in _steps(rows, path, None))


def _objective(header: Trace, path: str) -> str:
    """The run's objective: the header's task, else the first user message (found by a first read)."""
    if header.task is not None and header.task.objective:
        return header.task.objective
    with _open(path) as handle:
        rows = _rows(handle, path)
        next(rows, None)
        for step in _steps(rows, path, None):
            if step.message is not None and step.message.from_user:
                return step.message.text
    return ""


def replay_jsonl(
    path: str | Path, policy: Policy | str | Mapping[str, Any] | None = None,
    on_step: Callable[[Step, StepResult], object] | None = None,
) -> StreamedRun | None:
    """Replay a JSONL trace file as it is read and check its expectations as the steps go by.

    The result has no step timeline (`steps` is empty) but the run's counts (`step_counts`), outcome and
    where it stopped; mismatches are the same as `expect.check` finds on a full replay. `on_step` is
    given each step and its result as they go by (`loopguard replay` prints them). None for a scenario
    (`mode: simulate`), which is simulated, not replayed.
    """
    name = str(path)
    try:
        with _open(name) as handle:
            torn: list[str] = []
            rows = _rows(handle, name)
            header = _header(rows, name)
            if header.mode == "simulate":
                return None
            resolved, policy_name = policy_for(header, policy)
            replayer = Replayer(header, resolved, _objective(header, name))
            counts: dict[str, int] = {}
            mismatches: list[Mismatch] = []
            strict = header.strict
            steps = _steps(rows, name, torn)

            def record(step: Step, calls: tuple[ToolCall, ...] | None) -> None:
                """A step whose result something reads (`on_step`, its expectation) or after the run's end."""
                got = replayer.step(step, calls)
                if on_step is not None:
                    on_step(step, got)
                counts[got.action] = counts.get(got.action, 0) + 1
                m = check_reached(step, got, strict)
                if m is not None:
                    mismatches.append(m)

            advance = replayer.advance
            for step, calls in _planned(steps, replayer, name):
                if on_step is None and step.expect is None and replayer.outcome is None:
                    # nothing reads this step's result (most steps of a long run): its action is counted as
                    # the full replay does, a StepResult built only for a step that is not allowed (strict
                    # checks those)
                    verdicts = advance(step, calls)
                    if not verdicts:
                        counts["allow"] = counts.get("allow", 0) + 1
                        continue
                    got = replayer.result_of(step, verdicts)
                    counts[got.action] = counts.get(got.action, 0) + 1
                    if (m := check_reached(step, got, strict)) is not None:
                        mismatches.append(m)
                else:
                    record(step, calls)
            # the run has ended (or the file has): each step left is still read and checked, so a bad line
            # after a stop is reported, and is `not_reached`; a result is made only where something reads it
            for step in steps:
                if on_step is None and step.expect is None:
                    counts["not_reached"] = counts.get("not_reached", 0) + 1
                else:
                    record(step, None)
            outcome = replayer.finish()
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror}", file=name) from None
    if torn:
        header = dataclasses.replace(header, warnings=tuple(torn))
    result = ReplayResult(header, policy_name, outcome, replayer.stopped_at, replayer.stopped_by, (),
                          step_counts=counts)
    if header.expect is not None:
        mismatches.extend(check_run(header.expect, result))
    return StreamedRun(result, mismatches)


RunItem = tuple[ReplayResult, list[Mismatch]] | LoopguardError
# One file's replay as `merged` reads it: its error (a NotATraceError for a file that is no trace), or each
# trace's name with how to get its item; the item is only asked for a name no earlier file holds.
FileRuns = Iterable[LoopguardError | tuple[str, Callable[[], RunItem]]]


def trace_files(paths: Sequence[str | Path]) -> Iterator[tuple[Path, bool]]:
    """Every trace file under `paths` in run order, with whether it was found in a folder (not named itself)."""
    for raw in paths:
        in_folder = Path(raw).is_dir()
        for f in iter_trace_files([raw]):
            yield f, in_folder


def file_runs(f: Path, policy: Policy | None, resolved: dict[Any, Policy], stream: bool) -> FileRuns:
    """One file loaded (or a JSONL file streamed), with its traces' runs: see `FileRuns`."""
    if not f.exists():
        yield TraceError("no such file or folder", file=str(f))
        return
    try:
        with resolving_once(resolved):  # entered per file: never open while the caller has the item
            streamed = replay_jsonl(f, policy) if stream and f.suffix.lower() == ".jsonl" else None
            loaded = [streamed.result.trace] if streamed is not None else load_file(f)
    except TraceError as exc:  # a NotATraceError too: `merged` decides whether it is skipped
        yield exc
        return
    if streamed is not None:
        run = streamed  # replayed already: the item is what it found
        yield run.result.trace.name, lambda: (run.result, run.mismatches)
        return
    for trace in loaded:
        yield trace.name, functools.partial(_executed, trace, policy, resolved)


def _executed(trace: Trace, policy: Policy | None, resolved: dict[Any, Policy]) -> RunItem:
    """A loaded trace replayed (or simulated) and checked; an error of its input as its item."""
    try:
        with resolving_once(resolved):
            result = execute(trace, policy)
    except LoopguardError as exc:  # e.g. a scenario the simulators reject: a bad input like a load error
        return exc.located(file=trace.path) if isinstance(exc, TraceError) else TraceError(str(exc), file=trace.path)
    return result, check(result)


def merged(files: Iterable[tuple[Path, bool, FileRuns]],
           skipped: list[NotATraceError] | None = None) -> Iterator[RunItem]:
    """The items of files' runs in order: a file in a folder that is no trace is skipped (appended to
    `skipped`), a trace whose name an earlier file holds is a duplicate error and is not run."""
    seen: dict[str, str] = {}
    for f, in_folder, runs in files:
        for item in runs:
            if isinstance(item, LoopguardError):
                if not isinstance(item, NotATraceError) or not in_folder:
                    yield item
                elif skipped is not None:
                    skipped.append(item)
                continue
            name, run = item
            if name in seen:
                yield TraceError(f"duplicate trace name {name!r} (also in {seen[name]})", file=str(f), field="name")
                continue
            seen[name] = str(f)
            yield run()


def run_paths(
    paths: Sequence[str | Path],
    policy: Policy | None = None,
    *,
    skipped: list[NotATraceError] | None = None,
    stream: bool = True,
) -> Iterator[RunItem]:
    """Each trace under `paths` replayed (or simulated) and checked as its file is read, in file order:
    JSONL files are streamed; a bad file, a duplicate name or a scenario the simulators reject is
    yielded as its error, and the rest goes on. As `validate_paths` does, a file in a folder that is not
    a trace at all is skipped (appended to `skipped` when given), and a file named in `paths` must be one.
    `stream=False` loads JSONL files too, for callers that need every step's result (coverage, reports)."""
    resolved: dict[Any, Policy] = {}  # the policy files and mappings the traces name, each resolved once per run
    files = ((f, in_folder, file_runs(f, policy, resolved, stream)) for f, in_folder in trace_files(paths))
    return merged(files, skipped)
