"""Read untrusted files and parse YAML or JSON within the bounds of `limits`, never recursing on the C stack.

Only regular files are read (a FIFO named `x.yaml` would block, a link to /dev/zero would never end), at
most MAX_FILE_BYTES of them, as strict UTF-8. YAML is first walked as an event stream (libyaml's parser is
iterative) to check nesting depth, tags, alias expansion and string length before anything is built, since
building deep input recurses in C and may crash the interpreter. JSON nesting is checked on the text the
same way. Every refusal is a `TraceError` naming the file and, where known, the line.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator
from io import FileIO
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

import yaml

if TYPE_CHECKING:
    from tarfile import TarInfo

from ..errors import TraceError, brief
from ._limits import MAX_DEPTH, MAX_FILE_BYTES, MAX_INT, MAX_INT_DIGITS, MAX_LOG_BYTES, MAX_NODES, MAX_STRING

__all__ = [
    "check_json_depth",
    "one_line",
    "open_regular",
    "parse_foreign_json",
    "parse_json",
    "parse_yaml",
    "plain_value",
    "read_bytes",
    "read_text",
    "regular_fd",
    "tar_members",
]

try:  # the C parser is much faster on large files and is iterative
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader

_STD: Final = "tag:yaml.org,2002:"
# Standard tags the safe constructor builds into plain values; binary (bytes), set, omap and pairs are not
# values a trace can hold, and anything else (python/*, custom `!tags`) is refused before construction.
ALLOWED_TAGS: Final = frozenset(
    {None, "!", *(_STD + t for t in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp"))}
)
_OPENERS: Final = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSERS: Final = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
# a JSON string, then a bracket. The string is the "unrolled loop" with possessive repeats: the regex engine
# keeps no state per character (the plain `(?:[^"\\]|\\.)*` kept ~115 bytes per character of one string:
# 1.15 GB for a 9 MB tool output), and none per escape either
_JSON_TOKENS: Final = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[\[\]{}]', re.DOTALL)
# a `\uD800`-`\uDFFF` escape: the only way a lone surrogate gets into a parsed JSON string
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


# characters that would end or hide the one error line (line breaks, other controls, Unicode separators)
_NOT_ONE_LINE: Final = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """`text` on one line: every control character (a newline in a file or tar member name, tarfile's
    multi-line message) written as its escape, `\\n` for a newline."""
    if _NOT_ONE_LINE.search(text) is None:
        return text
    return _NOT_ONE_LINE.sub(lambda m: repr(m.group())[1:-1], text)


def tar_members(path: str | Path, wanted: Callable[[TarInfo], bool],
                limit: int = MAX_LOG_BYTES) -> Iterator[tuple[str, bytes | TraceError]]:
    """(member name, its bytes) for each regular member of the archive at `path` that `wanted` accepts, read
    one at a time in memory (nothing is unpacked to disk); a member over `limit` bytes comes as a
    `TraceError` naming `ARCHIVE:MEMBER` in place of its bytes, so the others are still read.

    The archive must be a regular file (`regular_fd`: a FIFO is refused, not waited on). A corrupt archive
    (a truncated stream, a bad header checksum, a broken gzip, bzip2 or xz stream) raises one `TraceError`
    naming the archive, or `ARCHIVE:MEMBER` when the damage is inside that member, on one line.
    """
    import lzma  # archives are rare input: their modules load when one is read
    import tarfile
    import zlib

    # what a corrupt archive raises, by layer: tarfile's own, a stream cut short, and each decompressor's
    archive_errors = (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, OSError, ValueError)
    archive = one_line(str(path))
    where = archive
    fd, _size = regular_fd(path)
    try:
        with FileIO(fd, "r") as raw, tarfile.open(fileobj=raw, mode="r:*") as tar:
            for info in tar:
                if not info.isfile() or not wanted(info):
                    continue
                where = f"{archive}:{one_line(info.name)}"
                if info.size > limit:
                    yield info.name, TraceError(f"file too large: {info.size} bytes; at most {limit}", file=where)
                    continue
                member = tar.extractfile(info)
                data = member.read() if member is not None else b""
                yield info.name, data
                where = archive
    except archive_errors as exc:
        problem = one_line(" ".join(str(exc).split())) or type(exc).__name__
        raise TraceError(f"unreadable archive ({problem[:200]}); expected a tar archive of agent logs",
                         file=where) from None


def read_text(path: str | Path) -> str:
    """The text of a regular file of at most MAX_FILE_BYTES, decoded as UTF-8."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TraceError(f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})",
                         file=str(path), line=line) from None


def regular_fd(path: str | Path) -> tuple[int, int]:
    """A file descriptor open for reading on `path`, and the file's size; `path` must be a regular file (a
    FIFO, device or folder is refused, without waiting for a FIFO's writer), and every refusal is a one-line
    `TraceError` naming the file. The caller closes the descriptor.

    The one way this package opens a file it did not write: whole files (`read_bytes`), a JSONL file's first
    line (collection, `_headers`) and a JSONL file read block by block (streaming, `open_regular`) start here.
    """
    try:
        # O_NONBLOCK: opening a FIFO for reading must not wait for a writer; it is refused just below (it stays
        # set: reading a regular file never waits either way)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise TraceError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise TraceError("not a regular file (a FIFO, device or folder); only regular files are read", file=str(path))
    return fd, info.st_size


def open_regular(path: str | Path) -> IO[bytes]:
    """`path` open for reading, unbuffered (callers read in large blocks, which a buffer would only copy);
    refused as `regular_fd` refuses it."""
    return FileIO(regular_fd(path)[0], "r")


def read_bytes(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (default MAX_FILE_BYTES; a FIFO, device or folder
    is refused)."""
    name = str(path)
    limit = MAX_FILE_BYTES if limit is None else limit
    fd, size = regular_fd(path)
    try:
        if size > limit:
            raise TraceError(f"file too large: {size} bytes; at most {limit}", file=name)
        chunks: list[bytes] = []
        size = 0
        while True:  # a file growing while it is read stops at the cap too
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise TraceError(f"file too large: over {limit} bytes", file=name)
            chunks.append(chunk)
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror or exc}", file=name) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


_NESTING_LIMIT: Final = "exceeded maximum nesting depth"  # libyaml's problem text past its own depth bound


def _yaml_error(exc: yaml.YAMLError, path: str | None) -> TraceError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return TraceError(f"YAML syntax error: {problem}", file=path, line=mark.line + 1 if mark is not None else None)


def check_yaml_events(text: str, path: str | None = None) -> None:
    """Refuse YAML nested deeper than MAX_DEPTH, with a non-standard tag, a recursive alias, more than
    MAX_NODES values once aliases are expanded, or a string longer than MAX_STRING; build nothing."""
    depth = 0
    total = 0  # values so far, each alias counted as the size of what it stands for
    sizes: dict[str, int] = {}  # anchor -> expanded size of its value
    open_anchors: list[tuple[str | None, int]] = []  # per open collection: its anchor and `total` at its start

    def refuse(problem: str, event: Any) -> TraceError:
        return TraceError(problem, file=path, line=event.start_mark.line + 1)

    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, _OPENERS):
                if event.tag not in ALLOWED_TAGS:
                    raise refuse(f"YAML tag {event.tag!r} is not allowed; only standard tags are", event)
                depth += 1
                if depth > MAX_DEPTH:
                    raise refuse(f"nested deeper than {MAX_DEPTH} levels", event)
                open_anchors.append((event.anchor, total))
                total += 1
            elif isinstance(event, _CLOSERS):
                depth -= 1
                anchor, start = open_anchors.pop()
                if anchor is not None:
                    sizes[anchor] = total - start
            elif isinstance(event, yaml.ScalarEvent):
                if event.tag not in ALLOWED_TAGS:
                    raise refuse(f"YAML tag {event.tag!r} is not allowed; only standard tags are", event)
                if len(event.value) > MAX_STRING:
                    raise refuse(f"a string of {len(event.value)} characters; at most {MAX_STRING}", event)
                total += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor not in sizes:
                    if any(a == event.anchor for a, _ in open_anchors):
                        raise refuse(f"alias *{event.anchor} refers to a value that holds it (recursive)", event)
                    raise refuse(f"alias *{event.anchor} names no anchor defined before it", event)
                total += sizes[event.anchor]
            if total > MAX_NODES:
                raise refuse(f"more than {MAX_NODES} values once aliases are expanded", event)
    except yaml.YAMLError as exc:
        if _NESTING_LIMIT in str(getattr(exc, "problem", "")):
            # libyaml's own bound (1,000 levels, from the one PyYAML 6.0.4 bundles) can stop the scanner, which
            # looks ahead through a flow collection's openers, before an event reaches the depth check above:
            # past that bound is past ours, and said as ours
            mark = getattr(exc, "problem_mark", None)
            raise TraceError(f"nested deeper than {MAX_DEPTH} levels", file=path,
                             line=mark.line + 1 if mark is not None else None) from None
        raise _yaml_error(exc, path) from None


def parse_yaml(text: str, path: str | None = None) -> list[Any]:
    """Every document of a YAML text as plain values (after `check_yaml_events`)."""
    check_yaml_events(text, path)
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, path) from None
    except Exception as exc:
        # a scalar its tag cannot hold (`!!bool maybe` KeyError, `!!float xyz` ValueError, `!!timestamp x`
        # AttributeError) or an int of more than 4300 digits (ValueError)
        raise TraceError(f"a YAML value cannot be read: {brief(str(exc).split(';')[0])}", file=path) from None
    for doc in docs:
        check_values(doc, path)
    return docs


def check_json_depth(text: str, path: str | None = None, line: int | None = None) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH, looking only at the text (json.loads recurses in C)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:  # cannot be too deep: skip the scan
        return
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                at = line if line is not None else text.count("\n", 0, match.start()) + 1
                raise TraceError(f"nested deeper than {MAX_DEPTH} levels", file=path, line=at)
        elif token in "]}":
            depth -= 1


def parse_json(text: str, path: str | None = None, line: int | None = None) -> Any:
    """One JSON value; NaN and Infinity are refused, and everything `check_values` refuses.

    The common, plain value is parsed once and walked once (`plain_value`); only text that fails to parse
    or holds something out of bounds goes through the ordered checks (`_checked_json`: the nesting scan
    first, then the parse, then the values), so every refusal reads as it always has.
    """
    try:
        # the C decoder guards its own recursion (RecursionError, never a crash), so parsing first is safe
        value = _DECODE(text)
    except (ValueError, RecursionError):
        return _checked_json(text, path, line)
    if not plain_value([value], 0) or (len(text) > MAX_STRING and _has_long_string(value)):
        check_json_depth(text, path, line)
        check_values(value, path, line)
    return _no_surrogates(text, value)


def _has_long_string(value: Any) -> bool:
    try:
        check_values(value)
    except TraceError:
        return True
    return False


def _checked_json(text: str, path: str | None, line: int | None) -> Any:
    check_json_depth(text, path, line)
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        # a JSONL record is one line: its column says where in the line; a JSON file has the line itself
        problem = exc.msg if line is None else str(exc)
        at = line if line is not None else exc.lineno
        raise TraceError(f"JSON syntax error: {problem}", file=path, line=at) from None
    except (ValueError, RecursionError) as exc:  # NaN, a number of more than 4300 digits
        raise TraceError(str(exc).split(";")[0], file=path, line=line) from None
    check_values(value, path, line)
    return _no_surrogates(text, value)


def parse_foreign_json(text: str, path: str | None = None, line: int | None = None, *,
                       expected: str = "a complete JSON document") -> Any:
    """One JSON value of someone else's log (an agent log, an archive member, a JSONL line, `resolved.json`).

    Unlike a trace, a log may hold integers beyond ±2^53 (ids, nanosecond times) and strings beyond
    MAX_STRING (import cuts those, with a warning); what it may not hold, each refused as one `TraceError`
    naming the file (and `line`, a JSONL line's number): nesting deeper than MAX_DEPTH (checked on the text,
    O(1) memory per character, before the C parser recurses), an integer of more than 4,300 digits (checked
    by the parser before it converts one), NaN or Infinity (not JSON). A lone surrogate escape (`"\\ud800"`,
    valid JSON but no character) becomes U+FFFD, as invalid UTF-8 bytes would not: those are refused.
    """
    try:
        # the C decoder guards its own recursion (RecursionError, never a crash): parsing first is safe, and
        # the depth is then checked on the value, which costs a fifth of scanning the text again
        value = _DECODE_FOREIGN(text)
    except json.JSONDecodeError as exc:
        check_json_depth(text, path, line)  # deep and broken: the depth is what to fix first
        at = line if line is not None else exc.lineno
        where = "on this line " if line is not None else ""
        raise TraceError(f"invalid JSON {where}({exc.msg}); expected {expected}", file=path, line=at) from None
    except RecursionError:
        check_json_depth(text, path, line)  # says where
        raise TraceError(f"nested deeper than {MAX_DEPTH} levels", file=path, line=line) from None
    except ValueError as exc:  # NaN/Infinity, an integer of more than MAX_INT_DIGITS digits
        raise TraceError(f"{str(exc).split(';')[0][:200]}; expected {expected}", file=path, line=line) from None
    if isinstance(value, (dict, list)) and _deeper_than_max(value):
        check_json_depth(text, path, line)  # says where
        raise TraceError(f"nested deeper than {MAX_DEPTH} levels", file=path, line=line)
    return _no_surrogates(text, value)


def _deeper_than_max(value: dict[str, Any] | list[Any]) -> bool:
    """Whether a parsed JSON value nests deeper than MAX_DEPTH (no recursion; scalars are not visited)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > MAX_DEPTH:
            return True
        for child in item.values() if type(item) is dict else item:
            if type(child) is dict or type(child) is list:
                stack.append((child, level + 1))
    return False


def _foreign_int(digits: str) -> int:
    # called by the parser with the number's text: the length is checked before int() is asked to convert
    # it (and raises its own, differently worded ValueError past the interpreter's limit)
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits.lstrip('-'))} digits; at most {MAX_INT_DIGITS}")
    return int(digits)


def _foreign_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e400: a literal beyond a double is Infinity by another name
        raise ValueError(f"the number {text[:40]} is beyond a 64-bit float")
    return number


def _foreign_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _no_surrogates(text: str, value: Any) -> Any:
    """`value` with each lone surrogate in its strings and keys replaced by U+FFFD; a text without a
    surrogate escape (the common case, one substring search) is returned untouched. No recursion."""
    if "\\u" not in text or _SURROGATE_ESCAPE.search(text) is None:
        return value
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    stack = [value] if isinstance(value, (dict, list)) else []
    while stack:
        item = stack.pop()
        if isinstance(item, dict) and any(isinstance(k, str) and _SURROGATE.search(k) for k in item):
            pairs = [(_SURROGATE.sub("\ufffd", k) if isinstance(k, str) else k, v) for k, v in item.items()]
            item.clear()
            item.update(pairs)
        keys = item.keys() if isinstance(item, dict) else range(len(item))
        for key in list(keys):
            child = item[key]
            if isinstance(child, str):
                if _SURROGATE.search(child):
                    item[key] = _SURROGATE.sub("\ufffd", child)
            elif isinstance(child, (dict, list)):
                stack.append(child)
    return value


def plain_value(value: Any, depth: int) -> bool:
    """Whether `value`, a list or mapping nested `depth` deep, holds only in-bound values: integers within
    ±MAX_INT, finite floats, nesting to at most MAX_DEPTH. Strings are not looked at (a string is never
    longer than the text it was parsed from). No recursion."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if level > MAX_DEPTH:
            return False
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, level + 1))
            elif kind is int:
                if not -MAX_INT <= child <= MAX_INT:
                    return False
            elif kind is float and not math.isfinite(child):
                return False
    return True


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a trace")


# one decoder for every call (json.loads builds a new one per call when given parse_constant)
_DECODE: Final = json.JSONDecoder(parse_constant=_reject_constant).decode
_DECODE_FOREIGN: Final = json.JSONDecoder(parse_constant=_foreign_constant, parse_int=_foreign_int,
                                          parse_float=_foreign_float).decode


def _bad_value(item: Any) -> str | None:
    if isinstance(item, int) and not isinstance(item, bool) and not -MAX_INT <= item <= MAX_INT:
        return f"expected an integer ≥ -{MAX_INT} and ≤ {MAX_INT} (±2^53), got {brief(item)}"
    if isinstance(item, str) and len(item) > MAX_STRING:
        return f"a string of {len(item)} characters; at most {MAX_STRING}"
    return None


def check_values(value: Any, path: str | None = None, line: int | None = None) -> None:
    """Refuse integers beyond ±MAX_INT and strings beyond MAX_STRING anywhere in `value` (no recursion)."""
    seen: set[int] = set()  # aliases share objects: each container is looked at once
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, where = stack.pop()
        if isinstance(item, (dict, list)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                stack.append((key, where))
                stack.append((child, (*where, key)))
        elif (problem := _bad_value(item)) is not None:
            raise _located(problem, where, path, line)


def _located(problem: str, where: tuple[Any, ...], path: str | None, line: int | None) -> TraceError:
    # `steps[3].args.v` is step 3, field `args.v`, as the trace loader names fields
    step = where[1] if len(where) > 1 and where[0] == "steps" and isinstance(where[1], int) else None
    rest = where[2:] if step is not None else where
    field = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in rest).lstrip(".") or None
    return TraceError(problem, file=path, line=line, step=step, field=field)

