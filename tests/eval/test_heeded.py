"""Was a warning heeded: the `heeded_within: K` step expectation (full and streamed replay, the trace format) and
`loopguard eval --heeded K` on simulated runs (the fake LLM scripted to heed or to ignore) and replayed ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_loopguard import TraceError, replay
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core._expect import check
from pytest_loopguard.io._dump import expect_to_value
from pytest_loopguard.io._format import trace_from_mapping
from pytest_loopguard.io._stream import replay_jsonl

REPO = Path(__file__).resolve().parents[2]
HEED = REPO / "traces" / "scenarios" / "heed-warning-retrier-default.yaml"
IGNORE = REPO / "traces" / "scenarios" / "ignore-warning-retrier-default.yaml"
BUILD = {"tool": "bash", "args": {"command": "make"}, "result": {"text": "error: x"}}
OTHER = {"tool": "bash", "args": {"command": "git diff"}, "result": {"text": "diff"}}
WARNED = {"action": "warn", "reason": "loop_guard.consecutive_warning"}


def trace(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"loopguard": 1, "name": "heeded", "policy": "default", "steps": steps}


def third_warned(then: list[dict[str, Any]], within: int = 2) -> dict[str, Any]:
    """make ×3 (the 3rd warned, with `heeded_within`), then `then`."""
    return trace([BUILD, BUILD, {**BUILD, "expect": {**WARNED, "heeded_within": within}}, *then])


def mismatches(raw: dict[str, Any], tmp_path: Path) -> tuple[list[str], list[str]]:
    """(full replay, streamed replay of the same trace as JSONL): each mismatch as text."""
    full = [str(m) for m in check(replay(trace_from_mapping(raw)))]
    path = tmp_path / "t.jsonl"
    header = {k: v for k, v in raw.items() if k != "steps"}
    path.write_text("\n".join(json.dumps(x) for x in [header, *raw["steps"]]) + "\n")
    streamed = replay_jsonl(path)
    assert streamed is not None
    return full, [str(m) for m in streamed.mismatches]


def test_heeded_when_no_later_call_repeats_the_warned_one(tmp_path: Path) -> None:
    assert mismatches(third_warned([OTHER, OTHER]), tmp_path) == ([], [])
    # past the window a repeat does not count
    assert mismatches(third_warned([OTHER, OTHER, BUILD]), tmp_path)[0] == []


def test_not_heeded_when_a_call_within_k_repeats_it(tmp_path: Path) -> None:
    full, streamed = mismatches(third_warned([OTHER, BUILD]), tmp_path)
    assert full == streamed == ["step 2: heeded_within: expected 2, got 'repeated at step 4' "
                                "(the agent made the same call again)"]


def test_heeded_within_needs_a_warning_or_block(tmp_path: Path) -> None:
    raw = trace([{**OTHER, "expect": {"action": "allow", "heeded_within": 1}}, BUILD])
    full, streamed = mismatches(raw, tmp_path)
    assert full == streamed == [
        "step 0: heeded_within: expected 1, got 'allow' (no warning or block on a call to heed)"]


def test_format_reads_and_writes_it() -> None:
    loaded = trace_from_mapping(third_warned([OTHER]))
    expect = loaded.steps[2].expect
    assert expect is not None and expect.heeded_within == 2
    assert expect_to_value(expect)["heeded_within"] == 2
    with pytest.raises(TraceError, match=r"step 2.*expect\.heeded_within.*expected an integer ≥ 1"):
        trace_from_mapping(third_warned([OTHER], within=0))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err


def test_eval_heeded_on_simulated_runs(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "eval", str(HEED), str(IGNORE), "--heeded", "2", "--json")
    assert status == 0 and err == ""
    rows = {(r["reason"], r["source"]): (r["given"], r["heeded"]) for r in json.loads(out)["policies"]["default"]}
    # the heeding retrier changes course after the warning on its 3rd click; the other repeats the click after
    # the warnings on its 3rd and 4th and after the blocks on its 5th to 7th (the 8th is stopped)
    assert rows[("loop_guard.consecutive_warning", "simulated")] == (3, 1)
    assert rows[("loop_guard.consecutive_block", "simulated")] == (3, 0)


def test_eval_heeded_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recorded = {**third_warned([OTHER, OTHER]), "source": {"kind": "recorded"}}
    (tmp_path / "live.yaml").write_text(yaml.safe_dump({**recorded, "name": "live"}))
    (tmp_path / "log.yaml").write_text(yaml.safe_dump({**trace([BUILD] * 4), "name": "log"}))
    status, out, _ = run(capsys, "eval", str(tmp_path), "--heeded", "2")
    assert status == 0
    lines = [line.split() for line in out.splitlines()[3:]]
    assert ["loop_guard.consecutive_warning", "live", "1", "1", "100%"] in lines
    assert ["loop_guard.consecutive_warning", "replayed", "1", "0", "0%"] in lines  # the 3rd, repeated by the 4th


def test_eval_heeded_refuses_zero(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "eval", str(HEED), "--heeded", "0")
    assert status == 2 and err.count("\n") == 1 and "--heeded" in err
