"""`loopguard matrix` over every preset: one run, judged as each system would (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.io._format import load
from pytest_loopguard.runtime._policy import preset_names
from pytest_loopguard.runtime._replay import replay

TRACE = Path(__file__).resolve().parents[2] / "traces" / "stuck_detector" / "side_by_side_failing_tests.yaml"

# The same test command failing (an error: it could not start) six times, steps 0-5. Each row follows
# from PRESETS.md's section of the preset, not from a replay:
FIRST = {
    "openhands": (2, "stop", "stuck_detector.repeating_action_error"),  # three identical errors
    "openhands-sdk": (2, "warn", "stuck_detector.action_error_nudge"),  # the nudge at action_error 3
    "gemini-cli": (4, "block", "stuck_detector.tool_loop"),  # the 5th identical call
    "gemini-cli-2026-06": (4, "block", "stuck_detector.tool_loop"),  # the same for k = 1
    "roo": (3, "block", "loop_guard.consecutive_block"),  # consecutiveMistakeLimit 3 + 1
    "goose": (2, "block", "loop_guard.consecutive_block"),  # max_repetitions 2 + 1
    "spacebot": (3, "block", "loop_guard.consecutive_warning"),  # worker: warn 4, a warning skips the call
    "spacebot-worker": (3, "block", "loop_guard.consecutive_warning"),
    "spacebot-branch": (2, "block", "loop_guard.consecutive_warning"),  # warn 3
    "spacebot-channel": (1, "block", "loop_guard.consecutive_warning"),  # warn 2
    "default": (2, "warn", "loop_guard.consecutive_warning"),  # warn 3, the call runs
    "hermes-current": (1, "warn", "failure_tracker.exact_failure"),  # exact signature failing twice
    "qa-agent": (2, "warn", "failure_tracker.force_done"),  # 3 failed single-call turns
    "browser-use": (4, "warn", "failure_tracker.force_done"),  # 5 failed turns
    # issue 24's requeries and usage limits: a failing command is an observation to mini-swe-agent and SWE-agent
    # (no format error, blocklisted command or timeout here); Pydantic AI's tool fails in a 2nd turn since it
    # last succeeded (retries 1); six calls are under LangChain's run limit of 10
    "mini-swe-agent": None,
    "swe-agent": None,
    "pydantic-ai": (1, "stop", "failure_tracker.tool_retries"),
    "langchain-tool-call-limit": None,
    "hermes": None,  # reads and searches only
    "claw-code": None,  # LLM errors only
    "openchrome": None,  # no task envelope, no verdicts
}
# where the runs that end do end, and by which engine: the stuck detectors by their own rules, the
# failure trackers at the first call after the forced finish (the others never stop on this run)
STOPS = {
    "openhands": (2, "stuck_detector"), "openhands-sdk": (3, "stuck_detector"), "gemini-cli": (5, "stuck_detector"),
    "gemini-cli-2026-06": (5, "stuck_detector"), "qa-agent": (3, "failure_tracker"),
    "browser-use": (5, "failure_tracker"),
}  # default warns but never stops here: its forced finish comes at 12 failed turns (docs/presets.md)
STOPS["pydantic-ai"] = (1, "failure_tracker")  # Pydantic AI: the tool's 2nd failed turn exceeds its 1 retry


def test_every_preset_judges_the_same_run_its_own_way(capsys: pytest.CaptureFixture[str]) -> None:
    names = preset_names()
    assert set(names) == set(FIRST)
    status = cli.main(["matrix", str(TRACE), "--policies", ",".join(names), "--json"])
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    [row] = json.loads(out)
    for name in names:
        got = row["policies"][name]
        first = got["first_intervention"]
        assert (None if first is None else (first["index"], first["action"], first["reason"])) == FIRST[name], name
        assert got["outcome"] == ("stopped" if name in STOPS else "incomplete"), name
    # the five new systems: no two step in at the same place in the same way
    new = [FIRST[n] for n in ("openhands", "openhands-sdk", "gemini-cli", "roo", "goose")]
    assert len({f[:2] for f in new if f}) == 5


def test_the_new_presets_stop_where_their_rules_say() -> None:
    trace = load(TRACE)
    for name, (index, engine) in STOPS.items():
        result = replay(trace, name)
        assert (result.outcome, result.stopped_at, result.stopped_by) == ("stopped", index, engine), name
    roo = replay(trace, "roo")
    assert [s.action for s in roo.steps] == ["allow"] * 3 + ["block"] + ["allow"] * 2  # Roo forgets after a block
    goose = replay(trace, "goose")
    assert [s.action for s in goose.steps] == ["allow"] * 2 + ["block"] * 4  # a denied call still counts
