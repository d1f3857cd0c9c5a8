"""Every labelled run of ../shared/corpus/real imports cleanly and meets labels.yaml's call-index convention.

Per run: tool steps + rejected steps == `calls`; the step at each loop's from/to (and `at`) index is the
call its source-native anchor names; the trace loads, validates and replays; failed results agree with
the error signals the raw file shows (counted here with independent regexes over the raw text).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.importers import import_runs, to_trace
from pytest_loopguard.io._format import dumps, loads
from pytest_loopguard.io._runner import execute

REAL = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "real"

LABELS = yaml.safe_load((REAL / "labels.yaml").read_text(encoding="utf-8"))["runs"]
FORMAT_OF = {  # labels.yaml's format names -> importer names
    "swe-agent": "swe-agent",
    "mini-swe-agent-1": "mini-swe-agent-1",
    "mini-swe-agent-1.1": "mini-swe-agent-1.1",
    "openhands-v0-events": "openhands-v0",
    "openhands-resolver": "openhands-v0",
    "who-and-when-magentic": "magentic-one",
}


def _id(run: dict[str, Any]) -> str:
    return f"{run['file']}#{run.get('row', 0)}"


def _import(run: dict[str, Any]) -> Any:
    runs = import_runs(REAL / run["file"])
    return runs[run.get("row", 0)]


def _calls(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in trace["steps"] if "tool" in s or "rejected" in s]


@pytest.mark.parametrize("run", LABELS, ids=_id)
def test_detected_format_and_call_count(run: dict[str, Any]) -> None:
    imported = _import(run)
    assert imported.trace["source"]["origin"] == str(REAL / run["file"])
    assert len(_calls(imported.trace)) == run["calls"]
    assert imported.counts["calls"] + imported.counts["rejected"] == run["calls"]
    kinds = {k for s in imported.trace["steps"] for k in ("tool", "rejected", "message", "llm", "done") if k in s}
    assert "tool" in kinds


@pytest.mark.parametrize("run", LABELS, ids=_id)
def test_detection_names_the_labelled_format(run: dict[str, Any]) -> None:
    from pytest_loopguard.importers import Source, available, detect

    assert detect(Source.from_path(REAL / run["file"]), available()).name == FORMAT_OF[run["format"]]


@pytest.mark.parametrize("run", [r for r in LABELS if r["loops"]], ids=_id)
def test_anchors_name_the_labelled_calls(run: dict[str, Any]) -> None:
    calls = _calls(_import(run).trace)
    for loop in run["loops"]:
        anchors = loop["anchors"]
        assert calls[loop["from"]]["source"]["index"] == anchors["from"], loop["note"]
        assert calls[loop["to"]]["source"]["index"] == anchors["to"], loop["note"]
        indices = {c["source"]["index"] for c in calls[loop["from"]: loop["to"] + 1]}
        assert set(anchors.get("at", ())) <= indices


@pytest.mark.parametrize("run", LABELS, ids=_id)
def test_loads_validates_and_replays(run: dict[str, Any], tmp_path: Any) -> None:
    imported = _import(run)
    trace = to_trace(imported)
    (again,) = loads(dumps(trace), path="again.yaml")
    assert len(again.steps) == len(trace.steps)
    out = tmp_path / f"{trace.name}.yaml"
    out.write_text(dumps(trace), encoding="utf-8")
    assert cli.main(["validate", str(out)]) == 0
    result = execute(trace)
    assert len(result.steps) >= 1
    assert not imported.warnings, imported.warnings


# ---- failed results vs the raw file's error signals --------------------------------------------------
def _raw_failures(run: dict[str, Any]) -> set[Any]:
    """The source-native indices of the calls whose raw result signals an error, found with regexes that
    know nothing of the importers (labels.yaml's anchor keys: msg, traj, id, history)."""
    text = (REAL / run["file"]).read_text(encoding="utf-8")
    if run["format"].startswith("mini-swe-agent"):
        msgs = json.loads(text)["messages"]
        failing = re.compile(r"<returncode>(?!0<)-?\d+</returncode>|The last command .* timed out")
        caller = {c["id"]: i for i, m in enumerate(msgs) for c in (m.get("tool_calls") or [])}
        return {caller[m["tool_call_id"]] if m["role"] == "tool" else i - 1
                for i, m in enumerate(msgs) if m["role"] in ("user", "tool") and failing.match(m["content"])}
    if run["format"] == "swe-agent":
        traj = json.loads(text)["trajectory"]
        return {i for i, s in enumerate(traj)
                if s["observation"].startswith("Your proposed edit has introduced new syntax error(s)")}
    if run["format"].startswith("openhands"):
        history = json.loads(text.splitlines()[run["row"]])["history"] if "row" in run else json.loads(text)
        found = set()
        for pos, e in enumerate(history):
            if "observation" not in e or ("id" in e and e.get("cause") is None):
                continue  # not the answer to a call
            code = ((e.get("extras") or {}).get("metadata") or {}).get("exit_code", e.get("exit_code"))
            if code not in (None, 0) or re.match(r"ERROR:|\[Your proposed edit|\[No exact match", e["content"]):
                found.add(e["cause"] if "id" in e else pos - 1)
        return found
    if run["format"] == "who-and-when-magentic":
        history = json.loads(text)["history"]
        return {i for i, h in enumerate(history)
                if re.match(r"The script ran, then exited with Unix exit code: -?[1-9]", h["content"])}
    raise AssertionError(f"no raw-signal reader for {run['format']}")


def _failed(step: dict[str, Any]) -> bool:
    """The trace format's rule: an error, ok: false, or a non-zero exit code without ok/error."""
    r = step.get("result") or {}
    return "error" in r or r.get("ok") is False or ("ok" not in r and r.get("exit_code", 0) != 0)


@pytest.mark.parametrize("run", LABELS, ids=_id)
def test_failed_results_match_the_source(run: dict[str, Any]) -> None:
    imported = _import(run)
    failing = {s["source"]["index"] for s in imported.trace["steps"] if "tool" in s and _failed(s)}
    assert failing == _raw_failures(run)
    assert imported.counts["failed"] == len(failing)


# calls labels.yaml's and SOURCES.md's notes name as failing, with the error they quote
NOTED_FAILURES = [
    ("swe-agent/pydicom__pydicom-1458.traj", 0, [5, 6, 7], "Your proposed edit has introduced new syntax error(s)"),
    ("openhands/multi_swe_bench_examples/output.jsonl", 1, [18, 20, 21, 28], "Parameter `old_str` is required"),
    ("openhands/multi_swe_bench_examples/output.jsonl", 1, [27, 30, 31], "No replacement was performed"),
    ("openhands/multi_swe_bench_examples/output.jsonl", 2, [14, 18, 21, 24], "Multiple occurrences"),
    ("openhands/resolver_mock_output/output.jsonl", 1, list(range(4, 12)), "syntax error(s)"),
    ("openhands/resolver_mock_output/output.jsonl", 1, [15, 16], "No exact match found"),
]


@pytest.mark.parametrize(("file", "row", "ks", "error"), NOTED_FAILURES)
def test_noted_failures_carry_the_quoted_error(file: str, row: int, ks: list[int], error: str) -> None:
    calls = _calls(import_runs(REAL / file)[row].trace)
    for k in ks:
        assert error in calls[k]["result"]["error"], (k, calls[k]["result"])


@pytest.mark.parametrize(("file", "row", "k"), [
    ("swe-agent/pydicom__pydicom-1458.traj", 0, 8),           # "`edit 287:296` at 8 succeeds"
    ("openhands/resolver_mock_output/output.jsonl", 1, 17),   # "the edit at 17 succeeds"
])
def test_noted_recoveries_are_successes(file: str, row: int, k: int) -> None:
    result = _calls(import_runs(REAL / file)[row].trace)[k]["result"]
    assert "error" not in result and result.get("exit_code", 0) == 0


def test_the_blocking_server_is_the_one_failed_call_of_the_healthy_gui_run() -> None:
    (run,) = import_runs(REAL / "openhands" / "runtime_trajs" / "basic_gui_mode.json")
    results = [c["result"] for c in _calls(run.trace)]
    assert [r.get("exit_code") for r in results] == [0, None, None, -1]  # SOURCES.md: only the server's -1
