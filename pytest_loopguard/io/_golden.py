"""Golden updates: the expectations a replay disproves, rewritten to what it observed, and nothing else.

`--loopguard-update` asks for the edits of each mismatching trace (`expectation_edits`); the edits of one
file are applied together (`update_yaml_file`): in YAML by splicing (`yamlsplice`), so an expectation that
holds, a comment, the key order and the layout stay as they were; in JSONL on the edited lines alone.
A trace without any expectation is filled in (`observed_trace`). A scenario's expectations on recorded
steps past the end of its run are checked by nothing (`unchecked_expectations`): they are reported on every
run and dropped by an update.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import yaml

from ..core._expect import check
from ..core._model import ReplayResult, RunExpect, Step, StepExpect, StepResult, Trace, plain
from ..errors import LoopguardError
from ._format import expect_to_value, loads, trace_to_mapping
from ._yamlsplice import REMOVE, Edit, SpliceError, apply_edits, flow

__all__ = [
    "SCENARIO_STEP_EXPECTS",
    "apply_update_requests",
    "edit_from_json",
    "edit_to_json",
    "expectation_edits",
    "has_expectations",
    "observed_trace",
    "unchecked_expectations",
    "update_yaml_file",
]

SCENARIO_STEP_EXPECTS: Final = "x-expect-steps"  # a scenario's expectations on its recorded steps


def has_expectations(trace: Trace) -> bool:
    return (trace.expect is not None or any(s.expect is not None for s in trace.steps)
            or SCENARIO_STEP_EXPECTS in trace.extensions)


def observed_trace(trace: Trace, result: ReplayResult) -> Trace:
    """`trace` with its step and run expectations rewritten to what `result` observed (snapshot update).

    Non-allow steps get an expectation (a bare action where the trace wrote one, else the action with the
    deciding verdict's engine and reason); allow steps lose theirs. The run expectation records outcome,
    stopped_by/stopped_at and the non-allow counts. A scenario (`mode: simulate`) has no steps of its own: its
    expectations on the recorded steps (`x-expect-steps`) are rewritten the same way.
    """
    counts = {a: n for a, n in result.counts().items() if a not in ("allow", "not_reached")}
    run = RunExpect(
        outcome=plain(result.outcome),  # an expectation holds the name as a file writes it
        stopped_by=result.stopped_by,
        stopped_at=result.stopped_at,
        counts=counts or None,
        has_stopped_by=result.stopped_by is not None,
        has_stopped_at=result.stopped_at is not None,
    )
    if trace.mode == "simulate":
        recorded = (_observed_step(step, got) for step, got in zip(result.trace.steps, result.steps, strict=True))
        step_expects = {step.index: expect_to_value(step.expect) for step in recorded if step.expect is not None}
        extensions = {k: v for k, v in trace.extensions.items() if k != SCENARIO_STEP_EXPECTS}
        if step_expects:
            extensions[SCENARIO_STEP_EXPECTS] = step_expects
        return dataclasses.replace(trace, expect=run, extensions=extensions)
    steps = tuple(_observed_step(step, got) for step, got in zip(trace.steps, result.steps, strict=True))
    return dataclasses.replace(trace, steps=steps, expect=run)


def _observed_step(step: Step, got: StepResult) -> Step:
    action = plain(got.action)  # an expectation holds the name as a file writes it
    if action == "allow" or (action == "not_reached" and step.expect is None):
        return dataclasses.replace(step, expect=None) if step.expect is not None else step
    if action == "not_reached" or (step.expect is not None and step.expect.short):
        return dataclasses.replace(step, expect=StepExpect(action))
    decider = next((v for v in got.verdicts if v.action == action), None)
    if decider is None:
        return dataclasses.replace(step, expect=StepExpect(action))
    return dataclasses.replace(
        step, expect=StepExpect(action, engine=decider.engine, reason=decider.reason, short=False)
    )


def unchecked_expectations(trace: Trace, result: ReplayResult) -> list[int]:
    """A scenario's `x-expect-steps` indexes past its recorded run: no step is there to check them."""
    if trace.mode != "simulate":
        return []
    written = trace.extensions.get(SCENARIO_STEP_EXPECTS) or {}
    return sorted(i for i in written if isinstance(i, int) and i >= len(result.trace.steps))


def expectation_edits(trace: Trace, result: ReplayResult, document: int) -> tuple[list[Edit], list[str]]:
    """The edits that make `trace` (document `document` of its file) expect what `result` observed, and a
    line per changed expectation. Only what `check` finds wrong changes, unless the trace expects nothing
    yet: then every non-allow step and the run get an expectation."""
    observed = observed_trace(trace, result)
    scenario = trace.mode == "simulate"
    if scenario:
        written = dict(trace.extensions.get(SCENARIO_STEP_EXPECTS) or {})
        wanted = dict(observed.extensions.get(SCENARIO_STEP_EXPECTS) or {})
    else:
        written = {s.index: expect_to_value(s.expect) for s in trace.steps if s.expect is not None}
        wanted = {s.index: expect_to_value(s.expect) for s in observed.steps if s.expect is not None}
    run = trace_to_mapping(observed, steps=False)["expect"]
    edits: list[Edit] = []
    changes: list[str] = []

    def step_path(index: int) -> tuple[str | int, ...]:
        return (SCENARIO_STEP_EXPECTS, index) if scenario else ("steps", index, "expect")

    def change(path: tuple[str | int, ...], where: str, old: Any, new: Any) -> None:
        edits.append(Edit(document, path, new))
        before = flow(old) if old is not None else "(none)"
        changes.append(f"{trace.name}: {where}: {before} -> {'removed' if new is REMOVE else flow(new)}")

    if not has_expectations(trace):
        if scenario and wanted:
            change((SCENARIO_STEP_EXPECTS,), SCENARIO_STEP_EXPECTS, None, wanted)
        elif not scenario:
            for index, value in sorted(wanted.items()):
                change(step_path(index), f"step {index} expect", None, value)
        change(("expect",), "expect", None, run)
        return edits, changes
    for step in sorted({m.step for m in check(result) if m.step is not None}):
        change(step_path(step), f"step {step} expect", written.get(step), wanted.get(step, REMOVE))
    counts = result.counts()
    for m in check(result):
        if m.step is not None:
            continue
        if m.field.startswith("counts."):
            action = m.field.removeprefix("counts.")
            change(("expect", "counts", action), f"expect.{m.field}", m.expected, counts.get(action, 0))
        else:
            change(("expect", m.field), f"expect.{m.field}", m.expected, m.got)  # the result's, plain
    for index in unchecked_expectations(trace, result):
        change(step_path(index), f"{SCENARIO_STEP_EXPECTS} {index} (no such step: unchecked)", written[index],
               REMOVE)
    return edits, changes


def update_yaml_file(path: Path, edits: Sequence[Edit]) -> bool:
    """Apply `edits` to the trace file at `path` (YAML, JSON or JSONL); False when the text came out the same
    (nothing written).

    YAML is spliced value by value; a JSONL file has only the lines the edits reach rewritten (the header, a
    step's line), a JSON file its document. The new text is loaded back and each edited value compared with
    the one intended before anything is written, so an edit that went wrong raises SpliceError and leaves the
    file as it was.
    """
    text = path.read_text(encoding="utf-8")
    fmt = {".json": "json", ".jsonl": "jsonl"}.get(path.suffix.lower(), "yaml")
    new = apply_edits(text, edits) if fmt == "yaml" else _edit_json_text(text, edits, fmt, path)
    if new == text:
        return False
    traces = loads(new, fmt=fmt, path=str(path))
    for edit in edits:
        if edit.document >= len(traces):
            raise SpliceError(f"{path}: document {edit.document} is gone after the edit")
        got = _at(trace_to_mapping(traces[edit.document]), edit.path)
        if got != (REMOVE if edit.value is REMOVE else edit.value):
            raise SpliceError(f"{path}: after the edit {'.'.join(map(str, edit.path))} reads {got!r}, "
                              f"not {edit.value!r}; the file was not changed")
    path.write_text(new, encoding="utf-8")
    return True


def _edit_json_text(text: str, edits: Sequence[Edit], fmt: str, path: Path) -> str:
    """`text` with `edits` applied: in JSONL, each edited line parsed, changed and written back on its own (the
    header carries the run expectation, step i is the (i+1)-th record), every other line byte for byte."""
    if fmt == "json":
        document = json.loads(text)
        for edit in edits:
            _set(document, edit.path, edit.value, path)
        return json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    lines = text.split("\n")  # only "\n" ends a record, as the loader reads it
    records = [i for i, line in enumerate(lines) if line.strip()]
    by_line: dict[int, list[tuple[tuple[str | int, ...], Any]]] = defaultdict(list)
    for edit in edits:
        if edit.path[:1] == ("steps",) and len(edit.path) > 2 and isinstance(edit.path[1], int):
            record, rest = edit.path[1] + 1, edit.path[2:]
        else:
            record, rest = 0, edit.path
        if record >= len(records):
            raise SpliceError(f"{path}: no line holds {'.'.join(map(str, edit.path))}")
        by_line[records[record]].append((rest, edit.value))
    for at, changes in by_line.items():
        value = json.loads(lines[at])
        for rest, new in changes:
            _set(value, rest, new, path)
        lines[at] = json.dumps(value, ensure_ascii=False)
    return "\n".join(lines)


def _set(value: Any, path: Sequence[str | int], new: Any, file: Path) -> None:
    """Set (or, for REMOVE, delete) the value at `path`, making the mappings on the way that are missing."""
    for key in path[:-1]:
        if isinstance(value, list) and isinstance(key, int) and key < len(value):
            value = value[key]
        elif isinstance(value, dict):
            value = value.setdefault(key, {})
        else:
            raise SpliceError(f"{file}: {'.'.join(map(str, path))} is not a mapping's key")
    last = path[-1]
    if not isinstance(value, (dict, list)):
        raise SpliceError(f"{file}: {'.'.join(map(str, path))} is not a mapping's key")
    if new is REMOVE:
        if isinstance(value, dict):
            value.pop(last, None)
    else:
        value[last] = new  # type: ignore[index]


def _at(value: Any, path: Sequence[str | int]) -> Any:
    for key in path:
        if isinstance(value, list) and isinstance(key, int) and key < len(value):
            value = value[key]
            continue
        if not (isinstance(value, dict) and key in value):
            return REMOVE
        value = value[key]
    return value


def edit_to_json(edit: Edit) -> dict[str, Any]:
    """An edit as plain data (it travels from an xdist worker to the controller in a test report)."""
    out: dict[str, Any] = {"document": edit.document, "path": list(edit.path)}
    if edit.value is REMOVE:
        out["remove"] = True
    else:
        out["value"] = edit.value
    return out


def edit_from_json(data: Mapping[str, Any]) -> Edit:
    return Edit(int(data["document"]), tuple(data["path"]), REMOVE if data.get("remove") else data.get("value"))


def apply_update_requests(requests: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list[str]], list[str]]:
    """Apply the update requests of every trace, the edits of one file together; per file what changed, and
    one line per file that could not be updated (left as it was)."""
    by_file: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for request in requests:
        by_file[str(request["path"])].append(request)
    updated: dict[str, list[str]] = {}
    errors: list[str] = []
    for path, group in sorted(by_file.items()):
        shown = str(group[0]["file"])
        edits = [edit_from_json(e) for request in group for e in request["edits"]]
        changes = [line for request in group for line in request["changes"]]
        try:
            written = update_yaml_file(Path(path), edits) if edits else bool(changes)
        except (SpliceError, LoopguardError, yaml.YAMLError, OSError) as exc:
            errors.append(f"{shown}: {exc}")
            continue
        if written:
            updated[shown] = changes
    return updated, errors
