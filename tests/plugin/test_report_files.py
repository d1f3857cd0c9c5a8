"""Report files by extension: the HTML page's structure (stdlib XML parser) and its step viewer's data against the
verdicts, the Markdown form, and a matrix run showing its policies side by side."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from viewpage import marks, page_data

from pytest_loopguard.core._expect import check
from pytest_loopguard.io._format import load_file
from pytest_loopguard.io._runner import execute
from pytest_loopguard.report._document import report_document, report_entry
from pytest_loopguard.report._markdown import strip
from pytest_loopguard.report._write import report_format, write_report
from pytest_loopguard.runtime._replay import policy_for

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
# Real traces of several engines, one of them a stop (not_reached steps after it).
BUNDLED = [
    "traces/loop_guard/worker_identical_call_seven.yaml",
    "traces/failure_tracker/qa_agent_repetition_stop.yaml",
    "traces/context/spacebot_overflow_exhausted.yaml",
    "traces/read_tracker/hermes_seed_001_reread_loop.yaml",
]


def entries_for(paths: list[str], policy: Any = None) -> list[dict[str, Any]]:
    out = []
    for path in paths:
        for trace in load_file(ROOT / path):
            result = execute(trace, policy)
            entry = report_entry(result, check(result), policy_for(trace, policy)[0].engines)
            entry["file"] = path
            out.append(entry)
    return out


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.refs += [v or "" for k, v in attrs if k in ("src", "href")]


def test_html_marks_match_the_verdicts(tmp_path: Path) -> None:
    entries = entries_for(BUNDLED)
    write_report(tmp_path / "r.html", entries, {"command": "test"})
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    drawn = marks(page)
    for path in BUNDLED:
        (trace,) = load_file(ROOT / path)
        result = execute(trace)
        assert drawn[(trace.name, result.policy)] == [(s.index, s.action) for s in result.steps]
    # The stop trace draws its stop and the not_reached steps after it.
    actions = {a for steps in drawn.values() for _, a in steps}
    assert {"allow", "stop", "not_reached", "compact_retry"} <= actions
    # Self-contained: the viewer's own script and data inline, no external reference of any kind.
    links = _Links()
    links.feed(page)
    assert links.refs == [] and "link" not in links.tags and links.tags.count("script") == 2
    assert "Rule coverage" in page and "loop_guard.consecutive_block" in page


def test_every_verdict_and_message_is_in_the_page(tmp_path: Path) -> None:
    write_report(tmp_path / "r.html", entries_for(BUNDLED), {})
    runs = {r["name"]: r for r in page_data((tmp_path / "r.html").read_text(encoding="utf-8"))["runs"]}
    for path in BUNDLED:
        (trace,) = load_file(ROOT / path)
        result = execute(trace)
        (shown,) = runs[trace.name]["policies"]
        expected = {str(s.index): [v.to_dict() for v in s.verdicts] for s in result.steps if s.verdicts}
        assert expected and shown["verdicts"] == expected
        assert [s["label"] for s in runs[trace.name]["steps"]] == [s.label(48) for s in trace.steps]


def test_mismatch_table_is_in_the_page(tmp_path: Path) -> None:
    # Spacebot's seven identical calls replayed under `default` (warn at 3, block at 5): its expectations fail.
    entries = entries_for(["traces/loop_guard/worker_identical_call_seven.yaml"], policy="default")
    assert entries[0]["passed"] is False
    write_report(tmp_path / "r.html", entries, {})
    root = ET.fromstring((tmp_path / "r.html").read_text(encoding="utf-8"))
    pres = [p for p in root.iter("pre") if p.attrib.get("class") == "mismatches"]
    assert len(pres) == 1 and "expected" in (pres[0].text or "") and ">" in (pres[0].text or "")


def test_markdown_report(tmp_path: Path) -> None:
    entries = entries_for(BUNDLED)
    write_report(tmp_path / "r.md", entries, {"command": "test"})
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert text.startswith("# loopguard report: 4 traces, 0 mismatched")
    (trace,) = load_file(ROOT / BUNDLED[1])
    result = execute(trace)
    row = next(line for line in text.splitlines() if line.startswith(f"| {trace.name} |"))
    # One character per step: the stop is an S, the steps after it dashes.
    assert f"`{strip([s.to_dict() for s in result.steps])}`" in row
    assert "S" in strip([s.to_dict() for s in result.steps])
    assert "## Rule coverage" in text


def test_strip_letters() -> None:
    steps = [{"action": a} for a in ("allow", "warn", "block", "stop", "not_reached")]
    assert strip(steps) == ".wBS-"


def test_document_schema_and_order() -> None:
    entries = entries_for(BUNDLED)
    document = report_document(reversed(entries), {"command": "x"})
    assert document["loopguard_report"] == 2
    assert [e["file"] for e in document["traces"]] == sorted(BUNDLED)
    assert document["meta"]["command"] == "x"
    json.dumps(document)  # plain JSON values only


@pytest.mark.parametrize("name", ["r.txt", "r", "r.yaml"])
def test_unknown_extension(name: str) -> None:
    with pytest.raises(ValueError, match="unknown extension"):
        report_format(name)


def test_matrix_html_has_a_row_per_policy(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "traces").mkdir()
    six = "".join("  - {tool: browser_click, args: {index: 1}}\n" for _ in range(6))
    (pytester.path / "traces" / "six.yaml").write_text(f"loopguard: 1\nname: six\nsteps:\n{six}", encoding="utf-8")
    result = pytester.runpytest("-n", "2", "--loopguard-matrix", "default,spacebot", "--loopguard-report", "m.html")
    result.assert_outcomes(passed=2)
    drawn = marks((pytester.path / "m.html").read_text(encoding="utf-8"))
    (trace,) = load_file(pytester.path / "traces" / "six.yaml")
    for policy in ("default", "spacebot"):
        assert drawn[("six", policy)] == [(s.index, s.action) for s in execute(trace, policy).steps]
    # default warns at 3 and blocks at 5; spacebot (worker) blocks (skips) from the 4th: the rows differ.
    assert drawn[("six", "default")] != drawn[("six", "spacebot")]
    root = ET.fromstring((pytester.path / "m.html").read_text(encoding="utf-8"))
    assert len([s for s in root.iter("section") if s.attrib.get("class") == "trace"]) == 1  # one trace, one section
    (run,) = page_data((pytester.path / "m.html").read_text(encoding="utf-8"))["runs"]
    assert [p["policy"] for p in run["policies"]] == ["default", "spacebot"]  # side by side in one run
    before, after = (p["actions"] for p in run["policies"])
    assert run["differs"] == [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert run["differs"]


def test_metadata_cells() -> None:
    from pytest_loopguard.report._document import meta_text

    assert [meta_text(v) for v in (None, [], ["default", "spacebot"], "pytest", 3)] == [
        "—", "—", "default, spacebot", "pytest", "3"]


def test_a_single_trace_page_collapses_the_codes_it_never_triggered(tmp_path: Path) -> None:
    write_report(tmp_path / "one.html", entries_for(BUNDLED[1:2]), {})
    root = ET.fromstring((tmp_path / "one.html").read_text(encoding="utf-8"))
    (details,) = [d for d in root.iter("details") if d.attrib.get("class") == "coverage"]
    summary = details.find("summary")
    assert summary is not None and "never triggered" in (summary.text or "")
    assert not any("never triggered:" in (p.text or "") for p in root.iter("p"))  # no wall of codes in view
    # several traces: the list stays in view
    write_report(tmp_path / "all.html", entries_for(BUNDLED), {})
    root = ET.fromstring((tmp_path / "all.html").read_text(encoding="utf-8"))
    assert not [d for d in root.iter("details") if d.attrib.get("class") == "coverage"]
    assert any("never triggered:" in (p.text or "") for p in root.iter("p"))


def test_a_scenario_simulated_differently_per_policy_gets_a_run_per_policy(tmp_path: Path) -> None:
    path = "traces/scenarios/stale-click-retrier-default.yaml"
    entries = entries_for([path], "default") + entries_for([path], "spacebot")
    assert len(entries[0]["steps"]) != len(entries[1]["steps"])  # the agent did other things once blocked earlier
    write_report(tmp_path / "s.html", entries, {})
    runs = page_data((tmp_path / "s.html").read_text(encoding="utf-8"))["runs"]
    assert [r["name"] for r in runs] == [f"{entries[0]['trace']} @ default", f"{entries[0]['trace']} @ spacebot"]
    for run, entry in zip(runs, entries, strict=True):
        (policy,) = run["policies"]
        assert policy["actions"] == [s["action"] for s in entry["steps"]] and len(run["steps"]) == len(entry["steps"])
