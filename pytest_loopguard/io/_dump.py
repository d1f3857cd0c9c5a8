"""A trace written out: its mapping form (`trace_to_mapping`, the inverse of `trace_from_mapping`) and its text
as YAML, JSON or JSONL (the header on the first line, one step per line)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

import yaml

from ..core._model import Step, StepExpect, Trace
from ..core._wire import llm_mapping, result_mapping
from ._spec import file_format

__all__ = ["dump", "dumps", "expect_to_value", "step_to_mapping", "trace_to_mapping"]

try:
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Dumper = yaml.SafeDumper


def expect_to_value(e: StepExpect) -> Any:
    """The written form of a step expectation (a bare action where it was written as one)."""
    if e.short:
        return e.action
    out: dict[str, Any] = {"action": e.action}
    for key in ("engine", "reason", "message", "data", "heeded_within"):
        value = getattr(e, key)
        if value is not None:
            out[key] = dict(value) if key == "data" else value
    return out


def step_to_mapping(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if step.kind == "tool":
        out["tool"] = step.call.tool
        if step.call.args:
            out["args"] = dict(step.call.args)
        if step.result is not None:
            out["result"] = result_mapping(step.result)
        not_run = step.not_run
        if not_run is not None:
            out[not_run.how] = {"reason": not_run.reason, "by": not_run.by} if not_run.by is not None else {
                "reason": not_run.reason}
    elif step.kind == "llm":
        out["llm"] = llm_mapping(step.llm)
    elif step.kind == "phase":
        out["phase"] = step.phase
    elif step.kind == "message":
        m = step.message
        message: dict[str, Any] = {"role": m.role, "text": m.text}
        if m.origin is not None:
            message["origin"] = m.origin
        if m.name is not None:
            message["name"] = m.name
        out["message"] = message
    elif step.kind == "rejected":
        rejected: dict[str, Any] = {"reason": step.rejected.reason}
        if step.rejected.text is not None:
            rejected["text"] = step.rejected.text
        if step.rejected.llm is not None:
            rejected["llm"] = llm_mapping(step.rejected.llm)
        out["rejected"] = rejected
    elif step.kind == "compacted":
        c = step.compacted
        out["compacted"] = {k: v for k, v in (("trigger", c.trigger), ("tokens_before", c.tokens_before),
                                              ("text", c.text)) if v is not None}
    elif step.kind == "done":
        done: dict[str, Any] = {}
        if step.done.success is not None:
            done["success"] = step.done.success
        if step.done.text:
            done["text"] = step.done.text
        out["done"] = done
    if step.expect is not None:
        out["expect"] = expect_to_value(step.expect)
    if step.t is not None:
        out["t"] = step.t
    if step.agent is not None:
        out["agent"] = step.agent
    if step.source is not None:
        out["source"] = {"file": step.source.file, "row": step.source.row, "index": step.source.index}
    out.update(step.extensions)
    return out


def trace_to_mapping(trace: Trace, *, steps: bool = True) -> dict[str, Any]:
    """The mapping form of a trace: `trace_from_mapping(trace_to_mapping(t))` gives back the same trace."""
    out: dict[str, Any] = {"loopguard": trace.version, "name": trace.name}
    if trace.description:
        out["description"] = trace.description
    if trace.tags:
        out["tags"] = list(trace.tags)
    if trace.source:
        out["source"] = dict(trace.source)
    if trace.policy is not None:
        out["policy"] = trace.policy if isinstance(trace.policy, str) else dict(trace.policy)
    if trace.task is not None:
        task: dict[str, Any] = {"objective": trace.task.objective, "phase": trace.task.phase}
        if trace.task.budget:
            task["budget"] = {k: list(v) if isinstance(v, tuple) else v for k, v in trace.task.budget.items()}
        out["task"] = task
    if trace.context:
        out["context"] = dict(trace.context)
    if trace.strict:
        out["strict"] = True
    if trace.mode != "replay":
        out["mode"] = trace.mode
    for key in ("env", "agent"):
        value = getattr(trace, key)
        if value:
            out[key] = dict(value)
    if trace.seed is not None:
        out["seed"] = trace.seed
    if trace.max_turns is not None:
        out["max_turns"] = trace.max_turns
    out.update(trace.extensions)
    if steps:
        out["steps"] = [step_to_mapping(s) for s in trace.steps]
    if trace.expect is not None:
        e = trace.expect
        exp: dict[str, Any] = {}
        if e.outcome is not None:
            exp["outcome"] = e.outcome
        if e.stopped_by is not None or e.has_stopped_by:
            exp["stopped_by"] = e.stopped_by
        if e.stopped_at is not None or e.has_stopped_at:
            exp["stopped_at"] = e.stopped_at
        if e.counts is not None:
            exp["counts"] = dict(e.counts)
        out["expect"] = exp
    return out


def dumps(trace: Trace, fmt: str = "yaml") -> str:
    """The text of a trace in `fmt` (yaml, json or jsonl)."""
    if fmt == "jsonl":
        header = trace_to_mapping(trace, steps=False)
        lines = [json.dumps(header, ensure_ascii=False, default=_json_default)]
        lines += [json.dumps(step_to_mapping(s), ensure_ascii=False, default=_json_default) for s in trace.steps]
        return "\n".join(lines) + "\n"
    mapping = trace_to_mapping(trace)
    if fmt == "json":
        return json.dumps(mapping, ensure_ascii=False, indent=2, default=_json_default) + "\n"
    if fmt != "yaml":
        raise ValueError(f"unknown format {fmt!r}; expected yaml, json or jsonl")
    try:
        text: str = yaml.dump(mapping, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    except UnicodeEncodeError:
        # a lone surrogate (a live run's Python string; the readers of foreign input already replace them)
        # cannot be written as UTF-8, and YAML's `\uD800` escape would not load again: it becomes U+FFFD,
        # as the readers make it
        text = yaml.dump(_without_surrogates(mapping), Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                         width=110)
    return text


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_surrogates(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {value!r}")


def dump(trace: Trace, path: str | Path) -> None:
    """Write a trace to `path`, in the format its suffix names."""
    p = Path(path)
    text = dumps(trace, file_format(p))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in JSON text: U+FFFD, as in `dumps`'s YAML
        data = _SURROGATE.sub("\ufffd", text).encode("utf-8")
    p.write_bytes(data)

