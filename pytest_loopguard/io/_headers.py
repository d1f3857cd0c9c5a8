"""What collecting a trace file needs — each trace's name, tags and first line — read without loading its steps.

pytest collects every file in every xdist worker, so collection reads only the top-level `loopguard`, `name`
and `tags` of each trace: the first line of a JSONL file, the parsed JSON object (C speed, no step built), or
the column-0 keys of each YAML document (only those three keys' lines are parsed). Anything this reader is not
sure of (unusual YAML layout, a bad name, no `loopguard` key, unreadable bytes) gives None, and the caller
loads the file fully, so every error it reports is the loader's own. Steps, policy, task, expectations and
scenarios are judged when the trace runs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

import yaml

from ..core._limits import MAX_FILE_BYTES, MAX_STRING
from ..core._safeload import parse_yaml, read_bytes, regular_fd
from ..errors import TraceError
from ._spec import HEADER_KEYS, NAME_FORBIDDEN

__all__ = ["TraceHeader", "read_headers"]

# A top-level YAML key as traces write it; anything else at column 0 (a quoted or complex key, a flow
# mapping, a directive, an anchor, a scalar's continuation) sends the file to the full loader.
_KEY: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]|$)")
# Line breaks PyYAML honours besides "\n": with any of them, lines split on "\n" are not YAML's lines.
_OTHER_BREAKS: Final = re.compile("[\r\x85\u2028\u2029]")
_TOP: Final = re.compile(r"^[^ \t#\n][^\n]*", re.MULTILINE)  # a column-0 line that is not a comment
_CONTENT: Final = re.compile(r"^[ \t]+[^ \t#\n]", re.MULTILINE)  # an indented line that is not a comment
_SPECIAL: Final = re.compile(r"[&*!]")
_HEAD_BLOCK: Final = 1 << 16  # bytes read at a time for a JSONL file's first line (a header is a few hundred)
_PLAIN_SNIPPET: Final = 2000  # characters: nesting can be at most this deep, far below the C stack's limit

try:  # the C parser, as the loader uses
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


@final
@dataclass(frozen=True, slots=True)
class TraceHeader:
    """One trace as collection sees it: its name, tags, first line (0-based) and place among the file's traces."""

    name: str
    tags: tuple[str, ...]
    line: int
    document: int


def read_headers(path: Path) -> list[TraceHeader] | None:
    """The header of every trace in `path`, or None when only the full loader can judge the file."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        # a JSONL trace's header is its first line: the rest (steps, perhaps over the loader's size cap, which a
        # JSONL trace may be: it is replayed as it is read) is read when the trace runs
        head = _jsonl_head(path)
        return None if head is None else _headers(_jsonl_header(head))
    try:
        text = read_bytes(path).decode("utf-8")
    except (TraceError, UnicodeDecodeError):
        return None
    return _headers(_json_object(text) if suffix == ".json" else _yaml_headers(text))


def _headers(raws: list[tuple[Any, int]] | None) -> list[TraceHeader] | None:
    if not raws:
        return None
    headers = []
    for document, (raw, line) in enumerate(raws):
        header = _header(raw, line, document)
        if header is None:
            return None
        headers.append(header)
    return headers


def _header(raw: Any, line: int, document: int) -> TraceHeader | None:
    """The header of one trace's top-level mapping, or None unless the loader would accept these fields."""
    if not isinstance(raw, Mapping):
        return None
    version, name, tags = raw.get("loopguard"), raw.get("name"), raw.get("tags")
    # the loader's rules for these three fields (`_read.trace_from_mapping`), so a header read here never
    # names a trace the loader would refuse at this field
    if type(version) is not int or version != 1:
        return None
    if not isinstance(name, str) or not name or len(name) > MAX_STRING or any(p in name for p in NAME_FORBIDDEN):
        return None
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(t, str) and len(t) <= MAX_STRING for t in tags):
        return None
    return TraceHeader(name, tuple(tags), line, document)


def _jsonl_head(path: Path) -> str | None:
    """The text of a JSONL file up to the end of its first line that is not blank; None where the file cannot
    be read as a regular file, is not UTF-8 there, or has no such line within the loader's size cap."""
    try:
        fd, _size = regular_fd(path)  # a FIFO, device or folder named like a trace: the loader reports it
    except TraceError:
        return None
    try:
        data = bytearray()
        start = 0  # where the line being looked at starts
        while len(data) <= MAX_FILE_BYTES:
            chunk = os.read(fd, _HEAD_BLOCK)
            data += chunk
            while (end := data.find(b"\n", start)) >= 0 or not chunk:
                line = data[start:] if end < 0 else data[start:end]
                try:
                    blank = not line.decode("utf-8").strip()
                except UnicodeDecodeError:
                    return None
                if not blank or end < 0:
                    return data[:len(data) if end < 0 else end].decode("utf-8")
                start = end + 1
        return None
    except OSError:
        return None
    finally:
        os.close(fd)


def _jsonl_header(text: str) -> list[tuple[Any, int]] | None:
    # the loader's notion of a line: only "\n" ends a record, and blank lines are passed over
    start = 0
    while True:
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        if line.strip():
            break
        if end < 0:
            return None
        start = end + 1
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(raw, Mapping) or "steps" in raw:  # a header with steps is the loader's error to report
        return None
    return [(raw, 0)]


def _json_object(text: str) -> list[tuple[Any, int]] | None:
    # C json builds no step objects and never recurses on the C stack (a deep file raises RecursionError)
    try:
        return [(json.loads(text), 0)]
    except (ValueError, RecursionError):
        return None


def _yaml_headers(text: str) -> list[tuple[Any, int]] | None:
    """Each YAML document's `loopguard`, `name` and `tags`, parsed from their own lines, with its first line."""
    if text.startswith("\ufeff") or _OTHER_BREAKS.search(text):
        return None
    # Only column-0 lines shape the top level: a block value's lines are indented (or `- ` items), so a
    # key's text runs from its line to the next column-0 key or document marker; steps are never looked at.
    documents: list[tuple[dict[str, tuple[int, int]], int]] = []  # per document: key -> (start, end), first line
    keys: dict[str, tuple[int, int]] | None = None
    key = ""
    begin = 0  # where the current document's text starts
    for match in _TOP.finditer(text):
        line, at = match.group(), match.start()
        if line[0] == "-" and (len(line) == 1 or line[1] in " \t"):  # a block sequence item of the current key
            if not key:
                return None
            continue
        if keys is not None and key:
            keys[key] = (keys[key][0], at)
        if line.startswith("---") and (len(line) == 3 or line[3] in " \t"):
            rest = line[3:].strip()
            if rest and not rest.startswith("#"):  # content on the marker line
                return None
            keys, key, begin = None, "", match.end()
            continue
        found = _KEY.match(line)
        if found is None:
            return None
        if keys is None:
            if _CONTENT.search(text, begin, at):  # indented content before the first key
                return None
            keys = {}
            documents.append((keys, text.count("\n", 0, at)))
        key = found.group(1)
        if key in keys:  # a duplicate key: which one wins is the loader's to say
            return None
        keys[key] = (at, len(text))
    if keys is None and _CONTENT.search(text, begin):
        return None
    headers = []
    for spans, first in documents:
        if "loopguard" not in spans:  # not a trace, or a document the loader refuses: it says which
            return None
        snippet = "\n".join(text[slice(*spans[k])].rstrip("\n") for k in HEADER_KEYS if k in spans)
        parsed = _parse_snippet(snippet)
        if parsed is None:
            return None
        headers.append((parsed, first))
    return headers


def _parse_snippet(snippet: str) -> Any:
    """The mapping of a few top-level lines, or None where YAML refuses them."""
    try:
        if len(snippet) <= _PLAIN_SNIPPET and not _SPECIAL.search(snippet):
            # no anchor, alias or tag and too short to nest deeply: nothing the safe parser's checks guard
            # against, so the C loader alone is enough (a third of the cost)
            return yaml.load(snippet, Loader=_Loader)
        parsed = parse_yaml(snippet)
    except (TraceError, yaml.YAMLError, ValueError, RecursionError):
        return None
    return parsed[0] if len(parsed) == 1 else None
