"""`loopguard replay FILE.jsonl` streams: it prints exactly what loading and replaying the whole trace prints,
row by row as the steps are replayed, never loading the trace; bad input is reported as the loader reports it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from bundled import bundled_traces

from pytest_loopguard.bench._replay import synthetic_trace
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.cli import _replay as replay_cmd
from pytest_loopguard.cli import _timeline as timeline
from pytest_loopguard.core._model import Step, StepExpect, Trace
from pytest_loopguard.io._format import dump
from pytest_loopguard.report import _console as console

ROOT = Path(__file__).parents[2]
CORPUS = list(bundled_traces())


def both(path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
         *extra: str) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(status, stdout, stderr) of the streamed command and of the full load and replay of the same file."""
    capsys.readouterr()
    streamed = cli.main(["replay", str(path), *extra])
    got = capsys.readouterr()
    with monkeypatch.context() as m:
        m.setattr(replay_cmd, "streams", lambda args: False)
        full = cli.main(["replay", str(path), *extra])
    want = capsys.readouterr()
    return (streamed, got.out, got.err), (full, want.out, want.err)


def as_jsonl(trace: Trace, folder: Path) -> Path:
    path = folder / f"{trace.name}.jsonl"
    dump(trace, path)
    return path


def test_every_corpus_trace_prints_as_the_full_replay_prints_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(CORPUS) > 100
    mismatched = 0
    for trace in CORPUS:
        streamed, full = both(as_jsonl(trace, tmp_path), capsys, monkeypatch)
        assert streamed == full, trace.name
        mismatched += "expectations:" in full[1]
    assert mismatched == 0  # the corpus holds: no expectation lines to compare there (see below)


@pytest.mark.parametrize("preset", ["default", "hermes-current", "spacebot-worker", "qa-agent"])
def test_synthetic_runs_print_alike_under_presets_with_unmet_expectations(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, preset: str) -> None:
    rng = random.Random(7)
    for i in range(3):
        trace = synthetic_trace(f"s{i}", rng, steps=250)
        # an expectation on every 40th step that cannot all hold: mismatch lines are printed and compared
        steps = tuple(Step(s.index, s.kind, call=s.call, result=s.result, llm=s.llm, phase=s.phase, message=s.message,
                           t=s.t, expect=StepExpect("block") if s.index % 40 == 0 else None) for s in trace.steps)
        path = as_jsonl(Trace(name=trace.name, steps=steps, task=trace.task, context=dict(trace.context)), tmp_path)
        streamed, full = both(path, capsys, monkeypatch, "--policy", preset)
        assert streamed == full
        assert "expectations:" in full[1] and full[1].count("\n") > 250


def test_the_trace_is_never_loaded_and_rows_come_out_as_steps_are_replayed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    trace = synthetic_trace("long", random.Random(2), steps=120)
    n = len(trace.steps)
    path = as_jsonl(trace, tmp_path)
    monkeypatch.setattr(replay_cmd, "load_one", lambda spec: pytest.fail("loaded the whole trace"))
    printed: list[str] = []
    replayed: list[int] = []
    original = timeline.timeline_row

    def row(step, got):  # type: ignore[no-untyped-def]
        replayed.append(step.index)
        return original(step, got)

    monkeypatch.setattr(timeline, "timeline_row", row)
    timeline.stream_timeline(str(path), None, lambda text: printed.append(f"{len(replayed)}:{text}"))
    # two passes over the steps; in the second, each row is printed before the next step is replayed
    assert len(replayed) == 2 * n
    rows = printed[1:-1]
    assert [int(r.split(":", 1)[0]) for r in rows] == list(range(n + 1, 2 * n + 1))
    assert cli.main(["replay", str(path)]) == 0


def test_on_a_terminal_wide_enough_the_table_is_the_same(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = as_jsonl(synthetic_trace("wide", random.Random(4), steps=150), tmp_path)
    for module in (console, timeline):
        monkeypatch.setattr(module, "terminal_width", lambda stream=None: 400)
    streamed, full = both(path, capsys, monkeypatch)
    assert streamed == full


def test_on_a_narrow_terminal_rows_wrap_at_the_same_limits(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = as_jsonl(synthetic_trace("narrow", random.Random(4), steps=150), tmp_path)
    for module in (console, timeline):
        monkeypatch.setattr(module, "terminal_width", lambda stream=None: 100)
    (status, out, _), (full_status, full_out, _) = both(path, capsys, monkeypatch)
    assert status == full_status == 0
    assert max(len(line) for line in out.splitlines()) <= 100
    # the same cells, wrapped at the same points; only padding may differ where no row fills a column
    assert out.split() == full_out.split()


def test_a_bad_line_is_reported_as_loading_reports_it_before_any_row(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"loopguard": 1, "name": "bad"}\n{"tool": "a"}\n{"tool": "a", "args": {"n": 1e400}}\n',
                    encoding="utf-8")
    streamed, full = both(path, capsys, monkeypatch)
    assert streamed == full and streamed[0] == 2 and streamed[1] == ""
    assert "bad.jsonl:3" in streamed[2] and "NaN and Infinity" in streamed[2]


def test_a_torn_last_line_is_warned_about_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_text('{"loopguard": 1, "name": "torn"}\n{"tool": "a"}\n{"tool": "b", "ar\n', encoding="utf-8")
    streamed, full = both(path, capsys, monkeypatch)
    assert streamed == full and streamed[2].count("torn last line") == 1


def test_a_trace_without_steps_and_a_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"loopguard": 1, "name": "empty"}\n', encoding="utf-8")
    streamed, full = both(empty, capsys, monkeypatch)
    assert streamed == full and "empty under default: incomplete" in streamed[1]
    scenario = tmp_path / "scenario.jsonl"  # simulated, not replayed: the command falls back to the full path
    scenario.write_text('{"loopguard": 1, "name": "sim", "mode": "simulate", "max_turns": 3}\n', encoding="utf-8")
    streamed, full = both(scenario, capsys, monkeypatch)
    assert streamed == full
