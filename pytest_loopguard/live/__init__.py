"""What a live agent embeds beside the Guard: Session, the recorder, framework adapters, redaction, and the Guard
behind the guard protocol (GuardServer, for agents in other languages)."""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._adapters import (
        RAW_ARGUMENTS,
        AdaptedCall,
        ModelTurn,
        anthropic_response,
        anthropic_result,
        anthropic_tool_result,
        openai_function_call_output,
        openai_response,
        openai_result,
        openai_tool_message,
    )
    from ._recorder import Recorder
    from ._redact import BUILTIN_RULES, Redactor, configured_rules
    from ._serve import GuardServer, serve
    from ._session import Session, ToolReply

__all__ = [
    "BUILTIN_RULES",
    "RAW_ARGUMENTS",
    "AdaptedCall",
    "GuardServer",
    "ModelTurn",
    "Recorder",
    "Redactor",
    "Session",
    "ToolReply",
    "anthropic_response",
    "anthropic_result",
    "anthropic_tool_result",
    "configured_rules",
    "openai_function_call_output",
    "openai_response",
    "openai_result",
    "openai_tool_message",
    "serve",
]

__getattr__, __dir__ = exports(__name__, {
    "_adapters": ("RAW_ARGUMENTS", "AdaptedCall", "ModelTurn", "anthropic_response", "anthropic_result",
                  "anthropic_tool_result", "openai_function_call_output", "openai_response", "openai_result",
                  "openai_tool_message"),
    "_recorder": ("Recorder",),
    "_redact": ("BUILTIN_RULES", "Redactor", "configured_rules"),
    "_serve": ("GuardServer", "serve"),
    "_session": ("Session", "ToolReply"),
})
