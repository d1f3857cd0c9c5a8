"""The guard protocol's values on the wire: calls, results, model calls and verdicts as plain JSON mappings.

The field names and meanings are the trace format's (docs/trace-format.md), so a step's `result` and a
protocol `after_call`'s `result` are written the same way and read by the same reader (io/_read). What is
here is what both ends of the pipe need without the trace reader: writing events (the external-guard
engine; `loopguard serve`'s replies) and reading verdicts (the external-guard engine).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from ._model import Action, Done, LLMCall, Message, Rejected, ToolCall, ToolResult, Verdict

__all__ = [
    "PROTOCOL_VERSION", "WireError", "call_mapping", "done_mapping", "llm_mapping", "message_mapping",
    "rejected_mapping", "result_mapping", "verdict_mapping", "verdicts_from_reply",
]

PROTOCOL_VERSION: Final = 1
_ACTIONS: Final = {a.value: a for a in Action}
_VERDICT_KEYS: Final = frozenset(("action", "reason", "message", "data", "engine"))
MAX_VERDICTS: Final = 64  # per reply: more is a guard gone wrong, not a policy


class WireError(ValueError):
    """A reply that breaks the protocol; the message is one line saying what was expected."""


def call_mapping(call: ToolCall, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "tool": call.tool, "args": dict(call.args)}


def result_mapping(r: ToolResult) -> dict[str, Any]:
    """A result as the trace format writes it: `ok` only where `error` or a non-zero exit code do not say it."""
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


def llm_mapping(llm: LLMCall) -> dict[str, Any]:
    return {k: v for k, v in (("input_tokens", llm.input_tokens), ("output_tokens", llm.output_tokens),
                              ("error", llm.error), ("text", llm.text)) if v is not None}


def message_mapping(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "text": m.text}
    if m.origin is not None:
        out["origin"] = m.origin
    if m.name is not None:
        out["name"] = m.name
    return out


def rejected_mapping(r: Rejected, *, with_usage: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"reason": r.reason}
    if r.text is not None:
        out["text"] = r.text
    if with_usage and r.llm is not None:
        out["llm"] = llm_mapping(r.llm)
    return out


def done_mapping(d: Done) -> dict[str, Any]:
    out: dict[str, Any] = {"text": d.text}
    if d.success is not None:
        out["success"] = d.success
    return out


def verdict_mapping(v: Verdict) -> dict[str, Any]:
    out: dict[str, Any] = {"action": v.action.value, "reason": v.reason, "engine": v.engine}
    if v.message:
        out["message"] = v.message
    if v.data:
        out["data"] = dict(v.data)
    return out


def verdicts_from_reply(reply: Any, default_engine: str) -> tuple[Verdict, ...]:
    """The verdicts of a reply `{"verdicts": [...]}`, in its order (an empty list means allow; an informational
    `allow` verdict is kept, as an engine's is). A verdict without `engine` is its reason's (`roo.repeat` → `roo`)."""
    if not isinstance(reply, Mapping):
        raise WireError(f"expected a JSON object, got {_kind(reply)}")
    if "error" in reply:
        error = reply["error"]
        raise WireError(f"the guard reported an error: {error if isinstance(error, str) else _kind(error)}")
    raw = reply.get("verdicts")
    if not isinstance(raw, list):
        raise WireError(f"expected {{\"verdicts\": [...]}}, got {_keys(reply)}")
    if len(raw) > MAX_VERDICTS:
        raise WireError(f"{len(raw)} verdicts in one reply; at most {MAX_VERDICTS}")
    out: list[Verdict] = []
    for i, v in enumerate(raw):
        out.append(_verdict(v, f"verdicts[{i}]", default_engine))
    return tuple(out)


def _verdict(v: Any, where: str, default_engine: str) -> Verdict:
    if not isinstance(v, Mapping):
        raise WireError(f"{where}: expected an object {{action, reason, message?, data?}}, got {_kind(v)}")
    unknown = [k for k in v if k not in _VERDICT_KEYS]
    if unknown:
        raise WireError(f"{where}: unknown field {str(unknown[0])[:40]!r}; expected action, reason, message, data, "
                        f"engine")
    raw_action = v.get("action")
    action = _ACTIONS.get(raw_action) if isinstance(raw_action, str) else None
    if action is None:
        raise WireError(f"{where}.action: expected one of {', '.join(_ACTIONS)}, got {_short(v.get('action'))}")
    reason = v.get("reason")
    if not isinstance(reason, str) or "." not in reason or len(reason) > 200:
        raise WireError(f"{where}.reason: expected a dotted code like 'roo.repeat', got {_short(reason)}")
    message = v.get("message", "")
    if not isinstance(message, str):
        raise WireError(f"{where}.message: expected a string, got {_kind(message)}")
    data = v.get("data", {})
    if not isinstance(data, Mapping):
        raise WireError(f"{where}.data: expected an object, got {_kind(data)}")
    _finite(data, f"{where}.data")
    engine = v.get("engine")
    if engine is None:
        engine = reason.split(".", 1)[0] or default_engine
    elif not isinstance(engine, str) or not engine:
        raise WireError(f"{where}.engine: expected a name, got {_short(engine)}")
    return Verdict(engine, action, reason, message, data)


def _finite(value: Any, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise WireError(f"{where}: NaN and Infinity are not allowed")
    if isinstance(value, Mapping):
        for k, v in value.items():
            _finite(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _finite(v, f"{where}[{i}]")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _keys(m: Mapping[str, Any]) -> str:
    keys = ", ".join(str(k)[:30] for k in list(m)[:5])
    return f"an object with {keys}" if keys else "an empty object"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
