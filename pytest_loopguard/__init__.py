"""pytest-loopguard: replay agent tool-call traces through loop policies and assert the verdicts."""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
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

# Each public name's module, imported when the name is first read. pytest imports this package to load the
# plugin in every process, the xdist controller included, which never replays: importing the whole core here
# cost every pytest run in a project that installs us ~0.1-0.2 s (more where nothing caches bytecode).
_HOME: Final = {
    "compiled": "buildinfo",
    **dict.fromkeys(("LoopguardError", "LoopguardWarning", "PolicyError", "RedactionError", "ScenarioError",
                     "SessionError", "TraceError"), "errors"),
    **dict.fromkeys(("ReplayResult", "StepResult", "ToolCall", "ToolResult", "Trace", "Verdict"), "model"),
    **dict.fromkeys(("Policy", "resolve_policy"), "policy"),
    "Recorder": "recorder",
    "Redactor": "redact",
    "replay": "replay",
    **dict.fromkeys(("Clock", "Decision", "Guard"), "runtime"),
    **dict.fromkeys(("Session", "ToolReply"), "session"),
    **dict.fromkeys(("dump", "dumps", "load", "load_file"), "traceio"),
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


class _Package(types.ModuleType):
    """This package's module type: the function `replay` keeps its name when the submodule `replay` loads."""

    def __setattr__(self, name: str, value: Any) -> None:
        # Importing a submodule binds it on its package; `pytest_loopguard.replay` is the function (as when this
        # package imported it eagerly), so the submodule of that name does not replace it.
        if isinstance(value, types.ModuleType) and name in _HOME and _HOME[name] == name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
