"""The reference guards in examples/guards over a real pipe: the Node port of Roo's rule conforms to the `roo` preset on
every bundled trace (and a wrong port fails at the first step it differs); the Python guard that wraps our Guard meets
every trace's expectations; and the Node agent loop, guarded live by `loopguard serve`, is told what its recording
replays to."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from pytest_loopguard import replay
from pytest_loopguard.io import load_file

REPO = Path(__file__).resolve().parents[2]
GUARDS = REPO / "examples" / "guards"
LOOPGUARD = [sys.executable, "-m", "pytest_loopguard.cli"]
NODE = shutil.which("node") or "node"  # .ci/run installs Node where it is missing: without it these fail, loudly


def conform(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOOPGUARD, "conform", *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_the_node_port_of_roos_rule_conforms_to_the_roo_preset_on_every_bundled_trace() -> None:
    # --messages: the message the agent is shown (Roo's own text) is compared on every step too
    done = conform(f"{NODE} {GUARDS / 'roo_guard.js'}", "traces", "--against", "roo", "--messages")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    agree = int(re.search(r"(\d+) agree", summary).group(1))  # type: ignore[union-attr]
    assert agree >= 150 and " 0 differ, 0 error(s)" in summary, summary


def test_a_wrong_port_fails_with_the_first_differing_step_named() -> None:
    wrong = f"{NODE} {GUARDS / 'roo_guard.js'} --mistake-limit 2"  # refuses the 3rd identical call, not the 4th
    done = conform(wrong, "traces/loop_guard", "--against", "roo")
    assert done.returncode == 1
    line = next(x for x in done.stdout.splitlines() if "roo_block_then_forget" in x)
    assert line.startswith("DIFF") and 'step 2 (read_file {"path":"src/app.ts"}): expected allow, got block' in line
    assert re.search(r"\d+ agree, [1-9]\d* differ", done.stdout.splitlines()[-1])


def test_the_python_guard_wrapping_our_guard_meets_every_traces_expectations() -> None:
    done = conform(f"{sys.executable} {GUARDS / 'python_guard.py'}", "traces/loop_guard", "traces/context",
                   "--reasons", "--messages")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert " 0 differ, 0 error(s)" in done.stdout


def test_the_node_agent_loop_is_guarded_live_and_told_what_its_recording_replays_to(tmp_path: Path) -> None:
    record = tmp_path / "agent.jsonl"
    done = subprocess.run([NODE, str(GUARDS / "agent_loop.js"), "--", *LOOPGUARD, "serve", "--policy", "default",
                           "--record", str(record)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    told = re.findall(r"^turn (\d+): shell .* -> (ran|not run)(?: \[(.*)\])?$", done.stdout, re.M)
    assert told and done.stdout.strip().splitlines()[-1].startswith("stopped:")
    result = replay(load_file(record)[0], "default")
    tool_steps = [s for s in result.steps if s.kind == "tool"]
    assert len(tool_steps) == len(told)
    for (turn, ran, shown), step in zip(told, tool_steps, strict=True):
        replayed = "; ".join(f"{v.action} {v.reason}" for v in step.verdicts if v.action != "allow")
        assert replayed == shown, f"turn {turn}"
        assert (ran == "ran") == (step.action in ("allow", "warn"))
    assert {s.action for s in tool_steps} >= {"allow", "warn", "block", "stop"}
    assert result.outcome == "stopped"
