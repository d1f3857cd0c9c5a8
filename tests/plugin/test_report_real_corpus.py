"""Reports and diffs on the real agent runs in ../shared/corpus/real (long runs: up to hundreds of steps).

Every labelled run is imported, replayed under several presets and drawn in one HTML report: the page
parses, every run has its section with one row per preset, and every mark is its step's action. The diff
between two presets accounts for every intervention of both replays.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from viewpage import marks, page_data

from pytest_loopguard.core._expect import check
from pytest_loopguard.core._model import Trace
from pytest_loopguard.eval._diff import diff_results, interventions
from pytest_loopguard.importers import import_runs, to_trace
from pytest_loopguard.report._document import report_entry
from pytest_loopguard.report._write import write_report
from pytest_loopguard.runtime._replay import policy_for, replay

REAL = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "real"
LABELS = yaml.safe_load((REAL / "labels.yaml").read_text(encoding="utf-8"))["runs"]
PRESETS = ("default", "openhands", "qa-agent")


@pytest.fixture(scope="module")
def runs() -> list[Trace]:
    out = []
    for i, run in enumerate(LABELS):
        imported = import_runs(REAL / run["file"])[run.get("row", 0)]
        out.append(to_trace(imported, f"real-{i}"))
    assert len(out) == len(LABELS) >= 10
    return out


def test_html_report_of_the_real_runs(runs: list[Trace], tmp_path: Path) -> None:
    entries: list[dict[str, Any]] = []
    expected: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for trace in runs:
        for preset in PRESETS:
            result = replay(trace, preset)
            entry = report_entry(result, check(result), policy_for(trace, preset)[0].engines)
            entry["file"] = f"real/{trace.name}"
            entries.append(entry)
            expected[(trace.name, preset)] = [(s.index, s.action) for s in result.steps]
    write_report(tmp_path / "real.html", entries, {"command": "test"})
    page = (tmp_path / "real.html").read_text(encoding="utf-8")
    root = ET.fromstring(page)
    sections = [s for s in root.iter("section") if s.attrib.get("class") == "trace"]
    assert len(sections) == len(runs)
    data = page_data(page)
    assert len(data["runs"]) == len(runs)
    for run in data["runs"]:
        assert [p["policy"] for p in run["policies"]] == sorted(PRESETS)  # side by side, in policy-name order
    drawn = marks(page)
    assert drawn == expected
    # The real runs do get interventions: the picture is not all `allow`.
    assert Counter(a for marks in drawn.values() for _, a in marks)["allow"] < sum(map(len, drawn.values()))


def test_diff_between_presets_on_the_real_runs(runs: list[Trace]) -> None:
    moved = 0
    for trace in runs:
        before, after = replay(trace, "default"), replay(trace, "openhands")
        d = diff_results(before, after)
        kinds = Counter(c.kind for c in d.changes)
        same = len(set(interventions(before)) & set(interventions(after)))
        assert len(interventions(before)) == same + kinds["changed"] + kinds["moved"] + kinds["vanished"]
        assert len(interventions(after)) == same + kinds["changed"] + kinds["moved"] + kinds["appeared"]
        moved += d.moved
    assert moved > 0  # two different detectors disagree somewhere on real loops
