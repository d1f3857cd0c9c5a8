"""A trace's verdict timeline as a hand-written SVG: one row per policy, one mark per step coloured by action.

Each mark carries `data-step`, `data-action` and `data-policy` attributes and a `<title>` tooltip, so a
reader hovers for the step and its reason, and a test can check the picture against the verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final

__all__ = ["ACTION_COLOURS", "ACTION_LETTERS", "COMPACTED_COLOUR", "timeline_svg"]

# Calm for allow, warm for warnings, strong for what stops the agent; grey for steps the run never reached.
ACTION_COLOURS: Final[Mapping[str, str]] = {
    "allow": "#cfe8cf",
    "warn": "#f2c230",
    "block": "#e8702a",
    "stop": "#c0262d",
    "compact": "#7fb3e0",
    "retry": "#9b7fe0",
    "compact_retry": "#5b3fb0",
    "fail": "#6b0f14",
    "not_reached": "#eeeeee",
}
# The same actions as one character each, for text forms (markdown) of the timeline.
ACTION_LETTERS: Final[Mapping[str, str]] = {
    "allow": ".",
    "warn": "w",
    "block": "B",
    "stop": "S",
    "compact": "c",
    "retry": "r",
    "compact_retry": "R",
    "fail": "F",
    "not_reached": "-",
}
COMPACTED_COLOUR: Final = "#333333"
LABEL_WIDTH: Final = 150
ROW_HEIGHT: Final = 22
MARK_HEIGHT: Final = 16
MAX_WIDTH: Final = 900  # marks shrink (down to 3 px) so long traces still fit one screen
TOP: Final = 18  # room for the step ruler


def _kind(step: Mapping[str, Any]) -> str:
    """` data-not-run="denied"` / ` data-compacted="true"` on the marks of steps no verdict explains."""
    if step.get("not_run"):
        return f' data-not-run="{escape(str(step["not_run"]), quote=True)}"'
    return ' data-compacted="true"' if step.get("compacted") else ""


def _mark_width(steps: int) -> float:
    return max(3.0, min(16.0, (MAX_WIDTH - LABEL_WIDTH) / max(steps, 1)))


def timeline_svg(rows: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> str:
    """An inline SVG of `rows`: (policy, steps) pairs, each step a mapping with index, label, action, reason."""
    n = max((len(steps) for _, steps in rows), default=0)
    w = _mark_width(n)
    width = LABEL_WIDTH + w * n + 10
    height = TOP + ROW_HEIGHT * len(rows) + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width:.0f}" height="{height}" '
        f'viewBox="0 0 {width:.0f} {height}" role="img">'
    ]
    # A tick every 10 steps (every 50 when marks are thin) says where a loop starts without counting marks.
    every = 10 if w >= 6 else 50
    for i in range(0, n, every):
        x = LABEL_WIDTH + i * w
        parts.append(f'<text class="tick" x="{x:.1f}" y="12" font-size="10" fill="#666">{i}</text>')
    for row, (policy, steps) in enumerate(rows):
        y = TOP + row * ROW_HEIGHT
        parts.append(
            f'<text class="policy" x="0" y="{y + 12}" font-size="12" font-family="sans-serif">'
            f"{escape(policy)}</text>"
        )
        parts.append(f'<g class="row" data-policy="{escape(policy, quote=True)}">')
        for position, step in enumerate(steps):
            action = str(step.get("action", "allow"))
            # the real agent's own compaction: a dark bar, whatever the (empty) verdicts say
            colour = (COMPACTED_COLOUR if step.get("compacted") and action != "not_reached"
                      else ACTION_COLOURS.get(action, "#999999"))
            reason = step.get("reason")
            tip = f"step {step.get('index')}: {step.get('label', '')} — {action}" + (f" ({reason})" if reason else "")
            x = LABEL_WIDTH + position * w
            parts.append(
                f'<rect class="mark" x="{x:.1f}" y="{y}" width="{max(w - 1, 2):.1f}" height="{MARK_HEIGHT}" '
                f'fill="{colour}" data-step="{step.get("index")}" data-action="{escape(action, quote=True)}"'
                f'{_kind(step)} '
                f'data-policy="{escape(policy, quote=True)}"><title>{escape(tip)}</title></rect>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
