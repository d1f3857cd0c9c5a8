"""Round trip of generated traces through every format: dumps then loads gives back an equal trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, note

from pytest_loopguard import Trace, load, replay
from pytest_loopguard.io._format import dumps, loads, trace_to_mapping
from pytest_loopguard.pytest import _strategies as lgst


@pytest.mark.parametrize("fmt", ["yaml", "json", "jsonl"])
def test_dumps_then_loads_gives_an_equal_trace(fmt: str) -> None:
    @given(lgst.traces())
    # found by this property: raw U+0085 / U+2028 in a JSONL line split the record in two
    @example(lgst.build_trace([], name="nel", description="a\x85b\u2028c"))
    def check(trace: Trace) -> None:
        text = dumps(trace, fmt)
        note(text)
        (back,) = loads(text, fmt=fmt)
        assert trace_to_mapping(back) == trace_to_mapping(trace)
        # the fingerprints engines compare are rebuilt identically from the loaded arguments
        fingerprints = [s.call and s.call.fingerprint for s in trace.steps]
        assert [s.call and s.call.fingerprint for s in back.steps] == fingerprints

    check()


ALL_KINDS = ("tool", "llm", "phase", "message", "done", "rejected")


@pytest.mark.parametrize("fmt", ["yaml", "json", "jsonl"])
def test_the_format_additions_round_trip(fmt: str) -> None:
    @given(lgst.traces(kinds=ALL_KINDS, additions=True))
    def check(trace: Trace) -> None:
        text = dumps(trace, fmt)
        note(text)
        (back,) = loads(text, fmt=fmt)
        assert trace_to_mapping(back) == trace_to_mapping(trace)
        fields = [(s.kind, s.result, s.message, s.rejected, s.agent, s.source) for s in trace.steps]
        assert [(s.kind, s.result, s.message, s.rejected, s.agent, s.source) for s in back.steps] == fields

    check()


@given(lgst.traces(kinds=ALL_KINDS, additions=True, expectations=False))
def test_generated_additions_replay_under_their_preset(trace: Trace) -> None:
    result = replay(trace)
    assert len(result.steps) == len(trace.steps)
    assert [s.kind for s in result.steps] == [s.kind for s in trace.steps]


@given(lgst.interleaved_traces(policy="spacebot"))
def test_save_trace_writes_a_corpus_file_that_loads_back(trace: Trace) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = lgst.save_trace(trace, Path(tmp) / "shrunk" / "case.yaml", name="props-case", description="A case.")
        back = load(path)
    assert back.name == "props-case" and back.description == "A case."
    assert trace_to_mapping(back)["steps"] == trace_to_mapping(trace)["steps"]
    assert back.policy == "spacebot"
