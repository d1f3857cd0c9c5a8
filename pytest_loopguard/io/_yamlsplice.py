"""Edit values in YAML text in place: set or remove the key at a path, changing only those characters.

A round-trip re-dump (ruamel.yaml) reflows what it did not change: 14 of the 141 bundled traces came back
different with no edit at all (multi-line flow mappings joined). Here the parser only locates nodes; each
edit splices new text over the old value's characters, so comments, key order, quoting, flow style,
indentation and line breaks everywhere else stay byte for byte. A new value is written in the style of
the place it goes: inline in a flow mapping or after a scalar, as lines in a block mapping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml

__all__ = ["REMOVE", "Edit", "SpliceError", "apply_edits", "flow"]

REMOVE: Final = object()  # the value of an edit that deletes its key
PathKey = str | int
_PLAIN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_RESERVED: Final = frozenset({"null", "true", "false", "yes", "no", "on", "off", "y", "n", "~"})


class SpliceError(ValueError):
    """The text does not have the shape the edit needs (e.g. a path through a scalar)."""


@dataclass(frozen=True, slots=True)
class Edit:
    """Set `path` (keys of mappings, indexes of sequences) in document `document` to `value`, or remove it."""

    document: int
    path: tuple[PathKey, ...]
    value: Any


def flow(value: Any) -> str:
    """`value` as one line of flow YAML: `{action: warn, counts: {block: 1}}`, `null`, `"a: b"`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        plain = _PLAIN.fullmatch(value) and value.lower() not in _RESERVED
        return value if plain else json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML one
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{flow(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    raise SpliceError(f"cannot write a {type(value).__name__} as YAML")


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with the edits applied in order, each located in the text the ones before it left (two edits
    may create the same missing mapping, or insert at the same place)."""
    for edit in edits:
        # the pure-Python composer: its marks count characters (libyaml's count bytes)
        documents = [n for n in yaml.compose_all(text, Loader=yaml.SafeLoader) if n is not None]
        if edit.document >= len(documents):
            raise SpliceError(f"no YAML document {edit.document}")
        splices = _splice(text, documents[edit.document], edit.path, edit.value)
        # back to front; at one position the later insertion goes first, so the earlier one ends up before it
        ordered = sorted(enumerate(splices), key=lambda item: (item[1][0], item[0]), reverse=True)
        for _, (start, end, new) in ordered:
            text = text[:start] + new + text[end:]
    return text


Splice = tuple[int, int, str]  # replace text[start:end] with the string


def _splice(text: str, node: Any, path: tuple[PathKey, ...], value: Any) -> list[Splice]:
    *parents, last = path
    for depth, key in enumerate(parents):
        child = _child(node, key)
        if child is None:
            # the rest of the path does not exist yet: set the first missing key to a nested mapping
            for missing in reversed(path[depth + 1:]):
                value = {missing: value}
            return _set(text, node, key, value)
        node = child
    if value is REMOVE:
        return [_remove(text, node, last)]
    return _set(text, node, last, value)


def _child(node: Any, key: PathKey) -> Any:
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int):
        return node.value[key] if key < len(node.value) else None
    if isinstance(node, yaml.MappingNode):
        return next((v for k, v in node.value if _is_key(k, key)), None)
    raise SpliceError(f"expected a mapping or sequence at {key!r}, found a scalar")


def _is_key(node: Any, key: PathKey) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.value == str(key)


def _end(node: Any) -> int:
    """Where a node's own characters end: a block collection's end mark lies past trailing comments."""
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _end(node.value[-1])
    return int(node.end_mark.index)


def _line_end(text: str, index: int) -> int:
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _set(text: str, mapping: Any, key: PathKey, value: Any) -> list[Splice]:
    if not isinstance(mapping, yaml.MappingNode):
        raise SpliceError(f"expected a mapping to hold {key!r}")
    pair = next(((k, v) for k, v in mapping.value if _is_key(k, key)), None)
    if pair is not None:
        key_node, old = pair
        if isinstance(old, yaml.MappingNode) and not old.flow_style:
            if isinstance(value, Mapping) and value:
                # a block stays a block: entry by entry, so each line keeps its comment
                gone = [k.value for k, _ in old.value if k.value not in {str(n) for n in value}]
                kept = [s for k, v in value.items() for s in _set(text, old, k, v)]
                return kept + [_remove(text, old, k) for k in gone]
            return [(key_node.end_mark.index, _end(old), f": {flow(value)}")]
        if _same(old, value):
            return []
        return [(old.start_mark.index, _end(old), flow(value))]
    entry = f"{flow(key)}: {flow(value)}"
    if mapping.flow_style:
        close = mapping.end_mark.index - 1  # the `}`
        at = len(text[:close].rstrip())
        return [(at, at, f", {entry}" if mapping.value else entry)]
    column = mapping.value[0][0].start_mark.column
    at = _line_end(text, _end(mapping.value[-1][1]))  # after the last entry's line (and its comment)
    return [(at, at, "\n" + " " * column + entry)]


def _same(node: Any, value: Any) -> bool:
    """Whether a scalar node already says `value` (then its text, quoting included, is left alone)."""
    if not isinstance(node, yaml.ScalarNode) or isinstance(value, Mapping | list | tuple):
        return False
    written = yaml.safe_load(node.value) if node.style is None else node.value  # a plain scalar is typed
    return type(written) is type(value) and bool(written == value)


def _remove(text: str, mapping: Any, key: PathKey) -> Splice:
    if not isinstance(mapping, yaml.MappingNode):
        raise SpliceError(f"expected a mapping to hold {key!r}")
    index = next((i for i, (k, _) in enumerate(mapping.value) if _is_key(k, key)), None)
    if index is None:
        return 0, 0, ""  # nothing to remove
    key_node, value = mapping.value[index]
    if mapping.flow_style:
        if index > 0:  # from the end of the entry before: `, key: value`
            return _end(mapping.value[index - 1][1]), _end(value), ""
        if len(mapping.value) > 1:  # the first of several: up to the next key
            return key_node.start_mark.index, mapping.value[1][0].start_mark.index, ""
        return key_node.start_mark.index, _end(value), ""
    # a block entry: its whole lines, the newline before them included
    start = _line_start(text, key_node.start_mark.index)
    end = _line_end(text, _end(value))
    return max(start - 1, 0), end, ""
