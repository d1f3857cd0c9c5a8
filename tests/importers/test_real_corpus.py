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

from pytest_loopguard import cli
from pytest_loopguard.importers import import_runs, to_trace
from pytest_loopguard.replay import execute
from pytest_loopguard.traceio import dumps, loads

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
def _raw_failures(run: dict[str, Any]) -> int:
    """Count the raw file's error signals with regexes that know nothing of the importers."""
    text = (REAL / run["file"]).read_text(encoding="utf-8")
    if run["format"].startswith("mini-swe-agent"):
        doc = json.loads(text)
        replies = [m["content"] for m in doc["messages"] if m["role"] in ("user", "tool")]
        nonzero = re.compile(r"<returncode>(?!0<)-?\d+</returncode>")
        timeout = re.compile(r"The last command .* timed out")
        return sum(1 for c in replies if nonzero.match(c) or timeout.match(c))
    if run["format"] == "swe-agent":
        doc = json.loads(text)
        return sum(1 for s in doc["trajectory"]
                   if s["observation"].startswith("Your proposed edit has introduced new syntax error(s)"))
    if run["format"].startswith("openhands"):
        doc = json.loads(text.splitlines()[run["row"]]) if "row" in run else {"history": json.loads(text)}
        count = 0
        for e in doc["history"]:
            if "observation" not in e or e.get("observation") in ("null", "recall", "agent_state_changed"):
                continue
            if "id" in e and e.get("cause") is None:
                continue  # not an answer to a call
            extras = e.get("extras") or {}
            code = (extras.get("metadata") or {}).get("exit_code", e.get("exit_code"))
            content = e.get("content") or ""
            if code not in (None, 0) or re.match(r"ERROR:|\[Your proposed edit|\[No exact match", content):
                count += 1
        return count
    if run["format"] == "who-and-when-magentic":
        doc = json.loads(text)
        return sum(1 for h in doc["history"]
                   if re.match(r"The script ran, then exited with Unix exit code: -?[1-9]", h["content"]))
    raise AssertionError(f"no raw-signal counter for {run['format']}")


@pytest.mark.parametrize("run", LABELS, ids=_id)
def test_failed_results_match_the_source(run: dict[str, Any]) -> None:
    imported = _import(run)
    assert imported.counts["failed"] == _raw_failures(run)
