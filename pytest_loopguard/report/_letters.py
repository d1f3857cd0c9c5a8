"""Each action as one character, for the text forms of a verdict timeline (the Markdown report's strip)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["ACTION_LETTERS"]

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
