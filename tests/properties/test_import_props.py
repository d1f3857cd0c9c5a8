"""Importers on any JSON shaped like their format: a run, or one `LoopguardError` line; never a crash.

A log is whatever a framework version (or a hand edit) left behind: every field can be missing or of
another type. The strategies draw documents with each format's top-level keys and values built from the
field names and marker strings the importers look for.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pytest_loopguard.errors import LoopguardError
from pytest_loopguard.importers import Source, available, get, to_trace

MARKERS = ["assistant", "user", "tool", "exit", "system", "```bash\nls\n```", "<returncode>1</returncode>", "submit",
           "run", "finish", "message", "error", "human", "Orchestrator (-> WebSurfer)", "Orchestrator (thought)",
           "exitcode: 1 (execution failed)", "Please always provide EXACTLY ONE action",
           "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
KEYS = ["role", "content", "tool_calls", "id", "function", "name", "arguments", "tool_call_id", "extra", "returncode",
        "interrupt_type", "response", "usage", "prompt_tokens", "action", "observation", "args", "cause", "source",
        "extras", "metadata", "exit_code", "success", "tool_call_metadata", "model_response", "choices", "message",
        "thought", "exit_status", "is_demo", "task_completed", "final_thought", "instance_id", "issue", "number"]
LEAF = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4) | st.sampled_from(MARKERS)
VALUE = st.recursive(LEAF, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(KEYS), c, max_size=5),
                     max_leaves=25)
ITEMS = st.lists(VALUE, max_size=6)
DOCUMENTS = {
    "swe-agent": st.fixed_dictionaries({"trajectory": ITEMS, "info": VALUE, "history": VALUE}),
    "mini-swe-agent-1": st.fixed_dictionaries({"messages": ITEMS, "info": VALUE, "instance_id": VALUE}),
    "mini-swe-agent-1.1": st.fixed_dictionaries({"messages": ITEMS, "info": VALUE}),
    "openhands-v0": ITEMS | st.fixed_dictionaries({"history": ITEMS, "instance_id": VALUE, "metadata": VALUE}),
    "magentic-one": st.fixed_dictionaries({"history": ITEMS, "question_ID": VALUE, "question": VALUE}),
    "ag2-groupchat": st.fixed_dictionaries({"history": ITEMS}),
}


def convert(fmt: str, doc: Any) -> None:
    source = Source.from_bytes("drawn.json", json.dumps(doc).encode())
    try:
        for run in get(fmt, available()).convert(source):
            to_trace(run, source.name)
    except LoopguardError as exc:
        assert "\n" not in str(exc) and "drawn.json" in str(exc)


@pytest.mark.parametrize("fmt", sorted(DOCUMENTS))
def test_any_document_in_a_formats_shape_converts_or_is_one_error_line(fmt: str) -> None:
    given(DOCUMENTS[fmt])(lambda doc: convert(fmt, doc))()


@given(st.just(None))
@example([{"id": {"not": "hashable"}, "action": "run", "args": {"command": "ls"}}])   # an object as an event id
@example([{"id": 1, "action": "run"}, {"id": 2, "observation": "run", "cause": [1]}])  # a list as a cause
@example([{"id": 1, "action": ["run"]}])                                             # a list as an action type
def test_openhands_v0_malformed_ids_and_types_pair_with_nothing(events: Any) -> None:
    if events is not None:
        convert("openhands-v0", events)
