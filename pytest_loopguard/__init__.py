"""pytest-loopguard: replay agent tool-call traces through loop policies and assert the verdicts."""

from __future__ import annotations

from .errors import LoopguardError, LoopguardWarning, PolicyError, ScenarioError, TraceError
from .model import ReplayResult, StepResult, ToolCall, ToolResult, Trace, Verdict
from .policy import Policy, resolve_policy
from .replay import replay
from .runtime import Clock, Decision, Guard
from .traceio import dump, dumps, load, load_file

__all__ = [
    "Clock",
    "Decision",
    "Guard",
    "LoopguardError",
    "LoopguardWarning",
    "Policy",
    "PolicyError",
    "ReplayResult",
    "ScenarioError",
    "StepResult",
    "ToolCall",
    "ToolResult",
    "Trace",
    "TraceError",
    "Verdict",
    "dump",
    "dumps",
    "load",
    "load_file",
    "replay",
    "resolve_policy",
]

__version__ = "0.1.0"
