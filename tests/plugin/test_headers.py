"""The header reader collection uses: each trace's name, tags and first line, or None where only the loader can
judge the file; never a name or tags the loader would not give."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest
from files import write

from pytest_loopguard.bench._suite import write_corpus
from pytest_loopguard.errors import NotATraceError, TraceError
from pytest_loopguard.io._format import SUFFIXES, load_file
from pytest_loopguard.io._headers import TraceHeader, read_headers

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def _files(root: Path) -> list[Path]:
    # a corpus manifest (traces/loopguard-corpus.yaml) is no trace: folder walks pass over it
    return sorted(f for f in root.rglob("*") if f.suffix.lower() in SUFFIXES and f.is_file()
                  and f.name != "loopguard-corpus.yaml")


def _load(path: Path) -> list[tuple[str, tuple[str, ...]]] | TraceError:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return [(t.name, t.tags) for t in load_file(path)]
        except TraceError as exc:
            return exc


def test_every_trace_in_the_corpus_is_collected_from_its_header() -> None:
    # the fast path holds for the whole corpus: a None here would load the file at collection
    files = _files(REPO / "traces")
    assert len(files) > 100
    for path in files:
        headers = read_headers(path)
        assert headers is not None, path
        assert [(h.name, h.tags) for h in headers] == _load(path), path
        assert [h.document for h in headers] == list(range(len(headers)))


def test_the_bench_corpus_is_collected_from_its_header(tmp_path: Path) -> None:
    for path in sorted(write_corpus(tmp_path, 5, seed=1).iterdir()):
        headers = read_headers(path)
        assert headers is not None and len(headers) == 1, path
        assert [(headers[0].name, headers[0].tags)] == _load(path)


@pytest.mark.parametrize("root", ["fuzz-repros", "corpus/real"])
def test_hostile_and_foreign_files_never_get_a_header_the_loader_contradicts(root: str) -> None:
    files = _files(SHARED / root)
    assert files
    for path in files:
        headers = read_headers(path)
        loaded = _load(path)
        if headers is None:
            continue
        # a header means a trace: never a file the loader calls no trace (that is a skip, not a test)
        assert not isinstance(loaded, NotATraceError), path
        if not isinstance(loaded, TraceError):
            assert [(h.name, h.tags) for h in headers] == loaded, path


def test_a_multi_document_file_gives_each_trace_and_its_first_key_line(tmp_path: Path) -> None:
    text = ("# a comment\nloopguard: 1\nname: first\ntags:\n- a\n- b\nsteps: [{tool: a}]\n---\n\n"
            "# second\nloopguard: 1\nname: second\nsteps:\n  - tool: b\n---\n")
    assert read_headers(write(tmp_path, "m.yaml", text)) == [
        TraceHeader("first", ("a", "b"), 1, 0), TraceHeader("second", (), 10, 1)
    ]


def test_a_jsonl_header_is_its_first_non_blank_line(tmp_path: Path) -> None:
    text = '\n  \n{"loopguard": 1, "name": "rec", "tags": ["x"]}\n{"tool": "a"}\n{"tool": "b", "res'
    assert read_headers(write(tmp_path, "r.jsonl", text)) == [TraceHeader("rec", ("x",), 0, 0)]


def test_a_json_trace_is_read_whole(tmp_path: Path) -> None:
    text = json.dumps({"steps": [{"tool": "a"}], "name": "j", "loopguard": 1})
    assert read_headers(write(tmp_path, "j.json", text)) == [TraceHeader("j", (), 0, 0)]


def test_block_and_quoted_values_are_parsed_as_yaml(tmp_path: Path) -> None:
    text = "loopguard: 1\nname: >-\n  folded\n  name\ntags: ['a: b', \"c\"]  # two\nsteps: []\n"
    assert read_headers(write(tmp_path, "q.yaml", text)) == [TraceHeader("folded name", ("a: b", "c"), 0, 0)]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("flow.yaml", "{loopguard: 1, name: flow, steps: []}\n"),
        ("quoted-key.yaml", 'loopguard: 1\n"name": q\nsteps: []\n'),
        ("bom.yaml", "\ufeffloopguard: 1\nname: b\nsteps: []\n"),
        ("crlf.yaml", "loopguard: 1\r\nname: c\r\nsteps: []\r\n"),
        ("dup.yaml", "loopguard: 1\nname: a\nname: b\nsteps: []\n"),
        ("marker.yaml", "--- {loopguard: 1, name: m, steps: []}\n"),
        ("indented.yaml", "  loopguard: 1\n  name: i\n"),
        ("continued.yaml", 'loopguard: 1\ndescription: "two\nlines"\nname: c\nsteps: []\n'),
        ("alias.yaml", "loopguard: 1\nx-n: &n aliased\nname: *n\nsteps: []\n"),
        ("tag.yaml", "loopguard: 1\nname: !!python/object/apply:os.getcwd []\nsteps: []\n"),
        ("int-tag.yaml", "loopguard: 1\nname: n\ntags: [1]\nsteps: []\n"),
        ("colons.yaml", "loopguard: 1\nname: a::b\nsteps: []\n"),
        ("version.yaml", "loopguard: true\nname: v\nsteps: []\n"),
        ("two.yaml", "loopguard: 2\nname: v\nsteps: []\n"),
        ("nameless.yaml", "loopguard: 1\nsteps: []\n"),
        ("half.yaml", "loopguard: 1\nname: a\nsteps: []\n---\nname: b\nsteps: []\n"),
        ("settings.yaml", "retries: 3\n"),
        ("empty.yaml", "# nothing\n"),
        ("steps.jsonl", '{"loopguard": 1, "name": "s", "steps": []}\n'),
        ("torn.jsonl", '{"loopguard": 1, "name": "t"\n'),
        ("list.json", "[1, 2]"),
        ("deep.json", "[" * 100_000 + "]" * 100_000),
        ("latin1.yaml", b"loopguard: 1\nname: caf\xe9\nsteps: []\n"),
        ("latin1.jsonl", b'{"loopguard": 1, "name": "caf\xe9"}\n{"tool": "a"}\n'),
        ("blank.jsonl", " \n\n\u00a0\n"),
    ],
)
def test_what_the_reader_is_unsure_of_goes_to_the_loader(tmp_path: Path, name: str, text: str | bytes) -> None:
    assert read_headers(write(tmp_path, name, text)) is None


@pytest.mark.parametrize("name", ["f.yaml", "f.jsonl"])
def test_a_fifo_is_not_read(tmp_path: Path, name: str) -> None:
    os.mkfifo(tmp_path / name)
    assert read_headers(tmp_path / name) is None  # returns at once: a FIFO is never opened for a blocking read


def test_a_jsonl_header_is_read_without_the_rest_of_the_file(tmp_path: Path) -> None:
    # The steps are judged when the trace runs, streamed (the file may be over the loader's size cap): bytes
    # that are not UTF-8 after the first line do not keep collection from reading it, however long that line.
    about = "d" * 200_000  # the first line spans several reads
    text = b'\n \n{"loopguard": 1, "name": "rec", "tags": ["x"], "description": "' + about.encode() + b'"}\n\xff\xfe\n'
    assert read_headers(write(tmp_path, "r.jsonl", text)) == [TraceHeader("rec", ("x",), 0, 0)]
