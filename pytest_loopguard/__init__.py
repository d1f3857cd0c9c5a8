"""pytest-loopguard: replay agent tool-call traces through loop policies and assert the verdicts."""

from __future__ import annotations

from ._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see _lazy
if TYPE_CHECKING:
    from .buildinfo import compiled
    from .core._model import (
        NOT_REACHED,
        Action,
        Outcome,
        ReplayResult,
        StepResult,
        ToolCall,
        ToolResult,
        Trace,
        Verdict,
    )
    from .errors import (
        LoopguardError,
        LoopguardWarning,
        PolicyError,
        RedactionError,
        ScenarioError,
        SessionError,
        TraceError,
    )
    from .io._format import dump, dumps, load, load_file
    from .live._recorder import Recorder
    from .live._redact import Redactor
    from .live._session import Session, ToolReply
    from .runtime._guard import Clock, Decision, Guard
    from .runtime._policy import Policy, resolve_policy
    from .runtime._replay import replay

__all__ = [
    "NOT_REACHED",
    "Action",
    "Clock",
    "Decision",
    "Guard",
    "LoopguardError",
    "LoopguardWarning",
    "Outcome",
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

# Each public name's module, imported when the name is first read. pytest imports this package to load the
# plugin in every process, the xdist controller included, which never replays: importing the whole core here
# cost every pytest run in a project that installs us ~0.1-0.2 s (more where nothing caches bytecode).
__getattr__, __dir__ = exports(__name__, {
    "buildinfo": ("compiled",),
    "errors": ("LoopguardError", "LoopguardWarning", "PolicyError", "RedactionError", "ScenarioError",
               "SessionError", "TraceError"),
    "core._model": ("NOT_REACHED", "Action", "Outcome", "ReplayResult", "StepResult", "ToolCall", "ToolResult", "Trace",
                    "Verdict"),
    "runtime._policy": ("Policy", "resolve_policy"),
    "live._recorder": ("Recorder",),
    "live._redact": ("Redactor",),
    "runtime._replay": ("replay",),
    "runtime._guard": ("Clock", "Decision", "Guard"),
    "live._session": ("Session", "ToolReply"),
    "io._format": ("dump", "dumps", "load", "load_file"),
})
