"""The trace format (version 1) described once, as data: every mapping's fields with their types, bounds and values.

The loader's key checks (`_read`), the fast JSONL step reader's key sets (`_faststep`), the collection header
reader's keys (`_headers`) and the JSON Schema (`_schema.trace_schema`) are all derived from the shapes below.
The loader words its own errors field by field, and what a field's value may be is checked there by hand (a
generic checker would be slower and word errors worse); tests/core/test_spec.py proves, field by field, that the
loader and the generated schema accept and refuse the same values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from ..core._limits import MAX_INT, MAX_SETTING, MAX_STEPS
from ..core._model import ACTIONS, DENIED_BY, NOT_RUN_HOWS, ORIGINS, OUTCOMES, PHASES, TRIGGERS
from ..core._model import STEP_KINDS as _STEP_KINDS
from ..errors import TraceError

__all__ = [
    "BLOCKED_KEYS",
    "BUDGET_KEYS",
    "BUDGET_MINIMUM",
    "CANCELLED_KEYS",
    "COMPACTED_KEYS",
    "CONTEXT_KEYS",
    "DENIED_KEYS",
    "DONE_KEYS",
    "EXPECT_KEYS",
    "HEADER_KEYS",
    "LLM_KEYS",
    "MESSAGE_KEYS",
    "MODES",
    "NAMED_ORIGIN",
    "NAME_FORBIDDEN",
    "NOT_RUN_KEYS",
    "ORIGIN_ROLES",
    "REJECTED_KEYS",
    "RESULT_KEYS",
    "ROLES",
    "RUN_EXPECT_KEYS",
    "SHAPES",
    "SOURCE_KEYS",
    "SOURCE_KINDS",
    "STEP_ACTIONS",
    "STEP_COMMON",
    "STEP_COMMON_KEYS",
    "STEP_KEYS",
    "STEP_KINDS",
    "STEP_KINDS_KEYS",
    "STEP_SOURCE_KEYS",
    "SUFFIXES",
    "TASK_KEYS",
    "TOP_KEYS",
    "USAGE_KEYS",
    "Field",
    "Shape",
    "file_format",
]

SUFFIXES: Final = (".yaml", ".yml", ".json", ".jsonl")
_FORMATS: Final = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl"}
NAME_FORBIDDEN: Final = ("::", "[", "]")  # a trace's name is a pytest test id: these would select nothing
STEP_ACTIONS: Final = (*ACTIONS, "not_reached")
SOURCE_KINDS: Final = ("synthetic", "recorded", "imported", "simulated")
# which roles each origin may speak in: a person writes user turns; harness feedback arrives as a user or
# system turn; another agent's words arrive as a user turn or, in group chats, an assistant turn
ORIGIN_ROLES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "user": ("user",), "harness": ("user", "system"), "agent": ("user", "assistant"),
})
NAMED_ORIGIN: Final = "agent"  # the one origin whose message names its speaker (`name`)
assert tuple(ORIGIN_ROLES) == ORIGINS


@dataclass(frozen=True, slots=True)
class Field:
    """One key of a mapping and what its value may be.

    `types` are JSON types (string, integer, boolean, object, array; none: any value); `ref` names another
    shape the value is; `choices` the strings it may be; `nullable` whether a written null reads as absent.
    Bounds: `minimum`/`maximum` for integers, `non_empty` for strings, `forbid` substrings it may not hold.
    """

    name: str
    types: tuple[str, ...] = ()
    required: bool = False
    nullable: bool = True
    ref: str | None = None
    choices: tuple[Any, ...] = ()
    const: Any = None
    true_ok: bool = False  # `done: true` reads as `done: {}`
    minimum: int | None = None
    maximum: int | None = None
    non_empty: bool = False
    forbid: tuple[str, ...] = ()
    pattern: str | None = None
    items: Field | None = None  # each item of an array
    max_items: int | None = None
    key_choices: tuple[str, ...] = ()  # an object's keys (its values are `items`)
    header: bool = False  # read by pytest's collection (`_headers`) without loading the trace
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Shape:
    """A mapping of the format: its fields in their written order; `x-` keys are allowed in every one."""

    name: str
    fields: tuple[Field, ...]
    rules: tuple[Mapping[str, Any], ...] = ()  # what ties fields together, as JSON Schema (the loader checks it)
    keys: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(f.name for f in self.fields))


def _count(name: str, minimum: int = 0, maximum: int = MAX_SETTING, **kw: Any) -> Field:
    return Field(name, ("integer",), minimum=minimum, maximum=maximum, **kw)


def _text(name: str, **kw: Any) -> Field:
    return Field(name, ("string",), **kw)


_STRING: Final = Field("item", ("string",), nullable=False)

TASK: Final = Shape("task", (
    _text("objective", nullable=False),
    Field("phase", choices=PHASES, nullable=False),
    Field("budget", ref="budget"),
))
BUDGET: Final = Shape("budget", (
    _count("max_tool_calls"),
    _count("max_wall_ms"),
    _count("max_consecutive_same_tool"),
    _count("max_observation_streak"),
    _count("max_failure_streak"),
    _count("max_same_url_navigations"),
    Field("allowed_domains", ("array",), items=Field("item", ("string",), nullable=False, non_empty=True)),
    _count("checkpoint_every_calls", minimum=1),
))
SOURCE: Final = Shape("source", (
    Field("kind", choices=SOURCE_KINDS, nullable=False),
    Field("agent"), Field("model"), Field("origin"), Field("license"),
))
CONTEXT: Final = Shape("context", (_count("window_tokens", minimum=1, nullable=False),))
RESULT: Final = Shape("result", (
    Field("ok", ("boolean",), nullable=False),
    _text("text"),
    _text("error"),
    _count("tokens"),
    _count("bytes"),
    Field("changed", ("boolean",), nullable=False),
    _count("exit_code", minimum=-MAX_INT, maximum=MAX_INT),
), rules=({"not": {"properties": {"ok": {"const": True}, "error": {"type": "string"}}, "required": ["ok", "error"]}},))
LLM: Final = Shape("llm", (_count("input_tokens"), _count("output_tokens"), _text("error"), _text("text")))
USAGE: Final = Shape("usage", LLM.fields[:2])  # a rejected turn's `llm`: usage only, it did not fail


def _origin_rules() -> tuple[Mapping[str, Any], ...]:
    """Each origin's roles, and `name` with the named origin only (ORIGIN_ROLES, NAMED_ORIGIN)."""
    rules: list[Mapping[str, Any]] = []
    for origin, roles in ORIGIN_ROLES.items():
        role: dict[str, Any] = {"const": roles[0]} if len(roles) == 1 else {"enum": list(roles)}
        then: dict[str, Any] = {"properties": {"role": role, "name": {"type": "null"}}}
        if origin == NAMED_ORIGIN:
            then = {"properties": {"role": role, "name": {"type": "string", "minLength": 1}}, "required": ["name"]}
        rules.append({"if": {"properties": {"origin": {"const": origin}}, "required": ["origin"]}, "then": then})
    rules.append({"if": {"not": {"properties": {"origin": {"enum": [NAMED_ORIGIN]}}, "required": ["origin"]}},
                  "then": {"properties": {"name": {"type": "null"}}}})
    return ({"allOf": rules},)


MESSAGE: Final = Shape("message", (
    Field("role", choices=("user", "system", "assistant"), nullable=False),
    _text("text", nullable=False),
    Field("origin", choices=ORIGINS),
    _text("name", non_empty=True),
), rules=_origin_rules())
DONE: Final = Shape("done", (Field("success", ("boolean",)), _text("text", nullable=False)))
REJECTED: Final = Shape("rejected", (
    _text("reason", required=True, nullable=False, non_empty=True),
    _text("text"),
    Field("llm", ref="usage"),
))
# a call that never ran (on a tool step, instead of `result`): refused by a person or a permission rule, or
# cancelled because another call of its batch failed first
DENIED: Final = Shape("denied", (
    _text("reason", required=True, nullable=False, non_empty=True),
    Field("by", choices=DENIED_BY, description="who denied the call: a person (user) or a permission rule"),
))
CANCELLED: Final = Shape("cancelled", (_text("reason", required=True, nullable=False, non_empty=True),))
# a call the recording's own policy blocked live (the recorder writes it): it never ran, so what it would have
# returned is unknown; its `result` holds at most what was known before it ran (`changed`)
BLOCKED: Final = Shape("blocked", (_text("reason", required=True, nullable=False, non_empty=True,
                                         description="the blocking verdict's reason code"),))
# the log's own compaction event: where the real agent compacted its context
COMPACTED: Final = Shape("compacted", (
    Field("trigger", choices=TRIGGERS),
    _count("tokens_before", description="the context's size before, in tokens"),
    _text("text", description="the summary that replaced the context"),
))
STEP_EXPECT: Final = Shape("stepExpect", (
    Field("action", choices=STEP_ACTIONS, required=True, nullable=False),
    _text("engine", non_empty=True),
    _text("reason", non_empty=True, pattern=r"\.", description="engine.code, e.g. loop_guard.consecutive_block"),
    _text("message"),
    Field("data", ("object",)),
    _count("heeded_within", minimum=1, maximum=MAX_STEPS,
           description="the agent changes course within this many calls: none of them repeats the warned call"),
))
RUN_EXPECT: Final = Shape("runExpect", (
    Field("outcome", choices=OUTCOMES, nullable=False),
    _text("stopped_by", non_empty=True),
    _count("stopped_at", maximum=MAX_INT),
    Field("counts", ("object",), key_choices=STEP_ACTIONS, items=_count("count", maximum=MAX_INT, nullable=False)),
))
STEP_SOURCE: Final = Shape("stepSource", (
    _text("file", required=True, nullable=False, non_empty=True),
    _count("row", maximum=MAX_INT),
    Field("index", ("integer", "string"), minimum=0, maximum=MAX_INT),
))
# Each step kind: its own key (exactly one per step) first, then the keys only that kind may carry.
STEP_KINDS: Final[Mapping[str, tuple[Field, ...]]] = MappingProxyType({
    "tool": (_text("tool", nullable=False, non_empty=True, forbid=("\x1f",)),
             Field("args", ("object",)),
             Field("result", ref="result"),
             Field("denied", ref="denied"),
             Field("cancelled", ref="cancelled"),
             Field("blocked", ref="blocked")),
    "llm": (Field("llm", ref="llm"),),
    "phase": (Field("phase", choices=PHASES, nullable=False),),
    "message": (Field("message", ref="message", nullable=False),),
    "done": (Field("done", ref="done", true_ok=True),),
    "rejected": (Field("rejected", ref="rejected", nullable=False),),
    "compacted": (Field("compacted", ref="compacted"),),
})
assert tuple(STEP_KINDS) == _STEP_KINDS
NOT_RUN_KEYS: Final = NOT_RUN_HOWS  # the tool step's keys of a call that never ran: at most one, never with a result


def _both(a: str, b: str) -> dict[str, Any]:
    """Both keys written with a value (a null reads as absent)."""
    return {"required": [a, b], "properties": {a: {"type": "object"}, b: {"type": "object"}}}
STEP_COMMON: Final = (
    Field("expect", choices=STEP_ACTIONS, ref="stepExpect"),
    _count("t", maximum=MAX_INT),
    _text("agent", non_empty=True),
    Field("source", ref="stepSource"),
)
STEP: Final = Shape("step", (*(f for fields in STEP_KINDS.values() for f in fields), *STEP_COMMON), rules=(
    # a call that never ran did so for one reason; a denied or cancelled one has no result (a blocked one may
    # hold what was known before it, `changed`)
    {"not": {"anyOf": [*(_both(a, b) for a, b in combinations(NOT_RUN_KEYS, 2)),
                       *(_both(how, "result") for how in NOT_RUN_KEYS if how != "blocked")]}},
))
TRACE: Final = Shape("trace", (
    Field("loopguard", const=1, required=True, nullable=False, header=True, description="The format version."),
    _text("name", required=True, nullable=False, non_empty=True, forbid=NAME_FORBIDDEN, header=True,
          description="Unique within a corpus; the pytest item's name."),
    _text("description", nullable=False, description="What the trace proves."),
    Field("tags", ("array",), items=_STRING, header=True),
    Field("source", ref="source"),
    Field("policy", ("string", "object"), non_empty=True,
          description="A preset name, a policy file path, or a mapping {preset, engine: settings | false, tools}."),
    Field("task", ref="task"),
    Field("context", ref="context"),
    Field("strict", ("boolean",), nullable=False,
          description="Every reached step without expect must combine to allow."),
    Field("steps", ("array",), items=Field("step", ref="step", nullable=False), max_items=MAX_STEPS),
    Field("expect", ref="runExpect"),
    Field("mode", choices=("replay", "simulate"), nullable=False),
    Field("env", ("object",)),
    Field("agent", ("object",)),
    _count("seed", maximum=MAX_INT),
    _count("max_turns", minimum=1),
), rules=(  # a replayed trace has steps; a simulated one may leave them out
    {"if": {"not": {"properties": {"mode": {"const": "simulate"}}, "required": ["mode"]}},
     "then": {"required": ["steps"], "properties": {"steps": {"type": "array"}}}},
))
SHAPES: Final[Mapping[str, Shape]] = MappingProxyType({s.name: s for s in (
    TRACE, TASK, BUDGET, SOURCE, CONTEXT, STEP, RESULT, LLM, USAGE, MESSAGE, DONE, REJECTED, DENIED, CANCELLED,
    BLOCKED, COMPACTED, STEP_EXPECT, RUN_EXPECT, STEP_SOURCE)})

# ---- the key lists the readers check against, derived from the shapes above ----------------------------
TOP_KEYS: Final = TRACE.keys
HEADER_KEYS: Final = tuple(f.name for f in TRACE.fields if f.header)
TASK_KEYS: Final = TASK.keys
BUDGET_KEYS: Final = BUDGET.keys
SOURCE_KEYS: Final = SOURCE.keys
CONTEXT_KEYS: Final = CONTEXT.keys
RESULT_KEYS: Final = RESULT.keys
LLM_KEYS: Final = LLM.keys
USAGE_KEYS: Final = USAGE.keys
MESSAGE_KEYS: Final = MESSAGE.keys
DONE_KEYS: Final = DONE.keys
REJECTED_KEYS: Final = REJECTED.keys
DENIED_KEYS: Final = DENIED.keys
CANCELLED_KEYS: Final = CANCELLED.keys
BLOCKED_KEYS: Final = BLOCKED.keys
COMPACTED_KEYS: Final = COMPACTED.keys
EXPECT_KEYS: Final = STEP_EXPECT.keys
RUN_EXPECT_KEYS: Final = RUN_EXPECT.keys
STEP_SOURCE_KEYS: Final = STEP_SOURCE.keys
STEP_KINDS_KEYS: Final = tuple(STEP_KINDS)
STEP_COMMON_KEYS: Final = tuple(f.name for f in STEP_COMMON)
# every key a step of each kind may carry (besides `x-` keys)
STEP_KEYS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {kind: frozenset(f.name for f in (*own, *STEP_COMMON)) for kind, own in STEP_KINDS.items()})
ROLES: Final = next(f.choices for f in MESSAGE.fields if f.name == "role")
MODES: Final = next(f.choices for f in TRACE.fields if f.name == "mode")
BUDGET_MINIMUM: Final[Mapping[str, int]] = MappingProxyType(
    {f.name: f.minimum for f in BUDGET.fields if f.minimum is not None})


def file_format(path: Path) -> str:
    """yaml, json or jsonl, by the file's suffix (any other suffix is a TraceError)."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise TraceError(f"unknown trace file type {suffix!r}; expected one of {', '.join(SUFFIXES)}",
                         file=str(path))
    return _FORMATS[suffix]
