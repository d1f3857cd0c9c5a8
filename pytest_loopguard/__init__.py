"""pytest-loopguard: replay agent tool-call traces through loop policies and assert the verdicts."""

from __future__ import annotations

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
from .recorder import Recorder
from .redact import Redactor
from .replay import replay
from .runtime import Clock, Decision, Guard
from .session import Session, ToolReply
from .traceio import dump, dumps, load, load_file

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
