"""A trace from its mapping form, checked field by field: `trace_from_mapping` and the step reader under it.

Strict: unknown keys are errors (`x-` keys are kept as extensions at the top and on steps), and every error is
a `TraceError` naming the step index and the field, and saying what was expected (the caller adds the file and
line). Which keys each mapping may hold comes from the format's description (`_spec`); what each value may be
is checked here, and tests/core/test_spec.py proves it agrees with the description field by field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core._limits import MAX_INT, MAX_SETTING, MAX_STEPS
from ..core._model import (
    DENIED_BY,
    ORIGINS,
    OUTCOMES,
    PHASES,
    TRIGGERS,
    CompactedStep,
    Compaction,
    Done,
    DoneStep,
    LLMCall,
    LLMStep,
    Message,
    MessageStep,
    NotRun,
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
from ..errors import PolicyError, TraceError, brief
from ._spec import (
    BLOCKED_KEYS,
    BUDGET_KEYS,
    BUDGET_MINIMUM,
    CANCELLED_KEYS,
    COMPACTED_KEYS,
    CONTEXT_KEYS,
    DENIED_KEYS,
    DONE_KEYS,
    EXPECT_KEYS,
    LLM_KEYS,
    MESSAGE_KEYS,
    MODES,
    NAME_FORBIDDEN,
    ORIGIN_ROLES,
    REJECTED_KEYS,
    RESULT_KEYS,
    ROLES,
    RUN_EXPECT_KEYS,
    SOURCE_KEYS,
    SOURCE_KINDS,
    STEP_ACTIONS,
    STEP_KEYS,
    STEP_KINDS_KEYS,
    STEP_SOURCE_KEYS,
    TASK_KEYS,
    TOP_KEYS,
    USAGE_KEYS,
)

__all__ = ["parse_step_expect", "read_step", "step_source", "tname", "trace_from_mapping"]


# ---- small validators: each raises TraceError with the field it checks ------------------------------
def _fail(problem: str, field: str | None = None, step: int | None = None) -> TraceError:
    return TraceError(problem, step=step, field=field)


def _mapping(value: Any, field: str, step: int | None = None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(f"expected a mapping, got {tname(value)}", field, step)
    return value


def _str(value: Any, field: str, step: int | None = None, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise _fail(f"expected a {'non-empty ' if not empty else ''}string, got {tname(value)}", field, step)
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


def tname(value: Any) -> str:
    """The format's word for a value's type, for error messages."""
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
    heeded = e.get("heeded_within")
    heeded_within = (_int(heeded, "expect.heeded_within", step, minimum=1, maximum=MAX_STEPS)
                     if heeded is not None else None)
    return StepExpect(action, engine, reason, message, data, short=False, heeded_within=heeded_within)


def read_step(raw: Any, index: int) -> Step:
    """Step `index` from its mapping form."""
    s = _mapping(raw, "step", index)
    kinds = [k for k in STEP_KINDS_KEYS if k in s]
    if len(kinds) != 1:
        found = f"found {', '.join(kinds)}" if kinds else "found none"
        raise _fail(f"a step needs exactly one of {', '.join(STEP_KINDS_KEYS)} ({found})", None, index)
    kind = kinds[0]
    _keys(s, STEP_KEYS[kind], None, index)
    expect = parse_step_expect(s["expect"], index) if s.get("expect") is not None else None
    t = _int(s["t"], "t", index) if s.get("t") is not None else None
    agent = _str(s["agent"], "agent", index, empty=False) if s.get("agent") is not None else None
    source = step_source(s["source"], index) if s.get("source") is not None else None
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
        not_run = (_not_run(s, index, result is not None) if "denied" in s or "cancelled" in s or "blocked" in s
                   else None)
        return ToolStep(index, call, result, not_run, **common)
    if kind == "llm":
        return LLMStep(index, _llm(s["llm"], "llm", LLM_KEYS, index), **common)
    if kind == "rejected":
        return RejectedStep(index, _rejected(s["rejected"], index), **common)
    if kind == "phase":
        return PhaseStep(index, _choice(s["phase"], PHASES, "phase", index, "phase"), **common)
    if kind == "message":
        return MessageStep(index, _message(s["message"], index), **common)
    if kind == "compacted":
        return CompactedStep(index, _compacted(s["compacted"], index), **common)
    raw_done = s["done"]
    if raw_done is None or raw_done is True:
        raw_done = {}
    d = _mapping(raw_done, "done", index)
    _keys(d, DONE_KEYS, "done", index)
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


def _not_run(s: Mapping[str, Any], step: int, has_result: bool) -> NotRun | None:
    """Why a call never ran (`denied: {reason, by}`, `cancelled: {reason}` or `blocked: {reason}`), checked
    against its other keys."""
    denied, cancelled, blocked = s.get("denied"), s.get("cancelled"), s.get("blocked")
    given = [how for how, value in (("denied", denied), ("cancelled", cancelled), ("blocked", blocked))
             if value is not None]
    if not given:
        return None
    if len(given) > 1:
        raise _fail(f"a call that never ran is {' or '.join(given)}, not both", given[1], step)
    how = given[0]
    if how == "blocked":  # its result, if any, is what was known before it ran (`changed`)
        b = _mapping(blocked, "blocked", step)
        _keys(b, BLOCKED_KEYS, "blocked", step)
        return NotRun("blocked", _why(b, "blocked", step))
    if has_result:
        raise _fail(f"a {how} call never ran: it has no result (drop 'result' or '{how}')", "result", step)
    if how == "denied":
        d = _mapping(denied, "denied", step)
        _keys(d, DENIED_KEYS, "denied", step)
        reason = _why(d, "denied", step)
        by = _choice(d["by"], DENIED_BY, "denied.by", step, "'by' value") if d.get("by") is not None else None
        return NotRun("denied", reason, by)  # type: ignore[arg-type]
    c = _mapping(cancelled, "cancelled", step)
    _keys(c, CANCELLED_KEYS, "cancelled", step)
    return NotRun("cancelled", _why(c, "cancelled", step))


def _why(m: Mapping[str, Any], field: str, step: int) -> str:
    if m.get("reason") is None:
        raise _fail("missing 'reason' (why the call never ran)", f"{field}.reason", step)
    return _str(m["reason"], f"{field}.reason", step, empty=False)


def _compacted(raw: Any, step: int) -> Compaction:
    c = _mapping(raw if raw is not None else {}, "compacted", step)
    _keys(c, COMPACTED_KEYS, "compacted", step)
    trigger = _choice(c["trigger"], TRIGGERS, "compacted.trigger", step, "trigger") if c.get(
        "trigger") is not None else None
    tokens = _opt_int(c, "tokens_before", "compacted.tokens_before", step)
    text = _str(c["text"], "compacted.text", step) if c.get("text") is not None else None
    return Compaction(trigger, tokens, text)  # type: ignore[arg-type]


def _message(raw: Any, step: int) -> Message:
    m = _mapping(raw, "message", step)
    _keys(m, MESSAGE_KEYS, "message", step)
    role = _choice(m.get("role", "user"), ROLES, "message.role", step, "role")
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


def step_source(raw: Any, step: int) -> StepSource:
    """Where an imported step came from (`source: {file, row, index}`)."""
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
    _keys(t, TASK_KEYS, "task")
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
                budget[key] = _int(value, where, minimum=BUDGET_MINIMUM.get(key, 0), maximum=MAX_SETTING)
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
    mode = _choice(d.get("mode", "replay"), MODES, "mode", what="mode")
    steps_raw = d.get("steps")
    if steps_raw is None:
        if mode != "simulate":
            raise _fail("missing 'steps' (a list of steps)", "steps")
        steps_raw = []
    if not isinstance(steps_raw, list):
        raise _fail(f"expected a list of steps, got {tname(steps_raw)}", "steps")
    if len(steps_raw) > MAX_STEPS:  # replay keeps every step's result: memory grows with the step count
        raise _fail(f"{len(steps_raw)} steps; at most {MAX_STEPS} in one trace", "steps")
    steps = tuple(read_step(s, i) for i, s in enumerate(steps_raw))
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
        raise _fail(f"expected a preset name or a mapping, got {tname(policy)}", "policy")
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
    """A preset name or an inline mapping is checked as the trace loads; a policy file the trace names is read
    only by the replay that uses it (`policy_for`), so an explicit policy replays a trace whose file is gone."""
    if isinstance(policy, str) and policy.endswith((".yaml", ".yml")):
        return
    from ..runtime._policy import resolve_policy  # policy imports engines; keep trace loading light until needed

    try:
        resolve_policy(policy, base_dir=Path(path).parent if path else None)
    except PolicyError as exc:
        raise _fail(str(exc), "policy") from None

