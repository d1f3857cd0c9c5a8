"""The values of a run and the engine contract.

Events, results, verdicts, call identity, tool classification, the run context, expectations and the safe
reading of untrusted files: no engine, no policy, no trace I/O. `core.hookspecs` is the engine hook contract.
"""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._classify import KINDS, Classifier, Kind, ToolRule, parse_rules, target_of
    from ._conversation import Deferred, Entry, PromptView, Role, Transcript, chars_over_four
    from ._expect import Mismatch, check, check_reached, check_run, describe_expect
    from ._identity import (
        FLAT_SAME_AS,
        IDENTITIES,
        IdentityMode,
        canonical_json,
        flat_canonical_json,
        is_flat,
        key_part,
        ordered_js_json,
    )
    from ._limits import (
        MAX_DEPTH,
        MAX_EXTENDS,
        MAX_FILE_BYTES,
        MAX_GENERATED_CHARS,
        MAX_INT,
        MAX_LOG_BYTES,
        MAX_NODES,
        MAX_SCENARIO_COUNT,
        MAX_SETTING,
        MAX_SETTING_ITEMS,
        MAX_STEPS,
        MAX_STRING,
        MAX_TURNS,
    )
    from ._model import (
        ACTIONS,
        OUTCOMES,
        PHASES,
        Action,
        Done,
        LLMCall,
        Message,
        Outcome,
        Rejected,
        ReplayResult,
        RunExpect,
        Step,
        StepExpect,
        StepResult,
        StepSource,
        Task,
        ToolCall,
        ToolResult,
        Trace,
        Verdict,
        combine,
    )
    from ._runcontext import RunContext, Turn
    from ._safeload import check_json_depth, parse_json, parse_yaml, plain_value, read_bytes, read_text
    from ._shell import Command, Effect
    from ._targets import CallTarget
    from .hookspecs import PROJECT, hookimpl, hookspec

__all__ = [
    "ACTIONS",
    "FLAT_SAME_AS",
    "IDENTITIES",
    "KINDS",
    "MAX_DEPTH",
    "MAX_EXTENDS",
    "MAX_FILE_BYTES",
    "MAX_GENERATED_CHARS",
    "MAX_INT",
    "MAX_LOG_BYTES",
    "MAX_NODES",
    "MAX_SCENARIO_COUNT",
    "MAX_SETTING",
    "MAX_SETTING_ITEMS",
    "MAX_STEPS",
    "MAX_STRING",
    "MAX_TURNS",
    "OUTCOMES",
    "PHASES",
    "PROJECT",
    "Action",
    "CallTarget",
    "Classifier",
    "Command",
    "Deferred",
    "Done",
    "Effect",
    "Entry",
    "IdentityMode",
    "Kind",
    "LLMCall",
    "Message",
    "Mismatch",
    "Outcome",
    "PromptView",
    "Rejected",
    "ReplayResult",
    "Role",
    "RunContext",
    "RunExpect",
    "Step",
    "StepExpect",
    "StepResult",
    "StepSource",
    "Task",
    "ToolCall",
    "ToolResult",
    "ToolRule",
    "Trace",
    "Transcript",
    "Turn",
    "Verdict",
    "canonical_json",
    "chars_over_four",
    "check",
    "check_json_depth",
    "check_reached",
    "check_run",
    "combine",
    "describe_expect",
    "flat_canonical_json",
    "hookimpl",
    "hookspec",
    "is_flat",
    "key_part",
    "ordered_js_json",
    "parse_json",
    "parse_rules",
    "parse_yaml",
    "plain_value",
    "read_bytes",
    "read_text",
    "target_of",
]

__getattr__, __dir__ = exports(__name__, {
    "_classify": ("KINDS", "Classifier", "Kind", "ToolRule", "parse_rules", "target_of"),
    "_conversation": ("Deferred", "Entry", "PromptView", "Role", "Transcript", "chars_over_four"),
    "_expect": ("Mismatch", "check", "check_reached", "check_run", "describe_expect"),
    "_identity": ("FLAT_SAME_AS", "IDENTITIES", "IdentityMode", "canonical_json", "flat_canonical_json", "is_flat",
                  "key_part", "ordered_js_json"),
    "_limits": ("MAX_DEPTH", "MAX_EXTENDS", "MAX_FILE_BYTES", "MAX_GENERATED_CHARS", "MAX_INT", "MAX_LOG_BYTES",
                "MAX_NODES", "MAX_SCENARIO_COUNT", "MAX_SETTING", "MAX_SETTING_ITEMS", "MAX_STEPS", "MAX_STRING",
                "MAX_TURNS"),
    "_model": ("ACTIONS", "OUTCOMES", "PHASES", "Action", "Done", "LLMCall", "Message", "Outcome", "Rejected",
               "ReplayResult", "RunExpect", "Step", "StepExpect", "StepResult", "StepSource", "Task", "ToolCall",
               "ToolResult", "Trace", "Verdict", "combine"),
    "_runcontext": ("RunContext", "Turn"),
    "_safeload": ("check_json_depth", "parse_json", "parse_yaml", "plain_value", "read_bytes", "read_text"),
    "_shell": ("Command", "Effect"),
    "_targets": ("CallTarget",),
    "hookspecs": ("PROJECT", "hookimpl", "hookspec"),
})
