"""pytest-loopguard: replay agent tool-call traces through loop policies and assert the verdicts."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .buildinfo import compiled
    from .core._model import ReplayResult, StepResult, ToolCall, ToolResult, Trace, Verdict
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

# Each public name's module, imported when the name is first read. pytest imports this package to load the
# plugin in every process, the xdist controller included, which never replays: importing the whole core here
# cost every pytest run in a project that installs us ~0.1-0.2 s (more where nothing caches bytecode).
_HOME: Final = {
    "compiled": "buildinfo",
    **dict.fromkeys(("LoopguardError", "LoopguardWarning", "PolicyError", "RedactionError", "ScenarioError",
                     "SessionError", "TraceError"), "errors"),
    **dict.fromkeys(("ReplayResult", "StepResult", "ToolCall", "ToolResult", "Trace", "Verdict"), "core._model"),
    **dict.fromkeys(("Policy", "resolve_policy"), "runtime._policy"),
    "Recorder": "live._recorder",
    "Redactor": "live._redact",
    "replay": "runtime._replay",
    **dict.fromkeys(("Clock", "Decision", "Guard"), "runtime._guard"),
    **dict.fromkeys(("Session", "ToolReply"), "live._session"),
    **dict.fromkeys(("dump", "dumps", "load", "load_file"), "io._format"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Not kept in this module's globals: a pytester run drops the modules it imported when it ends, and a kept
    # class would then outlive its module (the next run imports a new one).
    return getattr(import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

