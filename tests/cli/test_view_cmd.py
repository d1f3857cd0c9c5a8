"""`loopguard view`: the page's data for every bundled trace against `loopguard replay --json`, the engine state it
shows against the verdicts' own counts, loops, policies side by side, text that tries to end the data block, and
bad input. The page driven in a real browser is tests/cli/test_view_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from files import write
from viewpage import HOSTILE, hostile_trace, page_data

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.io._format import load_file

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"
FOLDERS = sorted(p.name for p in TRACES.iterdir() if p.is_dir())


def view(capsys: pytest.CaptureFixture[str], page: Path, *args: str) -> dict[str, Any]:
    assert cli.main(["view", *args, "-o", str(page)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return page_data(page.read_text(encoding="utf-8"))


def replay_json(capsys: pytest.CaptureFixture[str], spec: str, *policy: str) -> dict[str, Any]:
    assert cli.main(["replay", spec, "--json", *policy]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def agrees(run: dict[str, Any], shown: dict[str, Any], replayed: dict[str, Any]) -> None:
    """One policy of a page's run says what `replay --json` says: every step, verdict, reason and message."""
    for key in ("policy", "outcome", "stopped_at", "stopped_by"):
        assert shown[key] == replayed[key], key
    assert len(run["steps"]) == len(shown["actions"]) == len(replayed["steps"])
    for step, action, got in zip(run["steps"], shown["actions"], replayed["steps"], strict=True):
        assert (step["index"], step["kind"], step.get("tool"), action) == (
            got["index"], got["kind"], got["tool"], got["action"])
        assert shown["verdicts"].get(str(got["index"]), []) == got["verdicts"]
        if "not_run" in got:
            assert step["not_run"] == got["not_run"]
        if "compacted" in got:
            assert {k: v for k, v in got["compacted"].items() if k != "text"} == step["compacted"]


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_bundled_trace_agrees_with_replay_json(folder: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    runs = view(capsys, tmp_path / "v.html", str(TRACES / folder))["runs"]
    by_key = {(r["file"], r["name"]): r for r in runs}
    checked = verdicts = 0
    for path in sorted((TRACES / folder).rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json", ".jsonl"):
            continue
        for trace in load_file(path):
            replayed = replay_json(capsys, f"{path}::{trace.name}")
            (shown,) = by_key[(str(path), replayed["trace"])]["policies"]
            agrees(by_key[(str(path), replayed["trace"])], shown, replayed)
            checked += 1
            verdicts += sum(len(s["verdicts"]) for s in replayed["steps"])
    assert checked == len(runs) and checked > 0
    assert verdicts > 0


def test_two_policies_side_by_side_mark_the_steps_that_differ(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = TRACES / "loop_guard" / "worker_identical_call_seven.yaml"
    (run,) = view(capsys, tmp_path / "v.html", str(path), "--policy", "default", "--policy", "spacebot")["runs"]
    before, after = (replay_json(capsys, str(path), "--policy", p) for p in ("default", "spacebot"))
    agrees(run, run["policies"][0], before)
    agrees(run, run["policies"][1], after)
    differ = [s["index"] for s, a in zip(before["steps"], after["steps"], strict=True) if s["action"] != a["action"]]
    assert run["differs"] == differ and differ


def states(runs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(verdict data, the engine's state shown on the same step) for every verdict of an engine that has state."""
    out = []
    for run in runs:
        for policy in run["policies"]:
            for index, verdicts in policy["verdicts"].items():
                for v in verdicts:
                    state = policy["state"].get(index, {}).get(v["engine"])
                    if state is not None:
                        out.append((v, state))
    return out


def test_the_engine_state_shown_is_the_count_the_verdict_names(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    runs = view(capsys, tmp_path / "v.html", str(TRACES / "loop_guard"), str(TRACES / "read_tracker"))["runs"]
    consecutive = file_reads = 0
    for v, state in states(runs):
        if v["reason"] == "loop_guard.consecutive_warning":
            assert state["consecutive"] == v["data"]["count"], v
            consecutive += 1
        elif v["reason"] == "loop_guard.consecutive_block":  # Roo's detector forgets the call once it blocks it
            assert state["consecutive"] in (v["data"]["count"], 0), v
        elif v["reason"] in ("read_tracker.file_reads", "read_tracker.file_reads_block"):
            assert state["file_reads"][v["data"]["path"]] == v["data"]["count"], v
            file_reads += 1
        elif v["reason"] == "read_tracker.repeat_warning":
            assert state["read_streak"] == v["data"]["count"]
    assert consecutive > 5 and file_reads > 2
    # a step without a verdict shows the state too: the count of a repeated call before it warns
    (run,) = [r for r in runs if r["name"] == "loop_guard-default-consecutive-stop"]
    (policy,) = run["policies"]
    assert policy["verdicts"].get("1") is None
    assert policy["state"]["1"]["loop_guard"] == {"identity": 'browser_click {"index":7}', "consecutive": 2,
                                                  "warnings": 0}


def test_loops_are_spans_with_their_calls_and_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = TRACES / "loop_guard" / "default_consecutive_stop.yaml"
    (run,) = view(capsys, tmp_path / "v.html", str(path))["runs"]
    replayed = replay_json(capsys, str(path))
    flagged = [s["index"] for s in replayed["steps"] if s["action"] in ("warn", "block", "stop")]
    (loop,) = run["policies"][0]["loops"]
    assert (loop["first"], loop["last"], loop["calls"], loop["stopped"]) == (
        flagged[0], replayed["stopped_at"], replayed["stopped_at"] - flagged[0] + 1, True)
    assert loop["reasons"][-1] == "loop_guard.consecutive_stop" and loop["tokens"] == 0
    # tokens: the model turns that made the loop's calls
    path = TRACES / "read_tracker" / "hermes_seed_001_reread_loop.yaml"
    (run,) = view(capsys, tmp_path / "g.html", str(path))["runs"]
    loops = run["policies"][0]["loops"]
    assert loops and any(lp["tokens"] > 0 for lp in loops)
    for lp in loops:
        first_call = max((s["index"] for s in run["steps"][: lp["first"]] if s["kind"] in ("tool", "rejected")),
                         default=-1)
        assert lp["tokens"] == sum(s.get("tokens", 0) for s in run["steps"][first_call + 1: lp["last"] + 1])


def test_text_that_ends_a_script_block_stays_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = hostile_trace(tmp_path)
    page = tmp_path / "v.html"
    (run,) = view(capsys, page, str(path))["runs"]
    assert run["steps"][0]["result"] == HOSTILE and HOSTILE in run["steps"][0]["args"]
    assert run["steps"][1]["text"] == HOSTILE
    text = page.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="lg-data">(.*?)</script>', text, re.S)
    assert block is not None and not re.search(r"[<>&\u2028\u2029]", block.group(1))
    assert text.lower().count("</script") == 2  # the data block's end and the script's: nothing from the run
    # the report form too
    assert cli.main(["run", str(path), "--report", str(tmp_path / "r.html")]) == 0
    report = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page_data(report)["runs"][0]["steps"][0]["label"].startswith("read_file")
    assert report.lower().count("</script") == 2


def test_bad_input_is_one_line_and_the_good_runs_are_still_written(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    good = TRACES / "loop_guard" / "default_consecutive_stop.yaml"
    bad = write(tmp_path, "bad.yaml", "loopguard: 1\nname: bad\nsteps:\n  - tool: 3\n")
    page = tmp_path / "v.html"
    assert cli.main(["view", str(good), str(bad), "-o", str(page)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and str(bad) in captured.err
    assert "1 run under 1 policy written to" in captured.out
    assert [r["name"] for r in page_data(page.read_text(encoding="utf-8"))["runs"]] == [
        "loop_guard-default-consecutive-stop"]
    assert cli.main(["view", str(good), "--policy", "no-such-preset", "-o", str(page)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown preset 'no-such-preset'" in err


def test_a_trace_of_a_file_with_several_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two = write(tmp_path, "two.yaml", "loopguard: 1\nname: a\nsteps: [{tool: t}]\n---\n"
                "loopguard: 1\nname: b\nsteps: [{tool: u}, {tool: u}]\n")
    (run,) = view(capsys, tmp_path / "v.html", f"{two}::b")["runs"]
    assert run["name"] == "b" and len(run["steps"]) == 2
    assert cli.main(["view", f"{two}::c", "-o", str(tmp_path / "w.html")]) == 2
    assert "no trace named 'c'" in capsys.readouterr().err


# reason -> (the state's key, the verdict data's key): the same count, one read from the engine after the step
COUNTS = {
    "failure_tracker.same_tool_failure": ("tool_failures", "count"),
    "failure_tracker.exact_failure": ("exact_failures", "count"),
    "failure_tracker.failed_turns": ("failed_turns", "count"),
    "failure_tracker.repetition": ("repetitions", "repetitions"),
    "failure_tracker.rejected_streak": ("rejected_streak", "count"),
    "failure_tracker.action_loop": ("top_count", "count"),
    "failure_tracker.failing_key": ("key_streak", "in_a_row"),
    "budget.consecutive_same_tool": ("same_tool_count", "count"),
    "budget.failure_streak": ("failure_streak", "count"),
    "budget.observation_streak": ("observation_streak", "count"),
    "budget.max_tool_calls": ("calls", "count"),
}


def test_failure_tracker_and_budget_state_is_their_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = view(capsys, tmp_path / "v.html", str(TRACES / "failure_tracker"), str(TRACES / "budget"))["runs"]
    seen = set()
    for v, state in states(runs):
        if v["reason"] in COUNTS:
            mine, theirs = COUNTS[v["reason"]]
            assert state[mine] == v["data"][theirs], v
            seen.add(v["reason"])
    assert seen == set(COUNTS)
