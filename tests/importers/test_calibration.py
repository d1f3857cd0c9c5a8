"""The 239 calibration runs (mini-swe-agent-1, read from the tarball in memory) import cleanly, counted
independently of the importer, and reproduce the streak figures the corpus's README measured.

Slow (it reads the whole tarball): deselected by default, run with `python -m pytest -m slow`.
"""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.importers import ImportedRun, Source, import_runs, to_trace
from pytest_loopguard.io._runner import execute

pytestmark = pytest.mark.slow

TARBALL = (Path(__file__).resolve().parents[3] / "shared" / "corpus" / "calibration"
           / "mini-swe-agent-gemini-3-pro-swebench.tar.gz")
REJECTED = re.compile(r"Please always provide EXACTLY ONE action in triple backticks, found \d+ actions")
FAILING = re.compile(r"<returncode>(?!0<)-?\d+</returncode>|The last command .* timed out")


@pytest.fixture(scope="module")
def runs() -> list[tuple[str, bool, list[dict[str, Any]], ImportedRun]]:
    """(instance id, resolved, the raw messages, the imported run) for every run in the tarball."""
    out = []
    with tarfile.open(TARBALL) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    resolved = json.loads(members.pop("resolved.json"))
    for name, data in sorted(members.items()):
        (run,) = import_runs(Source.from_bytes(f"{TARBALL.name}:{name}", data))
        out.append((name.removesuffix(".traj.json"), resolved[name.removesuffix(".traj.json")],
                    json.loads(data)["messages"], run))
    return out


def _kind(step: dict[str, Any]) -> str:
    return next(k for k in ("tool", "rejected", "done", "llm", "message") if k in step)


def test_all_239_runs_import_with_no_warning_and_nothing_unmapped(runs: list[Any]) -> None:
    assert len(runs) == 239 and sum(ok for _, ok, _, _ in runs) == 175  # README: 175 resolved, 64 not
    for iid, _, _, run in runs:
        assert (run.run_id, run.warnings, run.unmapped) == (iid, [], []), iid


def test_every_model_turn_is_one_call_one_rejected_turn_or_the_submission(runs: list[Any]) -> None:
    """Counted on the raw messages: assistant messages, the harness's rejections, the failing replies."""
    for iid, _, messages, run in runs:
        steps = run.trace["steps"]
        kinds = [_kind(s) for s in steps]
        turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        assert kinds.count("tool") + kinds.count("rejected") + kinds.count("done") == len(turns), iid
        assert kinds.count("done") <= 1, iid
        rejections = sum(1 for m in messages if m["role"] == "user" and REJECTED.match(m["content"]))
        assert kinds.count("rejected") == rejections == run.counts["rejected"], iid
        failing = {i - 1 for i, m in enumerate(messages) if m["role"] == "user" and FAILING.match(m["content"])}
        failed = {s["source"]["index"] for s in steps if "tool" in s and
                  ("error" in s["result"] or s["result"].get("exit_code", 0) != 0)}
        assert failed == failing, iid
        # every call and rejected turn points at its assistant message (labels.yaml's `msg` anchors)
        assert {s["source"]["index"] for s in steps if _kind(s) in ("tool", "rejected")} <= set(turns), iid


def test_every_run_loads_and_replays_with_a_verdict_for_each_step(runs: list[Any]) -> None:
    for iid, _, _, run in runs:
        trace = to_trace(run)
        result = execute(trace)
        assert len(result.steps) == len(trace.steps), iid
        assert (result.outcome == "stopped") == (result.stopped_at is not None), iid


def _longest(flags: list[bool]) -> int:
    best = streak = 0
    for flag in flags:
        streak = streak + 1 if flag else 0
        best = max(best, streak)
    return best


def test_the_readmes_streaks_in_resolved_runs(runs: list[Any]) -> None:
    """README: the longest streak of failed turns in a resolved run is 9, and of rejected turns 9 (a rejected
    turn is a failed turn, as the failure tracker counts it)."""
    failed_turns, rejected_turns = [], []
    for _, resolved, _, run in runs:
        if not resolved:
            continue
        turns = [s for s in run.trace["steps"] if _kind(s) in ("tool", "rejected")]
        rejected_turns.append(_longest(["rejected" in s for s in turns]))
        failed_turns.append(_longest(["rejected" in s or "error" in s["result"] or
                                      s["result"].get("exit_code", 0) != 0 for s in turns]))
    assert (max(failed_turns), max(rejected_turns)) == (9, 9)
