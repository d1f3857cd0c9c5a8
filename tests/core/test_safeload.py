"""The safe reader: only regular files, a size cap, strict UTF-8, standard YAML tags, bounded aliases and
nesting checked without building anything, for YAML and JSON alike."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pytest_loopguard.core import _safeload as safeload
from pytest_loopguard.core._limits import MAX_DEPTH, MAX_INT, MAX_STRING
from pytest_loopguard.core._safeload import check_yaml_events, parse_json, parse_yaml, read_text
from pytest_loopguard.errors import TraceError
from pytest_loopguard.io._format import load, load_file, loads

TRACE = "loopguard: 1\nname: t\nsteps:\n  - tool: a\n    args: {v: VALUE}\n"


def refused(text: str, fmt: str = "yaml") -> TraceError:
    with pytest.raises(TraceError) as info:
        loads(text, fmt=fmt, path="x.trace")
    assert "x.trace" in str(info.value) and "\n" not in str(info.value)
    return info.value


# ---- files -------------------------------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
def test_a_fifo_named_like_a_trace_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "x.yaml"
    os.mkfifo(fifo)  # nobody writes to it: reading it the ordinary way would wait forever
    with pytest.raises(TraceError, match="not a regular file") as info:
        load(fifo)
    assert info.value.file == str(fifo)


def test_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "zero.yaml"
    link.symlink_to("/dev/zero")  # would read until memory runs out
    with pytest.raises(TraceError, match="not a regular file"):
        load(link)


def test_a_folder_named_like_a_trace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(TraceError, match="not a regular file"):
        load_file(tmp_path / "dir.yaml")


def test_a_link_to_a_regular_file_is_read(tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    real.write_text("loopguard: 1\nname: linked\nsteps: []\n")
    (tmp_path / "link.yaml").symlink_to(real)
    assert load(tmp_path / "link.yaml").name == "linked"


def test_file_size_limit_at_its_edge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the real limit is 32 MiB; the check is the same at any size, so test it at a small one
    monkeypatch.setattr(safeload, "MAX_FILE_BYTES", 100)
    at = tmp_path / "at.yaml"
    at.write_bytes(b"#" * 100)
    assert read_text(at) == "#" * 100
    over = tmp_path / "over.yaml"
    over.write_bytes(b"#" * 101)
    with pytest.raises(TraceError, match="file too large: 101 bytes; at most 100"):
        read_text(over)


def test_invalid_utf8_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"loopguard: 1\nname: caf\xe9\nsteps: []\n")
    with pytest.raises(TraceError) as info:
        load(path)
    assert (info.value.file, info.value.line) == (str(path), 2)
    assert "not UTF-8 text (byte 0xe9 at offset 22)" in info.value.problem


# ---- YAML ----------------------------------------------------------------------------------------------------
def test_python_tags_are_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = TRACE.replace("VALUE", f"!!python/object/apply:os.system ['touch {marker}']")
    error = refused(text)
    assert "python/object/apply:os.system" in error.problem and "not allowed" in error.problem
    assert error.line == 5
    assert not marker.exists()


@pytest.mark.parametrize("tag", ["!!binary aGk=", "!!set {a: null}", "!custom x", "!!omap [{a: 1}]"])
def test_non_standard_tags_are_refused(tag: str) -> None:
    assert "not allowed" in refused(TRACE.replace("VALUE", tag)).problem


@pytest.mark.parametrize("tag", ["!!str 12", "!!int 12", "!!float 1.5", "!!bool true", "!!null ''"])
def test_standard_tags_are_read(tag: str) -> None:
    assert loads(TRACE.replace("VALUE", tag), path="x.trace")


@pytest.mark.parametrize("value", ["!!bool maybe", "!!float xyz", "!!timestamp nope", "!!int zz"])
def test_a_scalar_its_tag_cannot_hold_is_refused(value: str) -> None:
    assert "a YAML value cannot be read" in refused(TRACE.replace("VALUE", value)).problem


def test_nesting_depth_at_its_edge() -> None:
    # the trace's own mapping, `steps`, the step and `args` take 4 levels; `v` holds the rest
    inner = MAX_DEPTH - 4
    ok = TRACE.replace("VALUE", "[" * inner + "]" * inner)
    assert loads(ok, path="x.trace")
    deep = TRACE.replace("VALUE", "[" * (inner + 1) + "]" * (inner + 1))
    assert refused(deep).problem == f"nested deeper than {MAX_DEPTH} levels"


def test_very_deep_yaml_is_refused_without_recursing() -> None:
    # building this would recurse 200,000 levels in C (a segfault before the check existed)
    assert sys.getrecursionlimit() < 200_000
    error = refused(TRACE.replace("VALUE", "[" * 200_000 + "]" * 200_000))
    assert "nested deeper" in error.problem


def test_a_parser_that_stops_at_its_own_depth_bound_is_refused_as_too_deep(monkeypatch: pytest.MonkeyPatch) -> None:
    # libyaml (the one PyYAML 6.0.4 bundles) stops at 1,000 levels, its scanner looking ahead through flow
    # openers before the event walk has counted to MAX_DEPTH: whichever bound stops the text, the refusal is
    # ours, at the parser's line
    mark = yaml.Mark("x.trace", 0, 4, 12, None, None)

    def parse(text: str, Loader: object) -> Iterator[object]:
        yield from ()
        raise yaml.scanner.ScannerError("while increasing flow level", mark, "exceeded maximum nesting depth", mark)

    monkeypatch.setattr(safeload.yaml, "parse", parse)
    error = refused(TRACE.replace("VALUE", "1"))
    assert (error.problem, error.line) == (f"nested deeper than {MAX_DEPTH} levels", 5)


def test_alias_expansion_at_its_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safeload, "MAX_NODES", 24)
    # the mapping 1, key a 1, the list &a 1 + 9, key b 1, b's list 1, *a 10 (the list it stands for): 24
    base = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: [*a"
    check_yaml_events(base + "]\n")
    with pytest.raises(TraceError, match="more than 24 values once aliases are expanded"):
        check_yaml_events(base + ", 1]\n")


def test_a_billion_laughs_is_refused_quickly() -> None:
    levels = ['x-l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    levels += [f"x-l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)]
    text = "loopguard: 1\nname: bomb\n" + "\n".join(levels) + "\nsteps: []\n"
    assert "once aliases are expanded" in refused(text).problem


def test_recursive_and_undefined_aliases_are_refused() -> None:
    assert "recursive" in refused("loopguard: 1\nname: t\nx-a: &r [1, *r]\nsteps: []\n").problem
    assert "names no anchor" in refused("loopguard: 1\nname: t\nx-a: *nope\nsteps: []\n").problem


def test_string_length_at_its_edge() -> None:
    check_yaml_events("a: " + "k" * MAX_STRING + "\n")
    with pytest.raises(TraceError, match=f"a string of {MAX_STRING + 1} characters; at most {MAX_STRING}"):
        check_yaml_events("a: " + "k" * (MAX_STRING + 1) + "\n")


def test_integer_range_at_its_edge() -> None:
    assert parse_yaml(f"a: {MAX_INT}\nb: {-MAX_INT}\n") == [{"a": MAX_INT, "b": -MAX_INT}]
    with pytest.raises(TraceError, match=r"\(±2\^53\)"):
        parse_yaml(f"a: {MAX_INT + 1}\n")
    with pytest.raises(TraceError, match="a YAML value cannot be read"):
        parse_yaml("a: " + "9" * 5000 + "\n")  # over Python's 4300-digit conversion limit
    with pytest.raises(TraceError, match="an integer of 4000 bits"):
        parse_yaml("a: 0x" + "f" * 1000 + "\n")  # hexadecimal has no digit limit: the range check catches it


# ---- JSON ----------------------------------------------------------------------------------------------------
def test_json_depth_at_its_edge() -> None:
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(TraceError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))


def test_json_depth_ignores_brackets_inside_strings() -> None:
    text = '{"a": "' + "[{" * 500 + '\\"[", "b": [1]}'
    assert parse_json(text) == {"a": "[{" * 500 + '"[', "b": [1]}


def test_deep_json_and_jsonl_are_refused_with_the_line() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert refused('{"loopguard": 1, "name": "t", "steps": ' + deep + "}", "json").line == 1
    jsonl = '{"loopguard": 1, "name": "t"}\n{"tool": "a"}\n{"tool": "a", "args": {"v": ' + deep + "}}\n"
    error = refused(jsonl, "jsonl")
    assert error.line == 3 and "nested deeper" in error.problem


def test_json_numbers_out_of_range_and_constants_are_refused() -> None:
    assert "(±2^53)" in refused('{"loopguard": 1, "name": "t", "seed": 1e400}'.replace("1e400", "9" * 30),
                                  "json").problem
    assert "NaN is not allowed" in refused('{"loopguard": 1, "name": "t", "steps": [NaN]}', "json").problem
