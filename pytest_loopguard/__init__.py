"""pytest-loopguard: replay agent tool-call traces through loop policies and assert the verdicts."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .buildinfo import compiled
from .errors import (
    LoopguardError,
    LoopguardWarning,
    PolicyError,
    RedactionError,
    ScenarioError,
    SessionError,
    TraceError,
)
from .model import ReplayResult, StepResult, ToolCall, ToolResult, Trace, Verdict
from .policy import Policy, resolve_policy
from .replay import replay
from .runtime import Clock, Decision, Guard
from .traceio import dump, dumps, load, load_file

if TYPE_CHECKING:
    from .recorder import Recorder
    from .redact import Redactor
    from .session import Session, ToolReply

# The live-session names load on first use: `loopguard run` and a trace-only pytest run never need them.
_LAZY = {"Recorder": "recorder", "Redactor": "redact", "Session": "session", "ToolReply": "session"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Clock",
    "Decision",
    "Guard",
    "LoopguardError",
    "LoopguardWarning",
    "Policy",
    "PolicyError",
    "Recorder",
    "RedactionError",
    "Redactor",
    "ReplayResult",
    "ScenarioError",
    "Session",
    "SessionError",
    "StepResult",
    "ToolCall",
    "ToolReply",
    "ToolResult",
    "Trace",
    "TraceError",
    "Verdict",
    "compiled",
    "dump",
    "dumps",
    "load",
    "load_file",
    "replay",
    "resolve_policy",
]

__version__ = "0.1.0"
