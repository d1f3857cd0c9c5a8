"""The `loopguard` command, called as `cli.main([...])`: exit codes, tables, JSON shapes, bad input without
tracebacks. Expected verdicts come from the presets' numbers (PRESETS.md): `default` warns at the 3rd
identical call and blocks at the 5th; `spacebot` (the worker) skips calls from the 4th (warning, action
block) and blocks outright at the 7th."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from pytest_loopguard.bench._replay import run_bench, synthetic_trace
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.io._format import load, trace_to_mapping
from pytest_loopguard.runtime._policy import resolve_policy


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def clicks(n: int, name: str = "clicks", expect: str = "", policy: str = "default") -> str:
    steps = "".join("  - {tool: click, args: {index: 3}}\n" for _ in range(n))
    return f"loopguard: 1\nname: {name}\npolicy: {policy}\nsteps:\n{steps}{expect}"


PASSING = clicks(5, "passing", "expect: {outcome: incomplete, counts: {allow: 2, warn: 2, block: 1}}\n")
FAILING = """
loopguard: 1
name: failing
policy: default
steps:
  - {tool: click, args: {index: 3}}
  - {tool: click, args: {index: 3}}
  - {tool: click, args: {index: 3}, expect: allow}
expect: {outcome: completed}
"""
BAD_STEP = "loopguard: 1\nname: bad-step\nsteps:\n  - tool: a\n    argz: {}\n"
BAD_VERSION = "name: bad-version\nsteps: []\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


# ---- run ---------------------------------------------------------------------------------------------
def test_run_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", PASSING)
    status, out, err = run(capsys, "run", str(tmp_path))
    assert status == 0 and err == ""
    header = out.splitlines()[0].split()
    assert header[:4] == ["trace", "file", "policy", "outcome"] and header[-1] == "status"
    row = next(line for line in out.splitlines() if line.startswith("passing"))
    # warn, block, stop, ... counted per step, then the status
    assert row.split()[3:7] == ["incomplete", "2", "1", "0"] and row.split()[-1] == "ok"
    assert out.rstrip().endswith("loopguard: 1 traces replayed, 0 mismatched")


def test_run_fails_with_the_mismatch_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", PASSING)
    path = write(tmp_path, "b.yaml", FAILING)
    status, out, _ = run(capsys, "run", str(tmp_path))
    assert status == 1
    assert f"{path}::failing" in out
    marked = next(line for line in out.splitlines() if line.startswith(">"))
    assert marked.split()[1:2] == ["2"] and "loop_guard.consecutive_warning" in marked
    assert "run: outcome: expected 'completed', got 'incomplete'" in out
    assert "2 mismatches" in out and "loopguard: 2 traces replayed, 1 mismatched" in out


def test_run_policy_option_replays_under_another_preset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", PASSING)
    assert run(capsys, "run", str(tmp_path), "--policy", "default")[0] == 0
    status, out, _ = run(capsys, "run", str(tmp_path), "--policy", "spacebot")
    # under the worker the 3rd call is allowed, the 4th and 5th are skipped with a warning
    assert status == 1 and "counts.warn: expected 2, got 0" in out and "counts.block: expected 1, got 2" in out


def test_run_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", PASSING)
    write(tmp_path, "b.yaml", FAILING)
    status, out, _ = run(capsys, "run", str(tmp_path), "--json")
    assert status == 1
    entries = json.loads(out)
    assert [e["trace"] for e in entries] == ["passing", "failing"]
    assert list(entries[0]) == ["trace", "file", "policy", "outcome", "stopped_at", "stopped_by", "counts", "passed",
                                "mismatches"]
    assert entries[0]["counts"] == {"allow": 2, "warn": 2, "block": 1} and entries[0]["passed"] is True
    assert entries[1]["passed"] is False
    assert entries[1]["mismatches"] == [
        "step 2: action: expected 'allow', got 'warn' (loop_guard: warn loop_guard.consecutive_warning)",
        "run: outcome: expected 'completed', got 'incomplete'",
    ]


def test_run_reports_every_bad_file_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a_good.yaml", PASSING)
    step = write(tmp_path, "b_bad.yaml", BAD_STEP)
    version = write(tmp_path, "c_bad.yaml", BAD_VERSION)
    status, out, err = run(capsys, "run", str(tmp_path))
    assert status == 2
    errors = [line for line in err.splitlines() if line.startswith("loopguard: error:")]
    assert errors == [
        f"loopguard: error: {step}:5: step 0: field 'argz': unknown key 'argz'; "
        "expected one of agent, args, blocked, cancelled, denied, expect, result, source, t, tool",
    ]
    # without a top-level `loopguard` key a file in a folder is no trace at all: skipped, and said so
    assert f"loopguard: {version} is not a trace (no top-level 'loopguard' key): skipped" in err.splitlines()
    assert "passing" in out  # the good trace is still replayed and shown
    status, _, err = run(capsys, "validate", str(version))  # named on its own, it must be a trace
    assert status == 2
    assert (f"loopguard: error: {version}:1: field 'loopguard': missing 'loopguard' "
            "(the trace format version; expected 1)") in err


def test_run_defaults_to_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "traces/topic/a.yaml", PASSING)
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(capsys, "run")
    assert status == 0 and "traces/topic/a.yaml" in out


def test_run_with_an_unknown_policy_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", PASSING)
    status, out, err = run(capsys, "run", str(tmp_path), "--policy", "spacebat")
    assert status == 2 and out == ""
    assert err.startswith("loopguard: error: policy field 'preset': unknown preset 'spacebat'")
    assert len(err.strip().splitlines()) == 1


def test_run_shows_a_torn_jsonl_line_as_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_text('{"loopguard": 1, "name": "torn"}\n{"tool": "a"}\n{"tool": "b", "ar\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Python's own warning machinery stays out of the command's output
        status, out, err = run(capsys, "run", str(path))
    assert status == 0 and "torn" in out
    assert err.strip().startswith(f"loopguard: warning: {path}:3: torn last line ignored (Unterminated string")
    assert len(err.strip().splitlines()) == 1  # shown once, not also by Python's warning printer


# ---- replay ------------------------------------------------------------------------------------------
def test_replay_json_is_exactly_design_section_11(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "seven.yaml", clicks(7, "seven") + "  - {done: {success: false}}\n")
    status, out, _ = run(capsys, "replay", str(path), "--policy", "spacebot", "--json")
    assert status == 0
    data = json.loads(out)
    assert list(data) == ["trace", "policy", "outcome", "stopped_at", "stopped_by", "steps"]
    assert (data["trace"], data["policy"], data["outcome"]) == ("seven", "spacebot", "completed")
    assert (data["stopped_at"], data["stopped_by"]) == (None, None)
    for step in data["steps"]:
        assert list(step) == ["index", "kind", "tool", "action", "verdicts"]
        for verdict in step["verdicts"]:
            assert list(verdict) == ["engine", "action", "reason", "message", "data"]
    # PRESETS.md: identical call ×7 under the worker → allow ×3, block (warning) ×3, block on the 7th
    assert [s["action"] for s in data["steps"]] == ["allow"] * 3 + ["block"] * 4 + ["allow"]
    reasons = [[v["reason"] for v in s["verdicts"]] for s in data["steps"]]
    assert reasons[3:7] == [["loop_guard.consecutive_warning"]] * 3 + [["loop_guard.consecutive_block"]]
    assert data["steps"][3]["verdicts"][0]["message"].startswith("Warning:")
    assert data["steps"][7] == {"index": 7, "kind": "done", "tool": None, "action": "allow", "verdicts": []}


def test_replay_json_marks_steps_after_a_stop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "stop.yaml", """
        loopguard: 1
        name: stop
        policy: qa-agent
        steps:
          - {tool: click, args: {index: 1}}
          - {tool: click, args: {index: 1}}
          - {tool: click, args: {index: 1}}
          - {tool: click, args: {index: 1}}
          - {tool: click, args: {index: 2}}
        """)
    data = json.loads(run(capsys, "replay", str(path), "--json")[1])
    # qa-agent: the 4th call with the same tool and index is the 3rd repetition → stop
    assert (data["policy"], data["outcome"], data["stopped_at"], data["stopped_by"]) == (
        "qa-agent", "stopped", 3, "failure_tracker")
    assert data["steps"][3]["verdicts"][0]["reason"] == "failure_tracker.repetition"
    assert data["steps"][4] == {"index": 4, "kind": "tool", "tool": "click", "action": "not_reached", "verdicts": []}


def test_replay_timeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "f.yaml", FAILING)
    status, out, _ = run(capsys, "replay", str(path))
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["step", "call", "action", "engine", "reason", "message"]
    assert lines[4].split()[:6] == ["2", "click", '{"index":3}', "warn", "loop_guard", "loop_guard.consecutive_warning"]
    assert "trace failing under default: incomplete" in out
    assert "expectations: 2 mismatches" in out


MULTI = """
loopguard: 1
name: first
steps: [{tool: a}]
---
loopguard: 1
name: second
policy: spacebot
steps: [{tool: b}]
"""


def test_replay_picks_one_trace_of_several(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "multi.yaml", MULTI)
    status, _, err = run(capsys, "replay", str(path), "--json")
    assert status == 2
    assert err.strip() == f"loopguard: error: {path}: the file holds 2 traces (first, second); pick one with FILE::NAME"
    status, out, _ = run(capsys, "replay", f"{path}::second", "--json")
    assert status == 0 and json.loads(out)["trace"] == "second" and json.loads(out)["policy"] == "spacebot"
    status, _, err = run(capsys, "replay", f"{path}::third")
    assert status == 2 and "no trace named 'third'; the file holds: first, second" in err


def test_replay_of_a_malformed_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "bad.yaml", BAD_STEP)
    status, out, err = run(capsys, "replay", str(path))
    assert status == 2 and out == ""
    assert err.strip() == (f"loopguard: error: {path}:5: step 0: field 'argz': unknown key 'argz'; "
                           "expected one of agent, args, blocked, cancelled, denied, expect, result, source, t, tool")


# ---- validate ----------------------------------------------------------------------------------------
def test_validate_reports_every_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a_good.yaml", PASSING)
    step = write(tmp_path, "b_bad.yaml", BAD_STEP)
    version = write(tmp_path, "sub/c_bad.yaml", BAD_VERSION)
    dup = write(tmp_path, "sub/d_dup.yaml", clicks(1, "passing"))
    status, out, err = run(capsys, "validate", str(tmp_path))
    assert status == 2
    bad = [line.removeprefix("loopguard: error: ").split(":")[0] for line in err.splitlines()
           if line.startswith("loopguard: error:")]
    assert bad == [str(step), str(dup)]
    assert "duplicate trace name 'passing'" in err
    assert f"loopguard: {version} is not a trace (no top-level 'loopguard' key): skipped" in err.splitlines()
    assert out.strip() == "1 traces in 1 files ok, 2 bad"


def test_validate_all_good(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", PASSING)
    write(tmp_path, "b.yaml", MULTI)
    status, out, err = run(capsys, "validate", str(tmp_path))
    assert (status, out.strip(), err) == (0, "3 traces in 2 files ok, 0 bad", "")


# ---- presets -----------------------------------------------------------------------------------------
def table_rows(out: str) -> dict[str, list[str]]:
    lines = out.splitlines()
    return {line.split()[0]: line.split()[1:] for line in lines[2:] if line.strip()}


def test_presets_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "presets")
    assert status == 0
    header = out.splitlines()[0].split()
    assert header[0] == "setting"
    assert set(header[1:]) == {"browser-use", "claw-code", "default", "hermes", "hermes-current", "openchrome",
                               "qa-agent", "spacebot-branch", "spacebot-channel", "spacebot-worker",
                               "openhands", "openhands-sdk", "gemini-cli", "gemini-cli-2026-06", "roo", "goose",
                               "mini-swe-agent", "swe-agent", "pydantic-ai", "langchain-tool-call-limit",
                               "cline", "cline-sdk", "opencode", "kilo", "crewai"}
    rows = table_rows(out)
    column = {name: i for i, name in enumerate(header[1:])}
    warn_at = rows["loop_guard.warn_at"]
    assert [warn_at[column[p]] for p in ("spacebot-worker", "spacebot-branch", "spacebot-channel", "default")] == [
        "4", "3", "2", "3"]
    assert warn_at[column["hermes"]] == "—" and warn_at[column["qa-agent"]] == "—"
    assert rows["failure_tracker.max_failures"][column["browser-use"]] == "5"
    assert rows["failure_tracker.rejected_stop_at"][column["swe-agent"]] == "3"
    assert rows["budget.max_observation_streak"][column["openchrome"]] == "6"
    assert rows["budget.max_tool_calls"][column["openchrome"]] == "null"
    assert [warn_at[column[p]] for p in ("roo", "goose")] == ["null", "null"]
    assert [rows["loop_guard.block_at"][column[p]] for p in ("roo", "goose")] == ["4", "3"]
    assert [rows["loop_guard.identity"][column[p]] for p in ("roo", "goose")] == ["canonical", "sorted_typed"]
    detector = rows["stuck_detector.detector"]
    assert [detector[column[p]] for p in ("openhands", "openhands-sdk", "gemini-cli", "gemini-cli-2026-06")] == [
        "openhands", "openhands_sdk", "gemini", "gemini"]
    assert detector[column["default"]] == "—"


def test_presets_name_their_sources(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "presets", "cline", "crewai", "swe-agent", "roo")
    assert status == 0
    sources = {line.split()[0]: line for line in out.split("\n\n", 1)[1].splitlines()}
    assert list(sources) == ["cline", "crewai", "swe-agent", "roo"]
    assert "cline/cline @ 9ee618111d" in sources["cline"] and "crewAIInc/crewAI @ f4731f50" in sources["crewai"]
    assert "SWE-agent/SWE-agent @ 3ea751c0" in sources["swe-agent"] and "v3.33.1" in sources["roo"]


def test_presets_named_and_alias(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "presets", "spacebot", "hermes")
    assert status == 0
    assert out.splitlines()[0].split() == ["setting", "spacebot", "hermes"]
    rows = table_rows(out)
    assert rows["loop_guard.identity"] == ["ordered", "—"]
    assert rows["read_tracker.search_pagination"] == ["—", "false"]


def test_presets_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "presets", "qa-agent", "--json")
    data = json.loads(out)
    assert status == 0 and list(data) == ["qa-agent"]
    assert list(data["qa-agent"]["engines"]) == ["failure_tracker"]
    assert data["qa-agent"]["engines"]["failure_tracker"]["max_repetitions"] == 3


def test_presets_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "presets", "nope")
    assert status == 2 and out == "" and "unknown preset 'nope'" in err


# ---- matrix ------------------------------------------------------------------------------------------
def test_matrix_first_intervention_per_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", clicks(7, "seven"))
    write(tmp_path, "b.yaml", "loopguard: 1\nname: quiet\nsteps: [{tool: a}, {tool: b}]\n")
    status, out, _ = run(capsys, "matrix", str(tmp_path), "--policies", "default,spacebot,spacebot-channel,hermes")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["trace", "default", "spacebot", "spacebot-channel", "hermes"]
    cells = [c.strip() for c in lines[2].split("  ") if c.strip()]
    assert cells == [
        "seven",
        "step 2: warn loop_guard.consecutive_warning",  # default: 3rd identical call
        "step 3: block loop_guard.consecutive_warning",  # worker: warn at 4, skipped
        "step 1: block loop_guard.consecutive_warning",  # channel: warn at 2
        "—",  # hermes has no loop guard
    ]
    assert lines[3].split() == ["quiet", "—", "—", "—", "—"]


def test_matrix_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", clicks(5, "five"))
    status, out, _ = run(capsys, "matrix", str(tmp_path), "--policies", "default,qa-agent", "--json")
    (entry,) = json.loads(out)
    assert status == 0 and entry["trace"] == "five"
    assert entry["policies"]["default"] == {
        "outcome": "incomplete",
        "first_intervention": {"index": 2, "action": "warn", "reason": "loop_guard.consecutive_warning"},
    }
    # qa-agent: the 4th identical click is the 3rd repetition
    assert entry["policies"]["qa-agent"] == {
        "outcome": "stopped",
        "first_intervention": {"index": 3, "action": "stop", "reason": "failure_tracker.repetition"},
    }


def test_matrix_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", PASSING)
    status, _, err = run(capsys, "matrix", str(tmp_path), "--policies", "default,nope")
    assert status == 2 and "unknown preset 'nope'" in err
    bad = write(tmp_path, "b.yaml", BAD_STEP)
    status, out, err = run(capsys, "matrix", str(tmp_path), "--policies", "default")
    # the bad file is reported and the good one still gets its row
    assert status == 2 and "passing" in out and str(bad) in err and "bad-step" not in out


# ---- simulate (the scenarios themselves are the simulation work's) ---------------------------------------
def test_simulate_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "simulate", str(tmp_path / "absent.yaml"))
    assert status == 2 and "absent.yaml" in err
    recorded = write(tmp_path, "recorded.yaml", PASSING)
    status, _, err = run(capsys, "simulate", str(recorded))
    assert status == 2 and "not a scenario (a scenario has `mode: simulate`)" in err


BAD_SCENARIO = "loopguard: 1\nname: bad-scenario\nmode: simulate\npolicy: default\nagent: {behaviour: nosuch}\n"


@pytest.mark.parametrize("command", ["validate", "run", "replay", "simulate"])
def test_a_malformed_scenario_is_bad_input_for_every_command(command: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write(tmp_path, "s.yaml", BAD_SCENARIO)
    status, _, err = run(capsys, command, str(scenario))
    assert status == 2
    assert f"{scenario}: field 'agent.behaviour': unknown behaviour 'nosuch'" in err


SCENARIO = """
loopguard: 1
name: cli-scenario
mode: simulate
policy: default
context: {window_tokens: 6000}
max_turns: 6
env:
  files:
    src/a.py: {lines: 50, width: 32}
    src/b.py: {lines: 50, width: 32}
agent:
  behaviour: forgetful_reader
  files: [src/a.py, src/b.py]
"""


def test_simulate_writes_a_recorded_trace_that_replays_alike(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write(tmp_path, "scenario.yaml", SCENARIO)
    recorded = tmp_path / "out" / "recorded.jsonl"
    recorded.parent.mkdir()
    status, out, _ = run(capsys, "simulate", str(scenario), "-o", str(recorded), "--json")
    assert status == 0
    simulated = json.loads(out)
    # both files fit the window, so the reader reads each once and answers
    assert (simulated["trace"], simulated["outcome"]) == ("cli-scenario", "completed")
    assert load(recorded).source["kind"] == "simulated"
    status, out, _ = run(capsys, "replay", str(recorded), "--json")
    assert status == 0 and json.loads(out)["steps"] == simulated["steps"]


# ---- bench and usage ---------------------------------------------------------------------------------
def test_bench_session_feeds_the_same_traces_live_with_the_same_interventions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    policies = [resolve_policy("default"), resolve_policy("qa-agent")]
    replayed = run_bench(policies, events=400, seed=2)
    live = run_bench(policies, events=400, seed=2, session=True)
    assert [(r.policy, r.events, r.traces, r.interventions) for r in live] == [
        (r.policy, r.events, r.traces, r.interventions) for r in replayed]
    status, out, _ = run(capsys, "bench", "--session", "--events", "200", "--policy", "default")
    assert status == 0 and out.splitlines()[-1] == "200 events per preset fed live through a recording Session, seed 0"

def test_bench_traces_are_seeded_and_reach_the_event_count() -> None:
    first = synthetic_trace("a", random.Random(7), steps=120)
    again = synthetic_trace("a", random.Random(7), steps=120)
    other = synthetic_trace("a", random.Random(8), steps=120)
    assert trace_to_mapping(first) == trace_to_mapping(again)
    assert trace_to_mapping(first) != trace_to_mapping(other)
    kinds = {s.kind for s in first.steps}
    assert {"tool", "llm"} <= kinds and len(first.steps) >= 120
    assert any(s.result is not None and not s.result.ok for s in first.steps)  # failures are part of the mix
    (row,) = run_bench([resolve_policy("qa-agent")], events=500, seed=1)
    assert row.events >= 500 and row.policy == "qa-agent" and row.interventions > 0


def test_bench_trace_round_trips_through_the_trace_format(tmp_path: Path) -> None:
    trace = synthetic_trace("bench-rt", random.Random(3), steps=60)
    path = tmp_path / "bench.jsonl"
    from pytest_loopguard.io._format import dump

    dump(trace, path)
    assert trace_to_mapping(load(path)) == {**trace_to_mapping(trace)}


@pytest.mark.parametrize("argv", [[], ["bogus"], ["replay"], ["matrix", "traces"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, *argv)
    assert status == 2 and "usage: loopguard" in err


# ---- output and errors any terminal can take ------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
REREAD = ROOT / "traces" / "read_tracker" / "hermes_seed_001_reread_loop.yaml"


def _cli(*argv: str, encoding: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from pytest_loopguard.cli._main import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, encoding="utf-8", errors="strict", check=False)


@pytest.mark.parametrize("argv", [("replay", str(REREAD)), ("presets",), ("matrix", "traces", "--policies",
                                                                            "default,hermes")])
def test_an_ascii_terminal_gets_question_marks_not_a_crash(argv: tuple[str, ...]) -> None:
    done = _cli(*argv, encoding="ascii")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.isascii() and "?" in done.stdout  # `…` and `—` replaced, the rest intact


def test_json_on_an_ascii_terminal_is_escaped_and_exact() -> None:
    ascii_run, utf8_run = (_cli("presets", "--json", encoding=e) for e in ("ascii", "utf-8"))  # "—" in them
    assert ascii_run.stdout.isascii() and not utf8_run.stdout.isascii()
    assert json.loads(ascii_run.stdout) == json.loads(utf8_run.stdout)


@pytest.mark.parametrize("argv", [("bench", "--events", "-5"), ("bench", "--events", "0"),
                                  ("bench", "--events", "many"), ("run", "--nosuch"), ("nosuch",)])
def test_usage_errors_share_the_one_error_prefix(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.splitlines()[-1].startswith("loopguard: error: ")
    if argv[0] == "bench":
        assert err.splitlines()[-1] == f"loopguard: error: argument --events: expected an integer >= 1, got {argv[2]!r}"


def test_every_error_line_of_a_command_has_the_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "bad.yaml", BAD_STEP)
    for argv in (("run", str(bad)), ("validate", str(bad)), ("replay", str(bad)), ("matrix", str(bad),
                 "--policies", "default"), ("presets", "nosuch"), ("simulate", str(bad))):
        status, _, err = run(capsys, *argv)
        lines = err.splitlines()
        assert status == 2 and lines, argv
        assert all(ln.startswith("loopguard: ") for ln in lines), (argv, lines)
        assert lines[0].startswith("loopguard: error: "), (argv, lines)


def test_simulate_creates_the_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write(tmp_path, "scenario.yaml", SCENARIO)
    recorded = tmp_path / "new" / "dir" / "x.jsonl"
    status, out, _ = run(capsys, "simulate", str(scenario), "-o", str(recorded))
    assert status == 0 and f"recorded trace written to {recorded}" in out
    assert load(recorded).name == "cli-scenario"


def test_run_without_paths_replays_the_loopguard_paths_of_the_ini(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "pyproject.toml", '[tool.pytest.ini_options]\nloopguard_paths = ["agent/corpus"]\n')
    write(tmp_path, "agent/corpus/a.yaml", PASSING)
    write(tmp_path, "traces/failing.yaml", FAILING)  # the default folder: not the configured one
    monkeypatch.chdir(write(tmp_path, "agent/notes.txt", "").parent)
    status, out, err = run(capsys, "run", "--json")
    assert (status, err) == (0, "")
    assert [entry["trace"] for entry in json.loads(out)] == ["passing"]


def test_policy_accepts_an_inline_mapping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write(tmp_path, "a.yaml", PASSING)  # default: warn at 3, block at 5
    inline = "{preset: default, loop_guard: {block_at: 4}}"  # a block skips the call; the run goes on
    status, out, _ = run(capsys, "replay", str(trace), "--json", "--policy", inline)
    assert status == 0
    assert [s["action"] for s in json.loads(out)["steps"]] == ["allow", "allow", "warn", "block", "block"]
    status, _, err = run(capsys, "run", str(trace), "--policy", "{preset: default, dedup: maybe}")
    assert status == 2 and err.startswith("loopguard: error: policy field 'dedup'")


# ---- the format additions ------------------------------------------------------------------------------
def test_replay_and_validate_show_rejected_steps(capsys: pytest.CaptureFixture[str]) -> None:
    repo = Path(__file__).resolve().parents[2]
    path = str(repo / "traces" / "format" / "qa_agent_rejected_turns_are_failed_turns.yaml")
    assert run(capsys, "validate", path)[0] == 0
    out = run(capsys, "replay", path, "--json")[1]
    steps = json.loads(out)["steps"]
    assert [s["kind"] for s in steps[3:8]] == ["rejected"] * 5
    assert steps[5]["action"] == "warn" and steps[5]["tool"] is None
    assert "rejected: no tool call" in run(capsys, "replay", path, "--policy", "qa-agent")[1]
