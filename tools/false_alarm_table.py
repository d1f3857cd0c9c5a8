#!/usr/bin/env python3
"""The false-alarm table: each trace of traces/false_alarms/ under every bundled preset, first verdict per cell.

Each trace is a case from a peer's issue thread (its description names the thread): a legitimate run (tags
without `loop`), where any verdict is a false alarm, or a loop (tag `loop`), where the first verdict is the
catch. Every preset runs the trace's steps as they are, without the tool declarations a trace's own policy adds
(a peer has none of ours); the `own` column is the trace under the policy it names itself (`default`, with a
declaration where the trace says so). A cell is `—` (no verdict), or the first non-allow verdict as
`action@call reason` (the call: its position among the run's tool calls, 1-based), or `FALSE ALARM: ...` on a
legitimate run. Re-run after a preset lands: docs/presets.md ("Which peer raises which false alarm") holds its
output.

    python tools/false_alarm_table.py               # Markdown, every bundled preset
    python tools/false_alarm_table.py --policy default --policy roo
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_loopguard import Trace, load_file, replay, resolve_policy
from pytest_loopguard.runtime._policy import ALIASES, preset_names

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "traces" / "false_alarms"


def first_verdict(trace: Trace, policy: object) -> str:
    """The first step that is not allowed, as `action@call reason`; `—` when every step is."""
    result = replay(trace, policy)
    calls = 0
    for step, got in zip(trace.steps, result.steps, strict=True):
        if step.kind == "tool":
            calls += 1
        action = str(got.action)
        if action not in ("allow", "not_reached"):
            reason = next((v.reason for v in got.verdicts if str(v.action) == action), "")
            return f"{action}@{calls} {reason.split('.', 1)[-1]}"
    return "—"


def rows(policies: list[str]) -> tuple[list[str], list[list[str]]]:
    headers = ["case (thread)", "kind", "own", *policies]
    body = []
    for path in sorted(SUITE.glob("*.yaml")):
        trace = load_file(path)[0]
        loop = "loop" in trace.tags
        thread = str(trace.source.get("origin", "")).split(";")[0].split(" (")[0]
        cells = [first_verdict(trace, resolve_policy(trace.policy))]
        for name in policies:
            cells.append(first_verdict(trace, resolve_policy(name)))
        if not loop:
            cells = [c if c == "—" else f"FALSE ALARM: {c}" for c in cells]
        body.append([f"{path.stem} ({thread})", "loop" if loop else "legitimate", *cells])
    return headers, body


def markdown(headers: list[str], body: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", action="append", help="a preset (repeatable); default: every bundled one")
    args = parser.parse_args(argv)
    policies = args.policy or [n for n in preset_names() if n not in ALIASES]  # an alias is the same policy
    headers, body = rows(policies)
    print(markdown(headers, body))
    alarms = sum(c.startswith("FALSE ALARM") for r in body for c in r[2:])
    print(f"\n{len(body)} cases, {len(policies)} presets: {alarms} false alarms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
