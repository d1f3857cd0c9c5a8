"""browser-use's action loop, as failure_tracker's `action_loop` rule reads it: what counts as "the same action"
in the loop window (a normalised identity of a call), and the nudges it gives at each level."""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Final

from ..core._identity import key_part
from ..core._model import ToolCall

__all__ = ["ACTION_LOOP_ADVICE", "action_identity"]

# browser-use's search normalisation: punctuation becomes a separator, so "Cheap flights!" = "flights cheap"
_NOT_QUERY_WORD: Final = re.compile(r"[^\w\s]")


def action_identity(call: ToolCall) -> Hashable:
    """browser-use's normalised identity of a call: what counts as "the same action" in the loop window."""
    tool, args = call.tool, call.args
    if tool == "click":
        return ("click", key_part(args.get("index")))
    if tool == "input":
        text = args.get("text")
        return ("input", key_part(args.get("index")), "" if text is None else str(text).strip().lower())
    if tool == "navigate":
        return ("navigate", key_part(args.get("url")))
    if tool == "search":
        query = args.get("query")
        words = _NOT_QUERY_WORD.sub(" ", "" if query is None else str(query).lower()).split()
        return ("search", key_part(args.get("engine") or "google"), tuple(sorted(set(words))))
    if tool == "scroll":
        # browser-use scrolls with `down: bool` (default down); an explicit `direction` is taken as written
        direction = args["direction"] if "direction" in args else ("down" if args.get("down", True) else "up")
        return ("scroll", key_part(direction), key_part(args.get("index")))
    if any(v is None for v in args.values()):
        # null arguments do not distinguish actions; the rare call carrying them is re-keyed without them
        return ToolCall.of(tool, {k: v for k, v in args.items() if v is not None}).fingerprint
    return call.fingerprint


ACTION_LOOP_ADVICE: Final = (
    "If it is not making progress, try a different approach.",
    "This looks like a loop: stop repeating it and change strategy (another element, page or query).",
    "You are stuck in a loop. Do not repeat this action again: change strategy completely, or call done "
    "with what you have.",
)
