"""The fake file system: line-based read (offset/limit), search, write and patch, with mtimes on a virtual clock.

Results are worded like Hermes' file tools: a read starts with `File: PATH (lines A-B of N)` and numbers
its lines; a search lists `path:line: text` matches a page at a time. `modify` changes a file outside the
agent, so that its next read carries `changed: true`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any, Final, final

from pytest_loopguard.core._model import ToolCall, ToolResult
from pytest_loopguard.runtime._guard import Clock

from .protocols import is_count

__all__ = ["FILE_TOOLS", "FakeFiles"]

FILE_TOOLS: Final = ("read_file", "search_files", "write_file", "patch")


def _int_arg(value: Any, default: int, minimum: int) -> int | None:
    if value is None:
        return default
    return value if is_count(value, minimum) else None


@final
class FakeFiles:
    """Files by path, their modification times (virtual ms) and which changed outside the agent."""

    def __init__(self, files: Mapping[str, str] | None = None, *, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self.files: dict[str, str] = dict(files or {})
        self.mtimes: dict[str, int] = {path: self.clock.now_ms for path in self.files}
        self.reads: list[tuple[str, int, int]] = []  # (path, offset, limit) of every read served
        self._changed: set[str] = set()
        self._patterns: dict[str, re.Pattern[str]] = {}

    def execute(self, call: ToolCall) -> ToolResult:
        a = call.args
        if call.tool == "read_file":
            return self.read(str(a.get("path", "")), a.get("offset"), a.get("limit"))
        if call.tool == "search_files":
            return self.search(str(a.get("pattern", "")), target=str(a.get("target", "content")),
                               path=str(a.get("path", ".")), file_glob=a.get("file_glob"),
                               limit=a.get("limit"), offset=a.get("offset"))
        if call.tool == "write_file":
            return self.write(str(a.get("path", "")), str(a.get("content", "")))
        if call.tool == "patch":
            return self.patch(str(a.get("path", "")), str(a.get("old_string", "")), str(a.get("new_string", "")))
        return ToolResult.failure(f"Unknown file tool: {call.tool}")

    def read(self, path: str, offset: Any = None, limit: Any = None) -> ToolResult:
        text = self.files.get(path)
        if text is None:
            return ToolResult.failure(f"File not found: {path}")
        start = _int_arg(offset, 1, 1)
        count = _int_arg(limit, 500, 1)
        if start is None or count is None:
            return ToolResult.failure("offset and limit are line counts: offset ≥ 1, limit ≥ 1")
        lines = text.splitlines()
        total = len(lines)
        self.reads.append((path, start, count))
        changed = path in self._changed
        self._changed.discard(path)
        if start > max(total, 1):
            return ToolResult(text=f"File: {path} (no lines at offset {start}; the file has {total} lines)",
                              changed=changed)
        shown = lines[start - 1: start - 1 + count]
        end = start + len(shown) - 1
        body = "\n".join(f"{n:>6}|{line}" for n, line in enumerate(shown, start))
        out = f"File: {path} (lines {start}-{end} of {total})\n{body}"
        if end < total:
            out += f"\n… {total - end} more lines; read again with offset={end + 1} to continue."
        return ToolResult(text=out, changed=changed)

    def search(self, pattern: str, *, target: str = "content", path: str = ".", file_glob: Any = None,
               limit: Any = None, offset: Any = None) -> ToolResult:
        count = _int_arg(limit, 50, 1)
        skip = _int_arg(offset, 0, 0)
        if count is None or skip is None:
            return ToolResult.failure("limit ≥ 1 and offset ≥ 0 are counts of results")
        paths = [p for p in sorted(self.files) if self._under(p, path)
                 and (file_glob is None or fnmatch.fnmatch(p.rsplit("/", 1)[-1], str(file_glob)))]
        if target == "files":
            hits = [p for p in paths if fnmatch.fnmatch(p, pattern) or fnmatch.fnmatch(p.rsplit("/", 1)[-1], pattern)]
        elif target == "content":
            regex = self._patterns.get(pattern)
            if regex is None:
                try:
                    regex = re.compile(pattern)
                except re.error as exc:
                    return ToolResult.failure(f"Invalid regex pattern {pattern!r}: {exc}")
                self._patterns[pattern] = regex
            hits = [f"{p}:{n}: {line}" for p in paths
                    for n, line in enumerate(self.files[p].splitlines(), 1) if regex.search(line)]
        else:
            return ToolResult.failure(f"Unknown search target {target!r}; expected content or files")
        page = hits[skip: skip + count]
        if not page:
            return ToolResult(text=f"No matches for {pattern!r} (total {len(hits)}, offset {skip}).")
        head = f"Found {len(hits)} matches for {pattern!r} (showing {skip + 1}-{skip + len(page)})"
        more = (f"\n… more results: search again with offset={skip + len(page)}."
                if skip + len(page) < len(hits) else "")
        return ToolResult(text=head + ":\n" + "\n".join(page) + more)

    def write(self, path: str, content: str) -> ToolResult:
        if not path:
            return ToolResult.failure("write_file needs a path")
        created = path not in self.files
        self.files[path] = content
        self.mtimes[path] = self.clock.now_ms
        self._changed.discard(path)  # the agent's own write is not an outside change
        lines = len(content.splitlines())
        return ToolResult(text=f"{'Created' if created else 'Wrote'} {path} ({lines} lines).")

    def patch(self, path: str, old: str, new: str) -> ToolResult:
        text = self.files.get(path)
        if text is None:
            return ToolResult.failure(f"File not found: {path}")
        found = text.count(old) if old else 0
        if found != 1:
            what = "not found" if found == 0 else f"found {found} times; add context to make it unique"
            return ToolResult.failure(f"Could not patch {path}: old_string {what}.")
        self.files[path] = text.replace(old, new, 1)
        self.mtimes[path] = self.clock.now_ms
        self._changed.discard(path)
        return ToolResult(text=f"Patched {path}.")

    def modify(self, path: str, content: str) -> None:
        """Change a file outside the agent (an editor, another process): its next read says `changed`."""
        self.files[path] = content
        self.mtimes[path] = self.clock.now_ms
        self._changed.add(path)

    def is_changed(self, path: str) -> bool:
        return path in self._changed

    @staticmethod
    def _under(path: str, root: str) -> bool:
        root = root.strip("/")
        return root in ("", ".") or path == root or path.startswith(root + "/")
