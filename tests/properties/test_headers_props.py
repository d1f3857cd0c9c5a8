"""Property: the header collection reads never contradicts the loader, whatever the names, tags or layout."""

from __future__ import annotations

import dataclasses
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from pytest_loopguard.core._model import Trace
from pytest_loopguard.errors import NotATraceError, TraceError
from pytest_loopguard.io._format import NAME_FORBIDDEN, dumps, loads
from pytest_loopguard.io._headers import TraceHeader, read_headers
from pytest_loopguard.pytest import _strategies as lgst

NAMES = st.text(min_size=1, max_size=30).filter(lambda n: not any(p in n for p in NAME_FORBIDDEN))
TAGS = st.lists(st.text(max_size=12), max_size=4).map(tuple)
WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_0123456789", min_size=1, max_size=20)
# lines that could make a line-based reading of YAML go wrong: keys, markers, items, anchors, scalars
FRAGMENTS = st.sampled_from([
    "name: intruder", "tags: [x]", "loopguard: 1", "loopguard: 2", "---", "--- # c", "...", "- stray",
    "  name: nested", '"name": quoted', "? name", "name: &a anchored", "tags: *a", "# name: comment", "",
    "  ", "x-extra: {name: n}", "name:", "tags:", "  - t", "- t", "description: |", "  name: in-block",
    "plain continuation", "%YAML 1.1", "name: 'two", "  words'", "name: [a, b]", "tags: [1, 2]", "\t",
])


def _read(text: str, suffix: str) -> list[TraceHeader] | None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"t{suffix}"
        path.write_text(text, encoding="utf-8")
        return read_headers(path)


def _load(text: str, fmt: str) -> list[tuple[str, tuple[str, ...]]] | TraceError:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return [(t.name, t.tags) for t in loads(text, fmt=fmt)]
        except TraceError as exc:
            return exc


@pytest.mark.parametrize(("fmt", "suffix"), [("yaml", ".yaml"), ("json", ".json"), ("jsonl", ".jsonl")])
def test_a_dumped_trace_reads_back_its_name_and_tags(fmt: str, suffix: str) -> None:
    @given(lgst.traces(max_steps=4), NAMES, TAGS)
    def check(trace: Trace, name: str, tags: tuple[str, ...]) -> None:
        text = dumps(dataclasses.replace(trace, name=name, tags=tags), fmt)
        note(text)
        headers = _read(text, suffix)
        if headers is not None:  # None is allowed (the loader decides), a different answer is not
            assert [(h.name, h.tags) for h in headers] == [(name, tags)]

    check()


@pytest.mark.parametrize(("fmt", "suffix"), [("yaml", ".yaml"), ("json", ".json"), ("jsonl", ".jsonl")])
def test_plain_names_and_tags_are_always_read_from_the_header(fmt: str, suffix: str) -> None:
    # the speed promise: what traces usually hold never sends a file to the full loader at collection
    @given(lgst.traces(max_steps=4), WORDS, st.lists(WORDS, max_size=4).map(tuple))
    def check(trace: Trace, name: str, tags: tuple[str, ...]) -> None:
        text = dumps(dataclasses.replace(trace, name=name, tags=tags), fmt)
        headers = _read(text, suffix)
        assert headers is not None
        assert [(h.name, h.tags) for h in headers] == [(name, tags)]

    check()


@given(st.lists(lgst.traces(max_steps=3), min_size=1, max_size=3), st.data())
def test_a_mangled_yaml_file_is_read_as_the_loader_reads_it_or_left_to_it(traces: list[Trace],
                                                                            data: st.DataObject) -> None:
    named = [dataclasses.replace(t, name=f"trace-{i}") for i, t in enumerate(traces)]
    text = "---\n".join(dumps(t) for t in named)
    unmangled = _read(text, ".yaml")
    assert unmangled is not None and [(h.name, h.tags, h.document) for h in unmangled] == [
        (t.name, t.tags, i) for i, t in enumerate(named)]
    lines = text.split("\n")
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        at = data.draw(st.integers(min_value=0, max_value=len(lines)))
        lines.insert(at, data.draw(FRAGMENTS))
    text = "\n".join(lines)
    note(text)
    headers = _read(text, ".yaml")
    if headers is None:
        return
    loaded = _load(text, "yaml")
    # a header means a trace: never a file the loader skips as no trace at all
    assert not isinstance(loaded, NotATraceError)
    if not isinstance(loaded, TraceError):
        assert [(h.name, h.tags) for h in headers] == loaded
