"""Reading the step viewer's page (`loopguard view`, the HTML reports) the way a test needs it: the page parsed as
XML (so a broken tag fails), its one JSON data block, and each run's actions per policy; and a trace whose text
tries to end the page's script blocks."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from files import write


def page_data(page: str) -> dict[str, Any]:
    """The viewer's data: the page must be well-formed XML holding exactly one `lg-data` JSON block."""
    root = ET.fromstring(page)
    blocks = [s for s in root.iter("script") if s.attrib.get("id") == "lg-data"]
    assert len(blocks) == 1 and blocks[0].attrib.get("type") == "application/json"
    data: dict[str, Any] = json.loads(blocks[0].text or "")
    return data


def marks(page: str) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """(run, policy) -> [(step, action)] as the viewer shows them."""
    out: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for run in page_data(page)["runs"]:
        for policy in run["policies"]:
            out[(run["name"], policy["policy"])] = [
                (step["index"], action) for step, action in zip(run["steps"], policy["actions"], strict=True)]
    return out


HOSTILE = "</script><script>window.pwned = 1</script><!-- & \u2028 \u2029 </SCRIPT >"


def hostile_trace(folder: Path) -> Path:
    text = json.dumps(HOSTILE)
    return write(folder, "hostile.yaml", (
        "loopguard: 1\nname: hostile\nsteps:\n"
        f"  - tool: read_file\n    args: {{path: {text}}}\n    result: {{ok: true, text: {text}}}\n"
        f"  - message: {{role: user, text: {text}}}\n"))
