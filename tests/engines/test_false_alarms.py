"""The false-alarm suite (traces/false_alarms/, issue 23): under `default` (the policy each trace names) no
verdict on a legitimate case, a warning first on every loop case; each trace names the thread it comes from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_loopguard import load_file, replay

SUITE = Path(__file__).resolve().parents[2] / "traces" / "false_alarms"
CASES = sorted(SUITE.glob("*.yaml"))


def test_the_suite_has_every_case_of_the_issue() -> None:
    names = {p.stem for p in CASES}
    for thread in ("762", "5355", "9502", "5873", "9276", "81", "10358", "16808", "27759"):
        assert any(f"_{thread}_" in n for n in names), thread
    assert "unchanged_output_across_edits" in names


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_default_is_quiet_on_legitimate_work_and_warns_first_on_loops(path: Path) -> None:
    trace = load_file(path)[0]
    assert re.search(r"[\w-]+/[\w.-]+#\d+|issue \d+", str(trace.source.get("origin"))), "names its thread"
    result = replay(trace)
    acted = [str(s.action) for s in result.steps if str(s.action) not in ("allow", "not_reached")]
    if "loop" in trace.tags:
        assert acted and acted[0] == "warn", acted
    else:
        assert acted == []
