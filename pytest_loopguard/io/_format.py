"""Load, dump and validate traces (YAML, JSON, JSONL).

Loading is strict: unknown keys are errors (`x-` keys are kept as extensions), and every error is a
`TraceError` naming the file, the step index, the line where the parser knows it, the field and what
was expected. JSONL carries the header on its first line and one step per line; a torn last line (a
crashed recorder) is a warning, never a crash.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from ..core._limits import MAX_INT, MAX_SETTING, MAX_STEPS
from ..core._model import (
    ACTIONS,
    ORIGINS,
    OUTCOMES,
    PHASES,
    Done,
    DoneStep,
    LLMCall,
    LLMStep,
    Message,
    MessageStep,
    PhaseStep,
    Rejected,
    RejectedStep,
    RunExpect,
    Step,
    StepExpect,
    StepSource,
    Task,
    ToolCall,
    ToolResult,
    ToolStep,
    Trace,
)
from ..core._safeload import parse_json, parse_yaml, read_text
from ..errors import NotATraceError, PolicyError, TraceError, brief, warn

__all__ = [
    "BUDGET_KEYS",
    "CONTEXT_KEYS",
    "SUFFIXES",
    "dump",
    "dumps",
    "expect_to_value",
    "iter_trace_files",
    "load",
    "load_file",
    "loads",
    "parse_step_expect",
    "trace_from_mapping",
    "trace_to_mapping",
    "validate_paths",
]

SUFFIXES: Final = (".yaml", ".yml", ".json", ".jsonl")
NAME_FORBIDDEN: Final = ("::", "[", "]")
TOP_KEYS: Final = (
    "loopguard", "name", "description", "tags", "source", "policy", "task", "context", "strict",
    "steps", "expect", "mode", "env", "agent", "seed", "max_turns",
)
STEP_KINDS_KEYS: Final = ("tool", "llm", "phase", "message", "done", "rejected")
SOURCE_KINDS: Final = ("synthetic", "recorded", "imported", "simulated")
SOURCE_KEYS: Final = ("kind", "agent", "model", "origin", "license")
BUDGET_KEYS: Final = (
    "max_tool_calls", "max_wall_ms", "max_consecutive_same_tool", "max_observation_streak",
    "max_failure_streak", "max_same_url_navigations", "allowed_domains", "checkpoint_every_calls",
)
CONTEXT_KEYS: Final = ("window_tokens",)
RESULT_KEYS: Final = ("ok", "text", "error", "tokens", "bytes", "changed", "exit_code")
LLM_KEYS: Final = ("input_tokens", "output_tokens", "error", "text")
USAGE_KEYS: Final = ("input_tokens", "output_tokens")  # a rejected turn's `llm`: usage only, it did not fail
MESSAGE_KEYS: Final = ("role", "text", "origin", "name")
REJECTED_KEYS: Final = ("reason", "text", "llm")
STEP_SOURCE_KEYS: Final = ("file", "row", "index")
# which roles each origin may speak in: a person writes user turns; harness feedback arrives as a user or
# system turn; another agent's words arrive as a user turn or, in group chats, an assistant turn
ORIGIN_ROLES: Final[Mapping[str, tuple[str, ...]]] = {
    "user": ("user",), "harness": ("user", "system"), "agent": ("user", "assistant"),
}
EXPECT_KEYS: Final = ("action", "engine", "reason", "message", "data")
RUN_EXPECT_KEYS: Final = ("outcome", "stopped_by", "stopped_at", "counts")
STEP_ACTIONS: Final = (*ACTIONS, "not_reached")

try:
    _Loader: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _Loader, _Dumper = yaml.SafeLoader, yaml.SafeDumper


# ---- small validators: each raises TraceError with the field it checks ------------------------------
def _fail(problem: str, field: str | None = None, step: int | None = None) -> TraceError:
    return TraceError(problem, step=step, field=field)


def _mapping(value: Any, field: str, step: int | None = None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(f"expected a mapping, got {_tname(value)}", field, step)
    return value


def _str(value: Any, field: str, step: int | None = None, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise _fail(f"expected a {'non-empty ' if not empty else ''}string, got {_tname(value)}", field, step)
    return value


def _int(value: Any, field: str, step: int | None = None, *, minimum: int = 0, maximum: int = MAX_INT) -> int:
    # the range is checked before int(): int(1e300) is a 997-bit number the engines cannot use
    ok = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not ok or not minimum <= value <= maximum:
        raise _fail(f"expected an integer ≥ {minimum} and ≤ {maximum}, got {brief(value)}", field, step)
    return int(value)


def _opt_int(raw: Mapping[str, Any], key: str, field: str, step: int | None) -> int | None:
    return _int(raw[key], field, step, maximum=MAX_SETTING) if raw.get(key) is not None else None


def _bool(value: Any, field: str, step: int | None = None) -> bool:
    if not isinstance(value, bool):
        raise _fail(f"expected true or false, got {brief(value)}", field, step)
    return value


def _choice(value: Any, choices: Iterable[str], field: str, step: int | None = None, what: str = "value") -> str:
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise _fail(f"unknown {what} {brief(value)}; expected one of {', '.join(options)}", field, step)
    return str(value)


def _keys(raw: Mapping[str, Any], allowed: Iterable[str], field: str | None, step: int | None = None) -> None:
    allowed_set = set(allowed)
    for key in raw:
        if not isinstance(key, str):
            raise _fail(f"keys must be strings, got {brief(key)}", field, step)
        if key not in allowed_set and not key.startswith("x-"):
            where = f"{field}.{key}" if field else key
            raise _fail(f"unknown key {brief(key)}; expected one of {', '.join(sorted(allowed_set))}", where, step)


def _ext(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return {k: v for k, v in raw.items() if isinstance(k, str) and k.startswith("x-")}


def _tname(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "mapping", list: "list", str: "string", bool: "boolean"}.get(type(value), type(value).__name__)


def _check_finite(value: Any, field: str, step: int | None) -> None:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        raise _fail("NaN and Infinity are not allowed", field, step)
    if isinstance(value, Mapping):
        for k, v in value.items():
            _check_finite(v, f"{field}.{k}", step)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, f"{field}[{i}]", step)


# ---- parsing ----------------------------------------------------------------------------------------
def _result(raw: Any, step: int) -> ToolResult:
    r = _mapping(raw, "result", step)
    _keys(r, RESULT_KEYS, "result", step)
    error = r.get("error")
    if error is not None:
        error = _str(error, "result.error", step)
    exit_code: int | None = None
    if r.get("exit_code") is not None:
        code = r["exit_code"]
        if isinstance(code, bool) or not isinstance(code, int):
            raise _fail(f"expected an integer exit code, got {code!r}", "result.exit_code", step)
        exit_code = code
    # `ok` and `error` decide when written; otherwise a non-zero exit code is a failure
    ok = _bool(r["ok"], "result.ok", step) if "ok" in r else error is None and not exit_code
    if ok and error is not None:
        raise _fail("a result with an error cannot be ok: true", "result.ok", step)
    text = _str(r["text"], "result.text", step) if r.get("text") is not None else None
    tokens = _int(r["tokens"], "result.tokens", step, maximum=MAX_SETTING) if r.get("tokens") is not None else None
    size = _int(r["bytes"], "result.bytes", step, maximum=MAX_SETTING) if r.get("bytes") is not None else None
    changed = _bool(r["changed"], "result.changed", step) if "changed" in r else False
    return ToolResult(ok=ok, text=text, error=error, tokens=tokens, bytes=size, changed=changed, exit_code=exit_code)


def parse_step_expect(raw: Any, step: int | None = None) -> StepExpect:
    """A step expectation from its written form: an action, or {action, engine, reason, message, data}."""
    if isinstance(raw, str):
        return StepExpect(_choice(raw, STEP_ACTIONS, "expect", step, "action"))
    e = _mapping(raw, "expect", step)
    _keys(e, EXPECT_KEYS, "expect", step)
    if "action" not in e:
        raise _fail(f"missing 'action'; expected one of {', '.join(STEP_ACTIONS)}", "expect.action", step)
    action = _choice(e["action"], STEP_ACTIONS, "expect.action", step, "action")
    engine = _str(e["engine"], "expect.engine", step, empty=False) if e.get("engine") is not None else None
    reason = _str(e["reason"], "expect.reason", step, empty=False) if e.get("reason") is not None else None
    if reason is not None and "." not in reason:
        raise _fail(f"a reason is a dotted code like 'loop_guard.consecutive_block', got {brief(reason)}",
                    "expect.reason", step)
    message = _str(e["message"], "expect.message", step) if e.get("message") is not None else None
    data = dict(_mapping(e["data"], "expect.data", step)) if e.get("data") is not None else None
    return StepExpect(action, engine, reason, message, data, short=False)


def _step(raw: Any, index: int) -> Step:
    s = _mapping(raw, "step", index)
    kinds = [k for k in STEP_KINDS_KEYS if k in s]
    if len(kinds) != 1:
        found = f"found {', '.join(kinds)}" if kinds else "found none"
        raise _fail(f"a step needs exactly one of {', '.join(STEP_KINDS_KEYS)} ({found})", None, index)
    kind = kinds[0]
    allowed = {kind, "expect", "t", "agent", "source"} | ({"args", "result"} if kind == "tool" else set())
    _keys(s, allowed, None, index)
    expect = parse_step_expect(s["expect"], index) if s.get("expect") is not None else None
    t = _int(s["t"], "t", index) if s.get("t") is not None else None
    agent = _str(s["agent"], "agent", index, empty=False) if s.get("agent") is not None else None
    source = _step_source(s["source"], index) if s.get("source") is not None else None
    common: dict[str, Any] = {"expect": expect, "t": t, "extensions": _ext(s), "agent": agent, "source": source}
    if kind == "tool":
        tool = _str(s["tool"], "tool", index, empty=False)
        if "\x1f" in tool:
            raise _fail("a tool name cannot contain the unit separator", "tool", index)
        args_raw = s.get("args")
        args = dict(_mapping(args_raw, "args", index)) if args_raw is not None else {}
        _check_finite(args, "args", index)
        try:
            call = ToolCall.of(tool, args)
        except ValueError as exc:
            raise _fail(str(exc), "args", index) from None
        result = _result(s["result"], index) if s.get("result") is not None else None
        return ToolStep(index, call, result, **common)
    if kind == "llm":
        return LLMStep(index, _llm(s["llm"], "llm", LLM_KEYS, index), **common)
    if kind == "rejected":
        return RejectedStep(index, _rejected(s["rejected"], index), **common)
    if kind == "phase":
        return PhaseStep(index, _choice(s["phase"], PHASES, "phase", index, "phase"), **common)
    if kind == "message":
        return MessageStep(index, _message(s["message"], index), **common)
    raw_done = s["done"]
    if raw_done is None or raw_done is True:
        raw_done = {}
    d = _mapping(raw_done, "done", index)
    _keys(d, ("success", "text"), "done", index)
    success = _bool(d["success"], "done.success", index) if d.get("success") is not None else None
    return DoneStep(index, Done(success, _str(d.get("text", ""), "done.text", index)), **common)


def _llm(raw: Any, field: str, keys: tuple[str, ...], step: int) -> LLMCall:
    m = _mapping(raw if raw is not None else {}, field, step)
    _keys(m, keys, field, step)
    return LLMCall(
        input_tokens=_opt_int(m, "input_tokens", f"{field}.input_tokens", step),
        output_tokens=_opt_int(m, "output_tokens", f"{field}.output_tokens", step),
        error=_str(m["error"], f"{field}.error", step) if m.get("error") is not None else None,
        text=_str(m["text"], f"{field}.text", step) if m.get("text") is not None else None,
    )


def _rejected(raw: Any, step: int) -> Rejected:
    r = _mapping(raw, "rejected", step)
    _keys(r, REJECTED_KEYS, "rejected", step)
    if r.get("reason") is None:
        raise _fail("missing 'reason' (why the harness refused the turn, e.g. 'no tool call')",
                    "rejected.reason", step)
    reason = _str(r["reason"], "rejected.reason", step, empty=False)
    text = _str(r["text"], "rejected.text", step) if r.get("text") is not None else None
    llm = _llm(r["llm"], "rejected.llm", USAGE_KEYS, step) if r.get("llm") is not None else None
    return Rejected(reason, text, llm)


def _message(raw: Any, step: int) -> Message:
    m = _mapping(raw, "message", step)
    _keys(m, MESSAGE_KEYS, "message", step)
    role = _choice(m.get("role", "user"), ("user", "system", "assistant"), "message.role", step, "role")
    text = _str(m.get("text", ""), "message.text", step)
    origin = _choice(m["origin"], ORIGINS, "message.origin", step, "origin") if m.get("origin") is not None else None
    if origin is not None and role not in ORIGIN_ROLES[origin]:
        raise _fail(f"a message with origin {origin!r} has role {' or '.join(ORIGIN_ROLES[origin])}, got {role!r}",
                    "message.origin", step)
    name = _str(m["name"], "message.name", step, empty=False) if m.get("name") is not None else None
    if origin == "agent" and name is None:
        raise _fail("a message with origin 'agent' needs 'name' (which agent spoke)", "message.name", step)
    if name is not None and origin != "agent":
        raise _fail("'name' names another agent: it needs origin 'agent'", "message.name", step)
    return Message(role, text, origin, name)  # type: ignore[arg-type]


def _step_source(raw: Any, step: int) -> StepSource:
    src = _mapping(raw, "source", step)
    _keys(src, STEP_SOURCE_KEYS, "source", step)
    if src.get("file") is None:
        raise _fail("missing 'file' (the log the step was imported from)", "source.file", step)
    file = _str(src["file"], "source.file", step, empty=False)
    row = _int(src["row"], "source.row", step) if src.get("row") is not None else None
    native = src.get("index")
    if native is not None and not isinstance(native, str):
        native = _int(native, "source.index", step)
    return StepSource(file, row, native)


def _task(raw: Any) -> Task:
    t = _mapping(raw, "task")
    _keys(t, ("objective", "phase", "budget"), "task")
    objective = _str(t.get("objective", ""), "task.objective")
    phase = _choice(t.get("phase", "explore"), PHASES, "task.phase", what="phase")
    budget: dict[str, Any] = {}
    if t.get("budget") is not None:
        b = _mapping(t["budget"], "task.budget")
        _keys(b, BUDGET_KEYS, "task.budget")
        for key, value in b.items():
            where = f"task.budget.{key}"
            if key == "allowed_domains":
                if value is None:
                    budget[key] = None
                    continue
                if not isinstance(value, list) or not all(isinstance(d, str) and d for d in value):
                    raise _fail(f"expected a list of domain names, got {brief(value)}", where)
                budget[key] = tuple(value)
            elif value is None:
                budget[key] = None
            else:
                low = 1 if key == "checkpoint_every_calls" else 0
                budget[key] = _int(value, where, minimum=low, maximum=MAX_SETTING)
    return Task(objective, phase, budget)


def _run_expect(raw: Any) -> RunExpect:
    e = _mapping(raw, "expect")
    _keys(e, RUN_EXPECT_KEYS, "expect")
    outcome = _choice(e["outcome"], OUTCOMES, "expect.outcome", what="outcome") if "outcome" in e else None
    stopped_by = _str(e["stopped_by"], "expect.stopped_by", empty=False) if e.get("stopped_by") is not None else None
    stopped_at = _int(e["stopped_at"], "expect.stopped_at") if e.get("stopped_at") is not None else None
    counts: dict[str, int] | None = None
    if e.get("counts") is not None:
        c = _mapping(e["counts"], "expect.counts")
        counts = {}
        for action, n in c.items():
            _choice(action, STEP_ACTIONS, f"expect.counts.{action}", what="action")
            counts[str(action)] = _int(n, f"expect.counts.{action}")
    return RunExpect(outcome, stopped_by, stopped_at, counts, "stopped_by" in e, "stopped_at" in e)


def trace_from_mapping(raw: Any, *, path: str | None = None, warnings: tuple[str, ...] = ()) -> Trace:
    """A Trace from its mapping form. Errors carry the step and field but no file or line."""
    d = _mapping(raw, "trace")
    _keys(d, TOP_KEYS, None)
    if "loopguard" not in d:
        raise _fail("missing 'loopguard' (the trace format version; expected 1)", "loopguard")
    # `true == 1` and `1.0 == 1` in Python: the version is the integer 1, nothing that compares equal to it
    if type(d["loopguard"]) is not int or d["loopguard"] != 1:
        raise _fail(f"unsupported format version {brief(d['loopguard'])}; expected 1 (the integer)", "loopguard")
    if "name" not in d:
        raise _fail("missing 'name' (a name unique within the corpus)", "name")
    name = _str(d["name"], "name", empty=False)
    # the name is the pytest item's: `::` and brackets would make a test id that selects nothing
    if any(part in name for part in NAME_FORBIDDEN):
        raise _fail(f"a name cannot contain {', '.join(repr(p) for p in NAME_FORBIDDEN)} (it is a pytest test id); "
                    f"got {name!r}", "name")
    mode = _choice(d.get("mode", "replay"), ("replay", "simulate"), "mode", what="mode")
    steps_raw = d.get("steps")
    if steps_raw is None:
        if mode != "simulate":
            raise _fail("missing 'steps' (a list of steps)", "steps")
        steps_raw = []
    if not isinstance(steps_raw, list):
        raise _fail(f"expected a list of steps, got {_tname(steps_raw)}", "steps")
    if len(steps_raw) > MAX_STEPS:  # replay keeps every step's result: memory grows with the step count
        raise _fail(f"{len(steps_raw)} steps; at most {MAX_STEPS} in one trace", "steps")
    steps = tuple(_step(s, i) for i, s in enumerate(steps_raw))
    tags = d.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise _fail("expected a list of strings", "tags")
    source: Mapping[str, Any] = {}
    if d.get("source") is not None:
        source = _mapping(d["source"], "source")
        _keys(source, SOURCE_KEYS, "source")
        if "kind" in source:
            _choice(source["kind"], SOURCE_KINDS, "source.kind", what="kind")
    policy = d.get("policy")
    if policy is not None and not isinstance(policy, (str, Mapping)):
        raise _fail(f"expected a preset name or a mapping, got {_tname(policy)}", "policy")
    if policy is not None:
        _check_policy(policy, path)
    context: Mapping[str, Any] = {}
    if d.get("context") is not None:
        context = _mapping(d["context"], "context")
        _keys(context, CONTEXT_KEYS, "context")
        if "window_tokens" in context:
            _int(context["window_tokens"], "context.window_tokens", minimum=1, maximum=MAX_SETTING)
    env = _mapping(d["env"], "env") if d.get("env") is not None else {}
    agent = _mapping(d["agent"], "agent") if d.get("agent") is not None else {}
    return Trace(
        name=name,
        steps=steps,
        version=1,
        description=_str(d.get("description", ""), "description"),
        tags=tuple(tags),
        source=dict(source),
        policy=policy,
        task=_task(d["task"]) if d.get("task") is not None else None,
        context=dict(context),
        strict=_bool(d["strict"], "strict") if "strict" in d else False,
        expect=_run_expect(d["expect"]) if d.get("expect") is not None else None,
        mode=mode,  # type: ignore[arg-type]
        env=dict(env),
        agent=dict(agent),
        seed=_int(d["seed"], "seed") if d.get("seed") is not None else None,
        max_turns=_opt_turns(d),
        path=path,
        extensions=_ext(d),
        warnings=warnings,
    )


def _opt_turns(d: Mapping[str, Any]) -> int | None:
    return _int(d["max_turns"], "max_turns", minimum=1, maximum=MAX_SETTING) if d.get("max_turns") is not None else None


def _check_policy(policy: Any, path: str | None) -> None:
    from ..runtime._policy import resolve_policy  # policy imports engines; keep trace loading light until needed

    try:
        resolve_policy(policy, base_dir=Path(path).parent if path else None)
    except PolicyError as exc:
        raise _fail(str(exc), "policy") from None


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


def _not_a_trace(path: str | None, document: Any = None, *, parsed: bool = True) -> NotATraceError:
    problem = MISSING_VERSION if document is None or isinstance(document, Mapping) else (
        f"expected a mapping with a top-level 'loopguard' key, got {_tname(document)}")
    return NotATraceError(problem, file=path, line=1, document=document, parsed=parsed)


def loads(text: str, *, fmt: str = "yaml", path: str | None = None) -> list[Trace]:
    """Every trace in `text` (YAML may hold several documents; JSON one; JSONL one).

    Text in which no document has a top-level `loopguard` key raises `NotATraceError`: some other file.
    Text that never mentions `loopguard` is not parsed at all (a substring scan decides it).
    """
    if "loopguard" not in text:
        raise _not_a_trace(path, parsed=False)
    if fmt == "jsonl":
        return [_loads_jsonl(text, path)]
    if fmt == "json":
        raw = parse_json(text, path)
        if not _claims_trace(raw):
            raise _not_a_trace(path, raw)
        try:
            return [trace_from_mapping(raw, path=path)]
        except TraceError as exc:
            raise exc.located(file=path) from None
    docs = parse_yaml(text, path)
    if not any(_claims_trace(doc) for doc in docs):
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


def _loads_jsonl(text: str, path: str | None) -> Trace:
    # only "\n" ends a JSONL record: str.splitlines() would also split on U+0085, U+2028 and the like,
    # which JSON strings may hold raw (dumps writes them unescaped)
    lines = text.split("\n")
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    if not numbered:
        raise TraceError("the file holds no trace (expected a header line)", file=path, line=1)
    # The header decides whether this is a trace at all, before any other line is parsed.
    first_line, first = numbered[0]
    try:
        header_value = parse_json(first, path, first_line)
    except TraceError:
        if "loopguard" not in first:
            raise _not_a_trace(path, parsed=False) from None
        raise
    if not _claims_trace(header_value):
        raise _not_a_trace(path, header_value)
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


def _plain_jsonl(header: Mapping[str, Any], rows: list[tuple[int, str]], path: str | None) -> Trace | None:
    """The trace when every step line is plainly valid (`faststep.plain_step`) and so is the header; None
    sends the file through the full checks below, which find and word the first error as they always have."""
    from ._faststep import plain_step  # faststep builds on this module's step reader

    if "steps" in header or len(rows) > MAX_STEPS:
        return None
    steps = []
    for index, (_, line) in enumerate(rows):
        step = plain_step(line, index)
        if step is None:
            return None
        steps.append(step)
    try:
        trace = trace_from_mapping({**header, "steps": []}, path=path)
    except TraceError:
        return None
    return dataclasses.replace(trace, steps=tuple(steps))


def _fmt(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise TraceError(f"unknown trace file type {suffix!r}; expected one of {', '.join(SUFFIXES)}",
                         file=str(path))
    return {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl"}[suffix]


def load_file(path: str | Path) -> list[Trace]:
    """Every trace in one file."""
    p = Path(path)
    fmt = _fmt(p)
    return loads(read_text(p), fmt=fmt, path=str(path))


def load(path: str | Path) -> Trace:
    """The one trace in a file (a file with several traces: use `load_file`)."""
    traces = load_file(path)
    if len(traces) != 1:
        raise TraceError(f"the file holds {len(traces)} traces; use load_file() for several", file=str(path))
    return traces[0]


def iter_trace_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Trace files under each path (files are taken as given; folders are searched recursively, sorted)."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            # not only regular files: a FIFO or a link to a device named like a trace is reported, not skipped
            yield from sorted(f for f in p.rglob("*") if f.suffix.lower() in SUFFIXES and not f.is_dir())
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


# ---- dumping -----------------------------------------------------------------------------------------
def _result_to_mapping(r: ToolResult) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if r.error is not None:
        out["error"] = r.error
    elif not r.ok:
        if not r.exit_code:  # a non-zero exit code already says it failed
            out["ok"] = False
    else:
        out["ok"] = True
    if r.text is not None:
        out["text"] = r.text
    if r.tokens is not None:
        out["tokens"] = r.tokens
    if r.bytes is not None:
        out["bytes"] = r.bytes
    if r.changed:
        out["changed"] = True
    if r.exit_code is not None:
        out["exit_code"] = r.exit_code
    return out


def expect_to_value(e: StepExpect) -> Any:
    """The written form of a step expectation (a bare action where it was written as one)."""
    if e.short:
        return e.action
    out: dict[str, Any] = {"action": e.action}
    for key in ("engine", "reason", "message", "data"):
        value = getattr(e, key)
        if value is not None:
            out[key] = dict(value) if key == "data" else value
    return out


def step_to_mapping(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if step.kind == "tool":
        assert step.call is not None
        out["tool"] = step.call.tool
        if step.call.args:
            out["args"] = dict(step.call.args)
        if step.result is not None:
            out["result"] = _result_to_mapping(step.result)
    elif step.kind == "llm":
        assert step.llm is not None
        out["llm"] = _llm_to_mapping(step.llm)
    elif step.kind == "phase":
        out["phase"] = step.phase
    elif step.kind == "message":
        assert step.message is not None
        m = step.message
        message: dict[str, Any] = {"role": m.role, "text": m.text}
        if m.origin is not None:
            message["origin"] = m.origin
        if m.name is not None:
            message["name"] = m.name
        out["message"] = message
    elif step.kind == "rejected":
        assert step.rejected is not None
        rejected: dict[str, Any] = {"reason": step.rejected.reason}
        if step.rejected.text is not None:
            rejected["text"] = step.rejected.text
        if step.rejected.llm is not None:
            rejected["llm"] = _llm_to_mapping(step.rejected.llm)
        out["rejected"] = rejected
    else:
        assert step.done is not None
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


def _llm_to_mapping(llm: LLMCall) -> dict[str, Any]:
    return {k: getattr(llm, k) for k in LLM_KEYS if getattr(llm, k) is not None}


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
    text: str = yaml.dump(mapping, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    return text


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {value!r}")


def dump(trace: Trace, path: str | Path) -> None:
    """Write a trace to `path`, in the format its suffix names."""
    p = Path(path)
    p.write_text(dumps(trace, _fmt(p)), encoding="utf-8")

