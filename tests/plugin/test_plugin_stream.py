"""Large JSONL traces under pytest: replayed as they are read (as `loopguard run` does), with the verdicts of a
full load; and a corpus run holds one file's traces at a time."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from pytest_loopguard.core import _safeload as safeload
from pytest_loopguard.core._model import StepExpect, Trace
from pytest_loopguard.importers import import_runs, to_trace
from pytest_loopguard.io._format import dumps
from pytest_loopguard.io._golden import observed_trace
from pytest_loopguard.pytest import plugin
from pytest_loopguard.runtime._replay import replay

pytest_plugins = ["pytester"]

REAL = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "real"
LABELS = yaml.safe_load((REAL / "labels.yaml").read_text(encoding="utf-8"))["runs"]


@pytest.fixture(scope="module")
def real_runs() -> list[Trace]:
    """The labelled real runs, each with the expectations a full replay under `default` observes."""
    out = []
    for i, run in enumerate(LABELS):
        trace = to_trace(import_runs(REAL / run["file"])[run.get("row", 0)], f"real-{i}")
        out.append(observed_trace(trace, replay(trace, "default")))
    return out


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    return pytester


def _write(project: pytest.Pytester, trace: Trace) -> Path:
    path = project.path / "traces" / f"{trace.name}.jsonl"
    path.write_text(dumps(trace, "jsonl"), encoding="utf-8")
    return path


def _wrong(trace: Trace) -> Trace:
    """`trace` with its first step expectation turned into one the replay contradicts."""
    index = next(s.index for s in trace.steps if s.expect is not None)
    steps = tuple(dataclasses.replace(s, expect=StepExpect("allow")) if s.index == index else s for s in trace.steps)
    return dataclasses.replace(trace, steps=steps)


def _failures(result: pytest.RunResult) -> str:
    """The failures section of a run's output, without the timing line."""
    text = result.stdout.str()
    section = text[text.index("= FAILURES ="):]
    return re.sub(r"in [0-9.]+s", "in Ns", section)


def test_real_runs_streamed_have_the_verdicts_of_a_full_load(
    project: pytest.Pytester, real_runs: list[Trace], monkeypatch: pytest.MonkeyPatch
) -> None:
    for trace in real_runs:
        _write(project, trace)
    monkeypatch.setattr(plugin, "STREAM_FROM_BYTES", 0)  # every JSONL file streams
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=len(real_runs))
    result.stdout.fnmatch_lines([f"loopguard: {len(real_runs)} traces replayed, 0 mismatched"])


def test_a_streamed_mismatch_fails_with_the_table_of_a_loaded_one(
    project: pytest.Pytester, real_runs: list[Trace], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = next(t for t in real_runs if any(s.expect is not None for s in t.steps))
    _write(project, _wrong(trace))
    loaded = project.runpytest("-p", "no:randomly")
    loaded.assert_outcomes(failed=1)
    monkeypatch.setattr(plugin, "STREAM_FROM_BYTES", 0)
    streamed = project.runpytest("-p", "no:randomly")
    streamed.assert_outcomes(failed=1)
    assert _failures(streamed) == _failures(loaded)
    assert "Traceback" not in streamed.stdout.str()


def test_a_jsonl_trace_over_the_loaders_size_cap_runs(
    project: pytest.Pytester, real_runs: list[Trace], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = max(real_runs, key=lambda t: len(t.steps))
    size = _write(project, trace).stat().st_size
    monkeypatch.setattr(safeload, "MAX_FILE_BYTES", size // 2)  # the loader now refuses the file
    monkeypatch.setattr(plugin, "STREAM_FROM_BYTES", size // 4)  # (streaming starts below the loader's cap)
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    # where every step's result is needed (a report), the file is loaded whole: the loader's one line
    report = project.runpytest("-p", "no:randomly", "--loopguard-report", "r.json")
    report.assert_outcomes(failed=1)
    report.stdout.fnmatch_lines([f"*traces/{trace.name}.jsonl: file too large: {size} bytes; at most {size // 2}*"])
    assert "Traceback" not in report.stdout.str()


def test_a_mismatch_in_a_file_too_large_to_load_lists_the_mismatches(
    project: pytest.Pytester, real_runs: list[Trace], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = next(t for t in real_runs if any(s.expect is not None for s in t.steps))
    size = _write(project, _wrong(trace)).stat().st_size
    monkeypatch.setattr(safeload, "MAX_FILE_BYTES", size // 2)
    monkeypatch.setattr(plugin, "STREAM_FROM_BYTES", 0)
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"traces/{trace.name}.jsonl: trace {trace.name} under default: *1 mismatch*",
                                 trace.description, "step *: action: expected 'allow', got *"])
    assert "Traceback" not in result.stdout.str()


def test_a_corpus_run_lets_each_files_traces_go_once_its_items_have_run(project: pytest.Pytester) -> None:
    for i in range(5):
        (project.path / "traces" / f"t{i}.yaml").write_text(
            f"loopguard: 1\nname: t{i}\nsteps: [{{tool: a}}, {{tool: b}}]\n---\nloopguard: 1\nname: u{i}\n"
            "steps: [{tool: c}]\n", encoding="utf-8")
    project.makeconftest(
        """
        import gc
        from pytest_loopguard.core._model import StepExpect, Trace

        held = {}

        def _traces():
            gc.collect()
            return sum(1 for o in gc.get_objects() if type(o) is Trace)

        def pytest_collection_finish(session):
            held["collected"] = _traces()

        def pytest_sessionfinish(session):
            print(f"\\ntraces held after the run: {_traces() - held['collected']}")
            # an item asked for its trace afterwards loads its file again
            print("names:", " ".join(item.trace.name for item in session.items))
        """
    )
    result = project.runpytest("-p", "no:randomly", "-s")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(["traces held after the run: 0",
                                 "names: t0 u0 t1 u1 t2 u2 t3 u3 t4 u4"])
