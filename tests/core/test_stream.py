"""Streaming replay of JSONL files: the same outcome, counts and mismatches as loading and replaying,
with the file read line by line, bad lines named by their line, and a torn last line left out."""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from bundled import bundled_traces

from pytest_loopguard.bench._replay import synthetic_trace
from pytest_loopguard.cli._corpus import run_paths
from pytest_loopguard.core._expect import check
from pytest_loopguard.core._model import Message, Step, ToolCall, ToolResult, Trace
from pytest_loopguard.errors import LoopguardWarning, NotATraceError, TraceError
from pytest_loopguard.io import _jsonl as jsonl
from pytest_loopguard.io._format import dump, load_file
from pytest_loopguard.io._stream import replay_jsonl
from pytest_loopguard.runtime._policy import resolve_policy
from pytest_loopguard.runtime._replay import replay

ROOT = Path(__file__).parents[2]
CORPUS = list(bundled_traces())


def streamed_equals_loaded(trace: Trace, folder: Path, policy: str | None = None) -> None:
    path = folder / f"{trace.name}.jsonl"
    dump(trace, path)
    loaded = load_file(path)[0]
    full = replay(loaded, policy)
    streamed = replay_jsonl(path, policy)
    assert streamed is not None
    got = streamed.result
    assert (got.outcome, got.stopped_at, got.stopped_by, got.policy) == (
        full.outcome, full.stopped_at, full.stopped_by, full.policy)
    assert got.counts() == full.counts() and got.steps == ()
    assert [str(m) for m in streamed.mismatches] == [str(m) for m in check(full)]


def test_every_corpus_trace_streams_to_the_same_result(tmp_path: Path) -> None:
    assert len(CORPUS) > 100
    for trace in CORPUS:
        streamed_equals_loaded(trace, tmp_path)


@pytest.mark.parametrize("preset", ["default", "hermes-current", "spacebot-worker", "qa-agent"])
def test_synthetic_runs_stream_to_the_same_result_under_each_preset(tmp_path: Path, preset: str) -> None:
    rng = random.Random(11)
    for i in range(4):
        streamed_equals_loaded(synthetic_trace(f"s{i}", rng, steps=300), tmp_path, preset)


def test_turns_group_as_in_a_full_replay_without_llm_steps_and_before_the_first(tmp_path: Path) -> None:
    click = ToolCall.of("browser_click", {"index": 1})
    no_llm = Trace(name="no-llm", steps=tuple(Step(i, "tool", call=click, result=ToolResult()) for i in range(6)))
    streamed_equals_loaded(no_llm, tmp_path, "default")
    mixed = synthetic_trace("mixed", random.Random(5), steps=80)
    head = tuple(Step(i, "tool", call=click, result=ToolResult()) for i in range(5))
    shifted = tuple(Step(len(head) + s.index, s.kind, call=s.call, result=s.result, llm=s.llm, phase=s.phase,
                         message=s.message, t=s.t) for s in mixed.steps)
    streamed_equals_loaded(Trace(name="tools-first", steps=head + shifted), tmp_path, "default")


def test_a_bad_step_is_named_by_its_line_as_the_loader_names_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"loopguard": 1, "name": "bad"}\n{"tool": "a"}\n\n{"tool": 3}\n{"tool": "b"}\n',
                    encoding="utf-8")
    with pytest.raises(TraceError) as loaded:
        load_file(path)
    with pytest.raises(TraceError) as streamed:
        replay_jsonl(path)
    assert str(streamed.value) == str(loaded.value) and ":4" in str(streamed.value)


def test_a_torn_last_line_is_left_out_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_text('{"loopguard": 1, "name": "torn"}\n{"tool": "a"}\n{"tool": "b", "ar\n', encoding="utf-8")
    with pytest.warns(LoopguardWarning, match="torn last line"):
        streamed = replay_jsonl(path)
    assert streamed is not None and streamed.result.counts() == {"allow": 1}
    assert streamed.result.trace.warnings and "torn.jsonl:3" in streamed.result.trace.warnings[0]


def test_run_paths_reports_each_bad_file_and_goes_on(tmp_path: Path) -> None:
    dump(synthetic_trace("one", random.Random(1), steps=30), tmp_path / "a.jsonl")
    dump(synthetic_trace("one", random.Random(2), steps=30), tmp_path / "b.yaml")  # a duplicate name
    (tmp_path / "c.jsonl").write_text('{"loopguard": 1, "name": "bad"}\n{"tool": 3}\n{"tool": "a"}\n',
                                      encoding="utf-8")
    dump(synthetic_trace("two", random.Random(3), steps=30), tmp_path / "d.json")
    (tmp_path / "e.jsonl").write_text('{"resourceSpans": []}\n', encoding="utf-8")  # not a trace at all
    skipped: list[NotATraceError] = []
    items = list(run_paths([tmp_path, tmp_path / "missing.yaml", tmp_path / "e.jsonl"], skipped=skipped))
    errors = [str(i) for i in items if isinstance(i, Exception)]
    replayed = [i[0].trace.name for i in items if not isinstance(i, Exception)]
    assert replayed == ["one", "two"]
    assert len(errors) == 4 and "duplicate trace name 'one'" in errors[0] and "c.jsonl:2" in errors[1]
    assert "no such file" in errors[2] and "e.jsonl" in errors[3]  # named on its own, it must be a trace
    assert [str(n.file) for n in skipped] == [str(tmp_path / "e.jsonl")]  # in a folder, it is skipped


def test_lines_split_across_read_blocks_stream_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setattr(jsonl, "_BLOCK", 7)  # every line, and many a UTF-8 character, spans blocks
    trace = synthetic_trace("blocks", random.Random(8), steps=60)
    steps = (*trace.steps, Step(len(trace.steps), "message", message=Message("user", "naïve café — ☃ 𝄞")))
    streamed_equals_loaded(Trace(name="blocks", steps=steps, task=trace.task), tmp_path, "default")


def test_a_line_beyond_the_bound_and_a_bad_byte_are_named_by_line(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setattr(jsonl, "_BLOCK", 16)
    monkeypatch.setattr(jsonl, "MAX_FILE_BYTES", 100)
    long = tmp_path / "long.jsonl"
    long.write_text('{"loopguard": 1, "name": "long"}\n{"tool": "a"}\n{"tool": "' + "a" * 120 + '"}\n',
                    encoding="utf-8")
    with pytest.raises(TraceError, match=r"long\.jsonl:3: line longer than 100 bytes"):
        replay_jsonl(long)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"loopguard": 1, "name": "bad"}\n{"tool": "a"}\n{"tool": "\xff"}\n')
    with pytest.raises(TraceError) as loaded:
        load_file(bad)
    with pytest.raises(TraceError) as streamed:
        replay_jsonl(bad)  # the first 3 lines span 4 blocks; the offset is 32 + 14 + 10 bytes
    assert str(streamed.value) == str(loaded.value) and str(streamed.value).endswith(
        "bad.jsonl:3: not UTF-8 text (byte 0xff at offset 56)")


def test_lines_after_the_run_stopped_are_still_checked(tmp_path: Path) -> None:
    trace = synthetic_trace("stops", random.Random(1), steps=200)
    path = tmp_path / "stops.jsonl"
    dump(trace, path)
    streamed = replay_jsonl(path)
    assert streamed is not None and streamed.result.outcome == "stopped"
    stopped_at = streamed.result.stopped_at
    assert stopped_at is not None and streamed.result.counts()["not_reached"] == len(trace.steps) - stopped_at - 1
    with path.open("a", encoding="utf-8") as out:
        out.write('{"tool": "a", "result": {"tokens": -1}}\n{"tool": "b"}\n')
    with pytest.raises(TraceError) as loaded:
        load_file(path)
    with pytest.raises(TraceError) as after_stop:
        replay_jsonl(path)
    assert str(after_stop.value) == str(loaded.value) and f":{len(trace.steps) + 2}:" in str(after_stop.value)


@pytest.mark.parametrize("block", [5, 64, 1 << 20])
def test_a_torn_line_is_only_the_last_non_blank_one_whatever_the_blocks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:

    monkeypatch.setattr(jsonl, "_BLOCK", block)
    head = '\n\n{"loopguard": 1, "name": "t"}\n  \n{"tool": "a"}\n'
    torn = tmp_path / "torn.jsonl"
    torn.write_text(head + '{"tool": "b", "ar\n\n \t \n\n', encoding="utf-8")
    with pytest.warns(LoopguardWarning, match=r"torn\.jsonl:6: torn last line"):
        streamed = replay_jsonl(torn)
    assert streamed is not None and streamed.result.counts() == {"allow": 1}
    inner = tmp_path / "inner.jsonl"
    inner.write_text(head + '{"tool": "b", "ar\n\n \t \n\n{"tool": "c"}\n', encoding="utf-8")
    with pytest.raises(TraceError) as loaded:
        load_file(inner)
    with pytest.raises(TraceError) as streamed_error:
        replay_jsonl(inner)
    assert str(streamed_error.value) == str(loaded.value) and "inner.jsonl:6: JSON syntax error" in str(loaded.value)


def test_rows_give_the_header_with_whether_it_is_the_last_then_the_rest(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setattr(jsonl, "_BLOCK", 3)
    path = tmp_path / "rows.jsonl"
    path.write_text("\n \n{}\n\n\t\n[1]\n\n2\n", encoding="utf-8")
    with jsonl.open_regular(str(path)) as handle:
        rows = jsonl.rows(handle, str(path))
        assert next(rows) == (3, "{}", False)
        assert list(rows.lines()) == [(6, "[1]"), (8, "2")]
    path.write_text("\n{}\n \n", encoding="utf-8")
    with jsonl.open_regular(str(path)) as handle:
        rows = jsonl.rows(handle, str(path))
        assert list(rows) == [(2, "{}", True)]
        assert list(rows.lines()) == []


def test_a_strict_trace_reports_each_unexpected_intervention_as_the_full_replay_does(tmp_path: Path) -> None:
    trace = dataclasses.replace(synthetic_trace("strict", random.Random(4), steps=300), strict=True)
    streamed_equals_loaded(trace, tmp_path, "roo")  # roo blocks repeats and never stops the run
    streamed = replay_jsonl(tmp_path / "strict.jsonl", "roo")
    assert streamed is not None and streamed.result.outcome != "stopped"
    strict = [m for m in streamed.mismatches if "strict" in str(m)]
    assert len(strict) == streamed.result.counts().get("block", 0) > 0


@pytest.mark.parametrize("hold", [1, 2, 4, 1000])
def test_steps_before_the_first_llm_step_are_held_only_while_an_llm_step_may_follow(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hold: int) -> None:
    from pytest_loopguard.io import _stream as stream

    monkeypatch.setattr(stream, "_HOLD", hold)
    rng = random.Random(6)
    calls = [ToolCall.of("browser_click", {"index": rng.randrange(3)}) for _ in range(40)]
    tools = tuple(Step(i, "tool", call=c, result=ToolResult()) for i, c in enumerate(calls))
    no_llm = Trace(name="no-llm", steps=tools)
    for preset in ("default", "roo", "hermes-current"):
        streamed_equals_loaded(no_llm, tmp_path, preset)
    mixed = synthetic_trace("mixed", random.Random(5), steps=160)
    head = tools[:9]
    shifted = tuple(dataclasses.replace(s, index=len(head) + s.index) for s in mixed.steps)
    assert any(s.kind == "llm" for s in shifted)
    # spacebot-worker ends the run at its 50th turn: the 9 tool steps before the first llm step are one turn
    for preset in ("default", "roo", "spacebot-worker"):
        streamed_equals_loaded(Trace(name="tools-first", steps=head + shifted), tmp_path, preset)

    bad = tmp_path / "bad.jsonl"
    dump(no_llm, bad)
    with bad.open("a", encoding="utf-8") as out:
        out.write('{"tool": "a", "result": {"tokens": -1}}\n')
    with pytest.raises(TraceError) as loaded:
        load_file(bad)
    with pytest.raises(TraceError) as streamed:
        replay_jsonl(bad)
    assert str(streamed.value) == str(loaded.value)

    # how far the reading runs ahead of the replay: at most `hold` steps without an llm step in the file
    dump(no_llm, tmp_path / "bounded.jsonl")
    read: list[int] = []

    def counted() -> Iterator[Step]:
        for step in no_llm.steps:
            read.append(step.index)
            yield step

    class Running:
        outcome = None

    planned = stream._planned(counted(), Running(), str(tmp_path / "bounded.jsonl"))  # type: ignore[arg-type]
    ahead = [len(read) - got.index for got, _calls in planned]
    assert len(ahead) == len(no_llm.steps) and max(ahead) <= hold


HOSTILE_HEADERS = [
    '{"loopguard": 1, "name": "h", "policy": "roo", "task": {"objective": "fix it"}, "tags": ["a"]}',
    '{"loopguard": 1, "name": "h", "steps": []}',  # a JSONL header carries no steps
    '{"loop\\u0067uard": 1, "name": "h"}',  # the key only once decoded: the loader's text scan says no trace
    '{"loopguard": 1, "name": "h", "policy": "nosuch"}',
    '{"loopguard": 1, "name": "a::b"}',
    '{"loopguard": true, "name": "h"}',
    '{"loopguard": 1, "name": "h", "colour": "red"}',
    '{"loopguard": 1, "name": "h", "context": {"window_tokens": 0}}',
    '{"loopguard": 1, "name": "h", "mode": "simulate"}',
    '{"loopguard": 1, "name": "h",',
    '["loopguard"]',
    '{"name": "h"}',
    '{"loopguard": 1, "name": "h", "name": "twice"}',
    '{"loopguard": 1, "name": "h", "n": 1e999}',
]


def _fields(trace: Trace) -> dict[str, object]:
    return {f.name: getattr(trace, f.name) for f in dataclasses.fields(trace)}  # a Trace compares by identity


def _header_or_error(read: object) -> object:
    try:
        return _fields(read())  # type: ignore[operator]
    except TraceError as exc:
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("text", HOSTILE_HEADERS)
def test_the_header_read_by_a_stream_is_the_loaders_header(tmp_path: Path, text: str) -> None:
    from pytest_loopguard.io._format import loads

    path = str(tmp_path / "h.jsonl")
    for lead in ("", "\n  \n"):  # a header after blank lines keeps its line number in errors
        rows = iter([(lead.count("\n") + 1, text, True)])
        got = _header_or_error(functools.partial(jsonl.header, rows, path))
        assert got == _header_or_error(lambda whole=lead + text: loads(whole, fmt="jsonl", path=path)[0])


def test_every_corpus_header_streams_as_loaded(tmp_path: Path) -> None:

    for trace in CORPUS:
        path = tmp_path / f"{trace.name}.jsonl"
        dump(trace, path)
        with path.open("rb") as handle:
            header = jsonl.header(jsonl.rows(handle, str(path)), str(path))
        loaded = load_file(path)[0]
        assert _fields(header) == _fields(dataclasses.replace(loaded, steps=())), trace.name


def test_run_streams_a_jsonl_trace_longer_than_the_loader_may_hold(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # `loopguard run` replays a JSONL file as it reads it, so the loader's bound on a whole trace (it holds
    # every step) does not apply: lowered to 50 steps, the 200-step file is refused whole and run streamed
    from pytest_loopguard.io import _format as traceio
    from pytest_loopguard.io import _read

    trace = synthetic_trace("long", random.Random(3), steps=200)
    path = tmp_path / "long.jsonl"
    dump(trace, path)
    full = replay(load_file(path)[0], "roo")  # nothing stops the synthetic trace under roo: every step replayed
    assert len(trace.steps) > 200 and full.counts().get("not_reached", 0) == 0
    monkeypatch.setattr(traceio, "MAX_STEPS", 50)  # the JSONL fast path's bound
    monkeypatch.setattr(_read, "MAX_STEPS", 50)  # the step reader's
    with pytest.raises(TraceError, match="at most 50"):
        load_file(path)
    (got,) = list(run_paths([path], resolve_policy("roo")))
    assert not isinstance(got, Exception)
    result, mismatches = got
    assert (result.outcome, result.counts()) == (full.outcome, full.counts())
    assert result.steps == () and mismatches == []


def test_run_replays_each_file_before_reading_the_next(tmp_path: Path) -> None:
    # results come out file by file as each is read: a file removed after the first result is not found
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, suffix in (("a", "jsonl"), ("b", "yaml"), ("c", "jsonl")):
        dump(synthetic_trace(name, random.Random(1), steps=30), folder / f"{name}.{suffix}")
    results = run_paths([folder / "a.jsonl", folder / "b.yaml", folder / "c.jsonl"], None)
    first = next(results)
    assert not isinstance(first, Exception) and first[0].trace.name == "a"
    (folder / "b.yaml").unlink()
    (folder / "c.jsonl").unlink()
    rest = list(results)
    assert [str(e) for e in rest] == [f"{folder / n}: no such file or folder" for n in ("b.yaml", "c.jsonl")]
