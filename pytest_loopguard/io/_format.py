"""Load and validate trace files (YAML, JSON, JSONL): the loader's entry points, and the trace format's public names.

Loading is strict (`_read` checks every field; `x-` keys are kept as extensions), and every error is a
`TraceError` naming the file, the step index, the line where the parser knows it, the field and what was
expected. JSONL carries the header on its first line and one step per line; a torn last line (a crashed
recorder) is a warning, never a crash. The format itself is described once in `_spec`; writing traces
out is `_dump`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from ..core._limits import MAX_STEPS
from ..core._model import Step, Trace
from ..core._safeload import parse_json, parse_yaml, read_text
from ..errors import NotATraceError, TraceError, warn
from ._dump import dump, dumps, expect_to_value, step_to_mapping, trace_to_mapping
from ._faststep import plain_step, plain_steps
from ._read import parse_step_expect, tname, trace_from_mapping
from ._spec import (
    BUDGET_KEYS,
    CONTEXT_KEYS,
    NAME_FORBIDDEN,
    ORIGIN_ROLES,
    STEP_ACTIONS,
    SUFFIXES,
    TOP_KEYS,
    file_format,
)

__all__ = [
    "BUDGET_KEYS",
    "CONTEXT_KEYS",
    "CORPUS_MANIFEST",
    "NAME_FORBIDDEN",
    "ORIGIN_ROLES",
    "STEP_ACTIONS",
    "SUFFIXES",
    "TOP_KEYS",
    "TraceError",
    "dump",
    "dumps",
    "expect_to_value",
    "iter_trace_files",
    "load",
    "load_file",
    "loads",
    "parse_step_expect",
    "step_to_mapping",
    "trace_from_mapping",
    "trace_to_mapping",
    "validate_paths",
]

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


# ---- line numbers (looked up only when an error needs one) -----------------------------------------
def _yaml_line(text: str, doc: int, step: int | None, field: str | None) -> int | None:
    try:
        nodes = list(yaml.compose_all(text, Loader=_Loader))
    except yaml.YAMLError:
        return None
    if doc >= len(nodes):
        return None
    node: Any = nodes[doc]
    if step is not None:
        node = _child(node, "steps")
        if node is None or not isinstance(node, yaml.SequenceNode) or step >= len(node.value):
            return None
        node = node.value[step]
    best = node.start_mark.line + 1
    for part in (field or "").replace("[", ".").replace("]", "").split("."):
        if not part:
            continue
        key, value = _child_pair(node, part)
        if key is None:
            break
        best = key.start_mark.line + 1
        node = value
    return int(best)


def _child_pair(node: Any, key: str) -> tuple[Any, Any]:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if getattr(k, "value", None) == key:
                return k, v
    if isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
        item = node.value[int(key)]
        return item, item
    return None, None


def _child(node: Any, key: str) -> Any:
    return _child_pair(node, key)[1]


# ---- loading -----------------------------------------------------------------------------------------
MISSING_VERSION: Final = "missing 'loopguard' (the trace format version; expected 1)"


def _claims_trace(doc: Any) -> bool:
    return isinstance(doc, Mapping) and "loopguard" in doc


# a key this close to `loopguard` (loopgaurd, loop_guard, LoopGuard) is a misspelt version key
_NEAR_VERSION: Final = 0.8


def _misspelt_version(doc: Any, path: str | None, line: int | None = 1) -> TraceError | None:
    """The error for a mapping that lacks the `loopguard` key yet is plainly a trace: it has a key spelt almost
    like it, or a trace's `name`, `steps` and `expect` — else None (some other file, skipped). A CI gate that
    skipped such a file would pass having checked nothing."""
    if not isinstance(doc, Mapping) or "loopguard" in doc:
        return None
    from difflib import SequenceMatcher  # only for a file that is no trace

    keys = [k for k in doc if isinstance(k, str)]
    near = max(keys, key=lambda k: SequenceMatcher(None, k.lower(), "loopguard").ratio(), default=None)
    if near is not None and SequenceMatcher(None, near.lower(), "loopguard").ratio() < _NEAR_VERSION:
        near = None
    if near is None and not {"name", "steps", "expect"} <= set(keys):
        return None
    meant = near if near is not None else ("version" if "version" in keys else None)
    problem = "no 'loopguard' version key, but this looks like a trace (name, steps, expect): "
    problem += "did you mean `loopguard`?" if meant is not None else "add `loopguard: 1` as its first key"
    return TraceError(problem, file=path, line=line, field=meant or "loopguard")


def _not_a_trace(path: str | None, document: Any = None, *, parsed: bool = True) -> NotATraceError:
    problem = MISSING_VERSION if document is None or isinstance(document, Mapping) else (
        f"expected a mapping with a top-level 'loopguard' key, got {tname(document)}")
    return NotATraceError(problem, file=path, line=1, document=document, parsed=parsed)


def loads(text: str, *, fmt: str = "yaml", path: str | None = None) -> list[Trace]:
    """Every trace in `text` (YAML may hold several documents; JSON one; JSONL one).

    Text in which no document has a top-level `loopguard` key raises `NotATraceError`: some other file.
    Text that never mentions `loopguard` is not parsed at all (a substring scan decides it).
    """
    if "loopguard" not in text and not _maybe_misspelt(text):
        raise _not_a_trace(path, parsed=False)
    if fmt == "jsonl":
        return [_loads_jsonl(text, path)]
    if fmt == "json":
        if "loopguard" not in text:
            raw = _parsed_or_none(lambda: parse_json(text, path))
            raise _misspelt_version(raw, path) or _not_a_trace(path, raw, parsed=raw is not None)
        raw = parse_json(text, path)
        if not _claims_trace(raw):
            raise _misspelt_version(raw, path) or _not_a_trace(path, raw)
        try:
            return [trace_from_mapping(raw, path=path)]
        except TraceError as exc:
            raise exc.located(file=path) from None
    if "loopguard" not in text:
        parsed = _parsed_or_none(lambda: parse_yaml(text, path))
        if parsed is None:  # some other file YAML refuses: not a trace, as before
            raise _not_a_trace(path, parsed=False)
        docs = parsed
    else:
        docs = parse_yaml(text, path)
    if not any(_claims_trace(doc) for doc in docs):
        for i, doc in enumerate(docs):
            misspelt = _misspelt_version(doc, path)
            if misspelt is not None:
                raise misspelt.located(file=path, line=_yaml_line(text, i, None, misspelt.field) or 1)
        raise _not_a_trace(path, next((d for d in docs if d is not None), None))
    traces = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        try:
            traces.append(trace_from_mapping(doc, path=path))
        except TraceError as exc:
            line = _yaml_line(text, i, exc.step, exc.field)
            raise exc.located(file=path, line=line) from None
    return traces


def _maybe_misspelt(text: str) -> bool:
    """Whether text without `loopguard` in it could still be a trace with its version key misspelt (worth
    parsing to see): a cheap scan, so that most other files are still never parsed."""
    return "steps" in text or "loop" in text.lower()


def _parsed_or_none(parse: Any) -> Any:
    try:
        return parse()
    except TraceError:
        return None


def _loads_jsonl(text: str, path: str | None) -> Trace:
    # only "\n" ends a JSONL record: str.splitlines() would also split on U+0085, U+2028 and the like,
    # which JSON strings may hold raw (dumps writes them unescaped)
    # The header decides whether this is a trace at all, before any other line is parsed.
    first_end = text.find("\n")
    first = text if first_end == -1 else text[:first_end]
    header_value: Any = None
    if first.strip():  # the common file, its header on its first line: its steps read in place when plain
        header_value = _jsonl_header(first, 1, path)
        fast = _plain_jsonl_text(header_value, text, len(first) + 1, path)
        if fast is not None:
            return fast
    lines = text.split("\n")
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    if not numbered:
        raise TraceError("the file holds no trace (expected a header line)", file=path, line=1)
    first_line, first = numbered[0]
    if header_value is None:  # blank lines before the header: read where it is
        header_value = _jsonl_header(first, first_line, path)
    fast = _plain_jsonl(header_value, numbered[1:], path)
    if fast is not None:
        return fast
    parsed: list[tuple[int, Any]] = [(first_line, header_value)]
    warnings: list[str] = []
    for pos, (lineno, line) in enumerate(numbered[1:], 1):
        try:
            parsed.append((lineno, parse_json(line, path, lineno)))
        except TraceError as exc:
            if pos == len(numbered) - 1 and pos > 0 and exc.problem.startswith("JSON syntax error"):
                problem = exc.problem.removeprefix("JSON syntax error: ")
                message = f"{path or '<trace>'}:{lineno}: torn last line ignored ({problem})"
                warnings.append(message)
                warn(message)
                break
            raise
    header_line, header = parsed[0]
    if not isinstance(header, Mapping):
        raise TraceError("the first line must be the header mapping", file=path, line=header_line)
    if "steps" in header:
        raise TraceError("a JSONL header carries no 'steps': one step per following line",
                         file=path, line=header_line, field="steps")
    raw = dict(header)
    raw["steps"] = [step for _, step in parsed[1:]]
    try:
        return trace_from_mapping(raw, path=path, warnings=tuple(warnings))
    except TraceError as exc:
        at = parsed[exc.step + 1][0] if exc.step is not None else header_line
        raise exc.located(file=path, line=at) from None


def _jsonl_header(first: str, first_line: int, path: str | None) -> Any:
    """The header line's value, when it claims a trace; else the error that says it is no trace (or a misspelt one)."""
    try:
        header_value = parse_json(first, path, first_line)
    except TraceError:
        if "loopguard" not in first:
            raise _not_a_trace(path, parsed=False) from None
        raise
    if not _claims_trace(header_value):
        # a JSONL header holds no steps: its name and an expectation, or a key spelt almost `loopguard`, claim it
        header_like = {**header_value, "steps": []} if isinstance(header_value, Mapping) else header_value
        raise _misspelt_version(header_like, path, first_line) or _not_a_trace(path, header_value)
    return header_value


def _plain_jsonl_text(header: Mapping[str, Any], text: str, start: int, path: str | None) -> Trace | None:
    """`_plain_jsonl` of the step lines of `text` from offset `start`, read in place (`faststep.plain_steps`:
    none cut out, no split of the whole text); None when a line is not plain or a blank line comes between."""
    if "steps" in header:
        return None
    return _with_steps(header, plain_steps(text, start, MAX_STEPS), path)


def _plain_jsonl(header: Mapping[str, Any], rows: list[tuple[int, str]], path: str | None) -> Trace | None:
    """The trace when every step line is plainly valid (`faststep.plain_step`) and so is the header; None
    sends the file through the full checks below, which find and word the first error as they always have."""
    if "steps" in header or len(rows) > MAX_STEPS:
        return None
    steps = []
    for index, (_, line) in enumerate(rows):
        step = plain_step(line, index)
        if step is None:
            return None
        steps.append(step)
    return _with_steps(header, steps, path)


def _with_steps(header: Mapping[str, Any], steps: list[Step] | None, path: str | None) -> Trace | None:
    """The trace of a plainly valid header and its steps read by the fast path; None when there are none (a line
    was not plain) or the header is not plainly valid (the full checks then word its error)."""
    if steps is None:
        return None
    try:
        trace = trace_from_mapping({**header, "steps": []}, path=path)
    except TraceError:
        return None
    return dataclasses.replace(trace, steps=tuple(steps))


def load_file(path: str | Path) -> list[Trace]:
    """Every trace in one file."""
    p = Path(path)
    fmt = file_format(p)
    return loads(read_text(p), fmt=fmt, path=str(path))


def load(path: str | Path) -> Trace:
    """The one trace in a file (a file with several traces: use `load_file`)."""
    traces = load_file(path)
    if len(traces) != 1:
        raise TraceError(f"the file holds {len(traces)} traces; use load_file() for several", file=str(path))
    return traces[0]


# a corpus's manifest (docs/corpora.md) lives among its traces and is none: folder walks pass over it
CORPUS_MANIFEST: Final = "loopguard-corpus.yaml"


def iter_trace_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Trace files under each path (files are taken as given; folders are searched recursively, sorted, without
    a corpus manifest)."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            # not only regular files: a FIFO or a link to a device named like a trace is reported, not skipped
            yield from sorted(f for f in p.rglob("*")
                              if f.suffix.lower() in SUFFIXES and not f.is_dir() and f.name != CORPUS_MANIFEST)
        else:
            yield p


def validate_paths(
    paths: Iterable[str | Path], *, skipped: list[NotATraceError] | None = None
) -> tuple[list[Trace], list[TraceError]]:
    """Load every trace under `paths`; every bad file is reported (not just the first), and duplicate names.

    A file found in a folder that is not a trace at all (no top-level `loopguard` key: an OTel export, a
    config file) is skipped, and appended to `skipped` when given; a file named in `paths` must be a trace.
    """
    traces: list[Trace] = []
    errors: list[TraceError] = []
    seen: dict[str, str] = {}
    for raw in paths:
        in_folder = Path(raw).is_dir()
        for f in iter_trace_files([raw]):
            if not f.exists():
                errors.append(TraceError("no such file or folder", file=str(f)))
                continue
            try:
                loaded = load_file(f)
            except NotATraceError as exc:
                if not in_folder:
                    errors.append(exc)
                elif skipped is not None:
                    skipped.append(exc)
                continue
            except TraceError as exc:
                errors.append(exc)
                continue
            for trace in loaded:
                if trace.name in seen:
                    errors.append(TraceError(f"duplicate trace name {trace.name!r} (also in {seen[trace.name]})",
                                             file=str(f), field="name"))
                    continue
                seen[trace.name] = str(f)
                traces.append(trace)
    return traces, errors
