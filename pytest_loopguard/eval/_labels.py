"""Loop labels of real runs (the format of `corpus/real/labels.yaml`): load, validate, index by run.

A labels file names runs by `file` (relative to the labels file's folder, or to its optional top-level `base`
folder, itself relative to the labels file's folder) and `row` (0-based, for a
file holding several runs) and marks each loop by call index `from`..`to` (inclusive; see the header
of `corpus/real/labels.yaml` for what counts as a call). Loading is strict: every problem is a
`LabelsError` whose one line names the labels file, the entry (and its line) and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

import yaml

from ..core._safeload import check_yaml_events, read_text
from ..errors import LoopguardError, TraceError

__all__ = ["EXPECTS", "OUTCOMES", "SHAPES", "Labels", "LabelsError", "LoopLabel", "RunLabel", "load_labels"]

SHAPES: Final = (
    "identical-repeat", "identical-failure", "failing-key", "file-reread", "revert-cycle", "alternation",
    "rejected-turns", "no-progress-probe",
)
EXPECTS: Final = ("flag", "tolerate")
OUTCOMES: Final = ("resolved", "failed", "unknown")
_RUN_KEYS: Final = ("file", "row", "format", "outcome", "calls", "healthy", "loops", "converter", "note")
_LOOP_KEYS: Final = ("from", "to", "shape", "expect", "recovered", "anchors", "note")
_Fail = Callable[..., "LabelsError"]

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


@final
class LabelsError(LoopguardError, ValueError):
    """A malformed labels file, or labels that do not fit the runs they name: one line, no traceback."""

    def __init__(self, problem: str, *, file: str, entry: int | None = None, line: int | None = None,
                 run: str | None = None, field: str | None = None) -> None:
        where = f"{file}:{line}" if line is not None else file
        parts = [where]
        if entry is not None:
            parts.append(f"runs[{entry}]" + (f" ({run})" if run else ""))
        if field is not None:
            parts.append(f"field '{field}'")
        super().__init__(": ".join(parts) + f": {problem}")


@final
@dataclass(frozen=True, slots=True)
class LoopLabel:
    """One labelled loop: calls `start`..`end` (inclusive), its shape and what a good policy does."""

    start: int
    end: int
    shape: str
    expect: str  # flag | tolerate
    recovered: bool = False
    note: str = ""


@final
@dataclass(frozen=True, slots=True)
class RunLabel:
    """One labelled run: where it is, its outcome, its number of calls and its loops."""

    entry: int  # position in the labels file's `runs`
    line: int | None
    file: str
    row: int | None
    format: str
    outcome: str  # resolved | failed | unknown
    calls: int
    healthy: bool
    loops: tuple[LoopLabel, ...] = ()

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.file, self.row)

    @property
    def run_id(self) -> str:
        """How reports name the run: `file` or `file#row`."""
        return self.file if self.row is None else f"{self.file}#{self.row}"


@final
@dataclass(frozen=True, slots=True)
class Labels:
    """A whole labels file: its path, the folder its `file` entries are relative to, and the runs."""

    path: str
    base: Path
    runs: tuple[RunLabel, ...]

    def error(self, label: RunLabel, problem: str, field: str | None = None) -> LabelsError:
        """An error about one entry, for checks against the runs themselves (missing run, range past end)."""
        return LabelsError(problem, file=self.path, entry=label.entry, line=label.line, run=label.run_id,
                           field=field)


def _entry_lines(text: str) -> list[int]:
    """The 1-based line of each `runs` entry (errors name it); empty when the YAML has no such list."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return []
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if getattr(k, "value", None) == "runs" and isinstance(v, yaml.SequenceNode):
                return [item.start_mark.line + 1 for item in v.value]
    return []


def _int(raw: Mapping[str, Any], key: str, fail: _Fail, minimum: int = 0) -> int:
    value = raw.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise fail(f"expected an integer >= {minimum}, got {value!r}", key)
    return value


def _choice(raw: Mapping[str, Any], key: str, choices: tuple[str, ...], fail: _Fail) -> str:
    value = raw.get(key)
    if value not in choices:
        raise fail(f"expected one of {', '.join(choices)}, got {value!r}", key)
    return str(value)


def _loop(raw: Any, i: int, fail: _Fail) -> LoopLabel:
    def lfail(problem: str, key: str | None = None) -> LabelsError:
        return fail(problem, f"loops[{i}]" + (f".{key}" if key else ""))

    if not isinstance(raw, Mapping):
        raise lfail(f"expected a mapping, got {type(raw).__name__}")
    unknown = sorted(set(map(str, raw)) - set(_LOOP_KEYS))
    if unknown:
        raise lfail(f"unknown key(s) {', '.join(unknown)}; expected {', '.join(_LOOP_KEYS)}")
    start = _int(raw, "from", lfail)
    end = _int(raw, "to", lfail)
    if end < start:
        raise lfail(f"'to' ({end}) is before 'from' ({start})", "to")
    recovered = raw.get("recovered", False)
    if not isinstance(recovered, bool):
        raise lfail(f"expected true or false, got {recovered!r}", "recovered")
    note = raw.get("note", "")
    return LoopLabel(start, end, _choice(raw, "shape", SHAPES, lfail), _choice(raw, "expect", EXPECTS, lfail),
                     recovered, str(note))


def _run(raw: Any, entry: int, line: int | None, path: str) -> RunLabel:
    run_id = None
    if isinstance(raw, Mapping) and isinstance(raw.get("file"), str):
        run_id = raw["file"] + (f"#{raw['row']}" if raw.get("row") is not None else "")

    def fail(problem: str, field: str | None = None) -> LabelsError:
        return LabelsError(problem, file=path, entry=entry, line=line, run=run_id, field=field)

    if not isinstance(raw, Mapping):
        raise fail(f"expected a mapping, got {type(raw).__name__}")
    unknown = sorted(set(map(str, raw)) - set(_RUN_KEYS))
    if unknown:
        raise fail(f"unknown key(s) {', '.join(unknown)}; expected {', '.join(_RUN_KEYS)}")
    file = raw.get("file")
    if not isinstance(file, str) or not file:
        raise fail(f"expected a path relative to the labels file, got {file!r}", "file")
    row = _int(raw, "row", fail) if raw.get("row") is not None else None
    fmt = raw.get("format", "")
    if not isinstance(fmt, str):
        raise fail(f"expected a format name, got {fmt!r}", "format")
    healthy = raw.get("healthy", False)
    if not isinstance(healthy, bool):
        raise fail(f"expected true or false, got {healthy!r}", "healthy")
    loops_raw = raw.get("loops") or []
    if not isinstance(loops_raw, list):
        raise fail(f"expected a list, got {type(loops_raw).__name__}", "loops")
    loops = tuple(_loop(item, i, fail) for i, item in enumerate(loops_raw))
    if healthy and loops:
        raise fail("a healthy run has no loops", "healthy")
    calls = _int(raw, "calls", fail)
    for i, loop in enumerate(loops):
        if loop.end >= calls:
            raise fail(f"range {loop.start}..{loop.end} is past the run's end ({calls} calls)", f"loops[{i}].to")
    return RunLabel(entry, line, file, row, fmt, _choice(raw, "outcome", OUTCOMES, fail), calls, healthy, loops)


def load_labels(path: str | Path) -> Labels:
    """Read and validate a labels file; raises `LabelsError` (one line) on any problem."""
    p = Path(path)
    name = str(path)
    try:
        # the safe reader: a regular file (a FIFO is refused, not waited on) of bounded size, UTF-8, and
        # YAML whose depth, tags and aliases are checked before anything is built
        text = read_text(p)
        check_yaml_events(text, name)
    except TraceError as exc:
        raise LabelsError(exc.problem, file=name, line=exc.line) from None
    try:
        raw = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise LabelsError(f"YAML syntax error: {getattr(exc, 'problem', None) or exc}", file=name,
                          line=mark.line + 1 if mark is not None else None) from None
    if not isinstance(raw, Mapping):
        raise LabelsError("expected a mapping with `version: 1` and `runs`", file=name)
    if raw.get("version") != 1:
        raise LabelsError(f"expected 1, got {raw.get('version')!r}", file=name, field="version")
    runs_raw = raw.get("runs")
    if not isinstance(runs_raw, list):
        raise LabelsError(f"expected a list of runs, got {type(runs_raw).__name__}", file=name, field="runs")
    base = p.parent
    if raw.get("base") is not None:
        # labels kept apart from the logs they label (this repository's labels of ../shared/corpus/sessions)
        if not isinstance(raw["base"], str) or not raw["base"] or Path(raw["base"]).is_absolute():
            raise LabelsError(f"expected a folder relative to the labels file, got {raw['base']!r}", file=name,
                              field="base")
        base = p.parent / raw["base"]
    lines = _entry_lines(text)
    runs = tuple(_run(item, i, lines[i] if i < len(lines) else None, name) for i, item in enumerate(runs_raw))
    seen: dict[tuple[str, int | None], int] = {}
    for label in runs:
        if label.key in seen:
            raise LabelsError(f"the same run as runs[{seen[label.key]}]", file=name, entry=label.entry,
                              line=label.line, run=label.run_id)
        seen[label.key] = label.entry
    return Labels(name, base, runs)
