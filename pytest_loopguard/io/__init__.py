"""Trace files: load, dump, validate, stream JSONL, read collection headers, the JSON Schema, golden edits,
and running a file (replay a recorded trace, or simulate a scenario)."""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._format import (
        ORIGIN_ROLES,
        STEP_ACTIONS,
        SUFFIXES,
        dump,
        dumps,
        iter_trace_files,
        load,
        load_file,
        loads,
        parse_step_expect,
        step_to_mapping,
        trace_from_mapping,
        trace_to_mapping,
        validate_paths,
    )
    from ._golden import (
        SCENARIO_STEP_EXPECTS,
        apply_update_requests,
        edit_to_json,
        expectation_edits,
        has_expectations,
        observed_trace,
        unchecked_expectations,
    )
    from ._headers import TraceHeader, read_headers
    from ._runner import check_scenario, execute, load_runnable, simulate, validate_runnable
    from ._schema import schema_text, trace_schema
    from ._stream import StreamedRun, replay_jsonl

__all__ = [
    "ORIGIN_ROLES",
    "SCENARIO_STEP_EXPECTS",
    "STEP_ACTIONS",
    "SUFFIXES",
    "StreamedRun",
    "TraceHeader",
    "apply_update_requests",
    "check_scenario",
    "dump",
    "dumps",
    "edit_to_json",
    "execute",
    "expectation_edits",
    "has_expectations",
    "iter_trace_files",
    "load",
    "load_file",
    "load_runnable",
    "loads",
    "observed_trace",
    "parse_step_expect",
    "read_headers",
    "replay_jsonl",
    "schema_text",
    "simulate",
    "step_to_mapping",
    "trace_from_mapping",
    "trace_schema",
    "trace_to_mapping",
    "unchecked_expectations",
    "validate_paths",
    "validate_runnable",
]

__getattr__, __dir__ = exports(__name__, {
    "_format": ("ORIGIN_ROLES", "STEP_ACTIONS", "SUFFIXES", "dump", "dumps", "iter_trace_files", "load", "load_file",
                "loads", "parse_step_expect", "step_to_mapping", "trace_from_mapping", "trace_to_mapping",
                "validate_paths"),
    "_golden": ("SCENARIO_STEP_EXPECTS", "apply_update_requests", "edit_to_json", "expectation_edits",
                "has_expectations", "observed_trace", "unchecked_expectations"),
    "_headers": ("TraceHeader", "read_headers"),
    "_runner": ("check_scenario", "execute", "load_runnable", "simulate", "validate_runnable"),
    "_schema": ("schema_text", "trace_schema"),
    "_stream": ("StreamedRun", "replay_jsonl"),
})
