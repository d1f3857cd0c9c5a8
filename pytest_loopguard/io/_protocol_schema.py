"""The JSON Schema of the guard protocol's messages (docs/protocol.md), built on the trace schema's definitions.

A call's result, a model call, a message, a refusal and a final answer are written on the pipe as in a trace,
so their definitions are the trace schema's own (`io/_schema`), never a second copy; what is here is the
envelope: each request by its `op`, and the replies. `loopguard schema --protocol` prints it.
"""

from __future__ import annotations

import json
from typing import Any, Final

from ..core._model import ACTIONS, PHASES
from ..core._wire import MAX_VERDICTS, PROTOCOL_VERSION
from ._schema import trace_schema

__all__ = ["OPS", "protocol_schema", "protocol_schema_text"]

_INDEX: Final = {"type": ["integer", "null"], "minimum": 0, "description": "the step's index in the trace; null live"}
_T: Final = {"type": ["integer", "null"], "minimum": 0, "description": "the run's clock, in milliseconds"}
_CALL: Final = {
    "type": "object",
    "required": ["tool"],
    "properties": {
        "id": {"type": ["string", "integer"], "description": "matches a call's before_call, after_call and not_run"},
        "tool": {"type": "string", "minLength": 1},
        "args": {"type": ["object", "null"], "description": "keys in the order the agent wrote them"},
    },
    "additionalProperties": False,
}


def _event(op: str, required: list[str], properties: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "required": ["op", *required],
        "properties": {"op": {"const": op}, "index": _INDEX, "t": _T, **properties},
        "additionalProperties": False,
    }


def _ops() -> dict[str, dict[str, Any]]:
    ref = {name: {"$ref": f"#/$defs/{name}"} for name in ("call", "result", "llm", "message", "rejected", "done")}
    return {
        "hello": {
            "type": "object", "required": ["op", "protocol"], "additionalProperties": False,
            "description": "the first request of a process; the reply says who the guard is",
            "properties": {"op": {"const": "hello"}, "protocol": {"const": PROTOCOL_VERSION}},
        },
        "run_start": {
            "type": "object", "required": ["op", "run"], "additionalProperties": False,
            "description": "a new run: a new Guard",
            "properties": {"op": {"const": "run_start"}, "index": _INDEX, "t": _T, "run": {
                "type": "object", "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "task": {"type": "object", "additionalProperties": False, "properties": {
                        "objective": {"type": "string"}, "phase": {"enum": list(PHASES)},
                        "budget": {"$ref": "#/$defs/budget"}}},
                    "policy": {"description": "a preset name, a policy mapping, or a whole policy "
                                              "({name, description, engines, tools})",
                               "type": ["string", "object", "null"]},
                    "context": {"$ref": "#/$defs/context"},
                }}},
        },
        "turn_start": _event("turn_start", ["calls"], {"calls": {"type": "array", "items": ref["call"]},
                                                       "llm": {"anyOf": [ref["llm"], {"type": "null"}]}},
                             "a turn and its calls (the model's response): Guard.start_turn"),
        "before_call": _event("before_call", ["call"], {"call": ref["call"], "changed": {"type": "boolean"}},
                              "before a call runs (`changed`: its file changed outside the agent): Guard.before_call"),
        "after_call": _event("after_call", ["call"], {
            "call": ref["call"], "result": {"anyOf": [ref["result"], {"type": "null"}]},
            "blocked": {"type": "boolean"}}, "what the call gave; null and blocked when it did not run"),
        "not_run": _event("not_run", ["call"], {"call": ref["call"], "not_run": {
            "type": "object", "additionalProperties": False, "minProperties": 1, "maxProperties": 1,
            "properties": {"denied": {"$ref": "#/$defs/denied"}, "cancelled": {"$ref": "#/$defs/cancelled"}}}},
            "a call the policy allowed that never ran (denied or cancelled): Guard.not_run"),
        "turn_end": _event("turn_end", [], {}, "the turn ends: Guard.end_turn (its verdicts are ignored)"),
        "before_llm": _event("before_llm", [], {"llm": ref["llm"]}, "before a model call: Guard.before_llm"),
        "llm_result": _event("llm_result", [], {"llm": ref["llm"]}, "the model's answer: Guard.llm_result"),
        "message": _event("message", ["message"], {"message": ref["message"]}, "a message: Guard.message"),
        "rejected": _event("rejected", ["rejected"], {"rejected": ref["rejected"]},
                           "a model turn the harness refused: Guard.rejected"),
        "phase": _event("phase", ["phase"], {"phase": {"enum": list(PHASES)}}, "the task's phase: Guard.phase"),
        "done": _event("done", [], {"done": {"anyOf": [ref["done"], {"type": "null"}]}},
                       "the agent's final answer: Guard.done"),
        "run_end": _event("run_end", [], {"outcome": {"type": ["string", "null"]}}, "the end of the run"),
    }


OPS: Final = tuple(_ops())


def protocol_schema() -> dict[str, Any]:
    """The schema: `$defs.request` (one of the ops) and `$defs.reply`; the document itself accepts either."""
    trace_defs = trace_schema()["$defs"]
    ops = _ops()
    verdict = {
        "type": "object", "required": ["action", "reason"], "additionalProperties": False,
        "properties": {
            "action": {"enum": list(ACTIONS)},
            "reason": {"type": "string", "pattern": "\\.", "maxLength": 200, "description": "engine.code"},
            "message": {"type": "string"}, "data": {"type": "object"},
            "engine": {"type": "string", "minLength": 1, "description": "default: the reason's prefix"},
        },
    }
    reply = {"oneOf": [
        {"type": "object", "required": ["protocol", "guard"], "properties": {
            "protocol": {"const": PROTOCOL_VERSION},
            "guard": {"type": "object", "properties": {"name": {"type": "string"}, "version": {"type": "string"}}}}},
        {"type": "object", "required": ["verdicts"], "additionalProperties": False, "properties": {
            "verdicts": {"type": "array", "maxItems": MAX_VERDICTS, "items": {"$ref": "#/$defs/verdict"}}}},
        {"type": "object", "required": ["error"], "additionalProperties": False,
         "properties": {"error": {"type": "string"}}},
    ]}
    defs = {k: trace_defs[k] for k in ("result", "llm", "usage", "message", "rejected", "done", "denied", "cancelled",
                                       "budget", "context")}
    defs.update({"call": _CALL, "verdict": verdict, "reply": reply,
                 "request": {"oneOf": [{"$ref": f"#/$defs/op_{op}"} for op in ops]}})
    defs.update({f"op_{op}": schema for op, schema in ops.items()})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://pytest-loopguard.dev/schemas/guard-protocol-1.json",
        "title": "loopguard guard protocol, version 1",
        "description": "One JSON message per line: a request (caller to guard) or a reply (guard to caller).",
        "anyOf": [{"$ref": "#/$defs/request"}, {"$ref": "#/$defs/reply"}],
        "$defs": defs,
    }


def protocol_schema_text() -> str:
    return json.dumps(protocol_schema(), indent=2, ensure_ascii=False) + "\n"
