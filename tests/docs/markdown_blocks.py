"""Fenced code blocks of the repo's Markdown (README.md and docs/*.md), with the file and line each starts at."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# An opening fence of three or more backticks with an optional info string, up to the matching closing fence.
_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One fenced block: `lang` is the first word of the info string (`python`, `yaml`, `console`, ...)."""

    path: Path
    line: int  # the line of the opening fence, 1-based
    lang: str
    body: str

    @property
    def where(self) -> str:
        """`docs/x.md:12 (yaml)`: the block's place, for failure messages and test ids."""
        return f"{self.path.relative_to(ROOT)}:{self.line} ({self.lang or 'no language'})"


def markdown_files() -> list[Path]:
    """README.md and every Markdown file under docs/: new docs are covered without naming them."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(path, text.count("\n", 0, m.start()) + 1, (m.group("info").split() or [""])[0], m.group("body"))
        for m in _FENCE.finditer(text)
    ]


def all_blocks(*langs: str) -> list[Block]:
    """Every block of the given languages in every Markdown file."""
    return [b for path in markdown_files() for b in blocks(path) if b.lang in langs]


def prose(path: Path) -> str:
    """The page without its fenced blocks (each replaced by as many empty lines, so line numbers hold)."""
    text = path.read_text(encoding="utf-8")
    return _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
