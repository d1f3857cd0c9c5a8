"""A small hand-written labelled corpus for the eval tests, written into a temporary folder.

Numbers come from PRESETS.md: `default` warns at the 3rd identical call and blocks at the 5th;
`spacebot` (the worker) skips the 4th identical call (a warning with action block).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

CLICK = "  - {tool: click, args: {index: 3}}\n"


def steps(*lines: str) -> str:
    return "steps:\n" + "".join(lines)


def trace(name: str, body: str) -> str:
    return f"loopguard: 1\nname: {name}\n{body}"


# calls 0..7: a read, five identical clicks (1..5), two other calls
LOOP = steps("  - {tool: read_file, args: {path: a.py}}\n", CLICK * 5,
             "  - {tool: shell, args: {command: ls}}\n", "  - {tool: shell, args: {command: pwd}}\n")
HEALTHY = steps("  - {tool: read_file, args: {path: a.py}}\n", "  - {tool: write_file, args: {path: a.py}}\n",
                "  - {tool: shell, args: {command: pytest}}\n")
# calls: tool 0, rejected 1, rejected 2, tool 3; the message and the done step are no calls
REJECTED = steps("  - {message: {role: user, text: fix it}}\n", "  - {tool: shell, args: {command: ls}}\n",
                 "  - {rejected: {reason: format}}\n", "  - {rejected: {reason: format}}\n",
                 "  - {tool: shell, args: {command: pwd}}\n", "  - {done: {success: true}}\n")

LABELS = """
version: 1
runs:
  - file: loop.yaml
    format: loopguard
    outcome: failed
    calls: 8
    healthy: false
    loops:
      - {from: 1, to: 5, shape: identical-repeat, expect: flag, recovered: false}
  - file: healthy.yaml
    format: loopguard
    outcome: resolved
    calls: 3
    healthy: true
    loops: []
  - file: tolerate.yaml
    format: loopguard
    outcome: resolved
    calls: 8
    healthy: false
    loops:
      - {from: 1, to: 5, shape: identical-repeat, expect: tolerate, recovered: true}
  - file: rejected.yaml
    format: loopguard
    outcome: resolved
    calls: 4
    healthy: true
  - file: two.yaml
    row: 1
    format: loopguard
    outcome: failed
    calls: 9
    healthy: false
    loops:
      - {from: 2, to: 6, shape: identical-repeat, expect: flag}
"""


def write_corpus(folder: Path, labels: str = LABELS) -> Path:
    """Write the runs and `labels.yaml` into `folder`; returns the labels path."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "loop.yaml": trace("loop", LOOP),
        "healthy.yaml": trace("healthy", HEALTHY),
        "tolerate.yaml": trace("tolerate", LOOP),
        "rejected.yaml": trace("rejected", REJECTED),
        # two runs in one file: row 1 has its loop one call later (an extra read first)
        "two.yaml": trace("two-a", HEALTHY) + "---\n"
        + trace("two-b", steps("  - {tool: read_file, args: {path: b.py}}\n") + LOOP.removeprefix("steps:\n")),
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    path = folder / "labels.yaml"
    path.write_text(textwrap.dedent(labels).lstrip("\n"), encoding="utf-8")
    return path
