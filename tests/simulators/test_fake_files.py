"""FakeFiles: line-based reads with offset/limit, paged search, write, patch, mtimes and outside changes."""

from __future__ import annotations

from loopguard_simulators import FakeFiles
from pytest_loopguard.core._model import ToolCall
from pytest_loopguard.runtime._guard import Clock

TEXT = "".join(f"line {n}\n" for n in range(1, 11))


def test_read_numbers_lines_and_pages_with_offset_and_limit() -> None:
    files = FakeFiles({"a.txt": TEXT})
    whole = files.read("a.txt").text or ""
    assert whole.splitlines()[0] == "File: a.txt (lines 1-10 of 10)"
    assert whole.splitlines()[1] == "     1|line 1"
    part = files.read("a.txt", offset=4, limit=3).text or ""
    assert part.splitlines() == ["File: a.txt (lines 4-6 of 10)", "     4|line 4", "     5|line 5", "     6|line 6",
                                 "… 4 more lines; read again with offset=7 to continue."]
    assert files.reads == [("a.txt", 1, 500), ("a.txt", 4, 3)]


def test_read_errors() -> None:
    files = FakeFiles({"a.txt": TEXT})
    assert files.read("nope").error == "File not found: nope"
    assert not files.read("a.txt", offset=0).ok
    assert (files.read("a.txt", offset=50).text or "").endswith("no lines at offset 50; the file has 10 lines)")


def test_search_content_pages_with_limit_and_offset() -> None:
    files = FakeFiles({"src/a.py": "x = 1\ny = 2\nx = 3\n", "src/b.py": "x = 4\n", "docs/x.md": "x\n"})
    first = files.search(r"^x", path="src", limit=2).text or ""
    assert first.splitlines() == ["Found 3 matches for '^x' (showing 1-2):", "src/a.py:1: x = 1", "src/a.py:3: x = 3",
                                  "… more results: search again with offset=2."]
    rest = files.search(r"^x", path="src", limit=2, offset=2).text or ""
    assert rest.splitlines()[1:] == ["src/b.py:1: x = 4"]
    assert (files.search("zzz").text or "").startswith("No matches")
    assert not files.search("(").ok


def test_search_files_by_glob() -> None:
    files = FakeFiles({"src/a.py": "", "src/b.md": ""})
    assert (files.search("*.py", target="files").text or "").splitlines()[1:] == ["src/a.py"]
    assert (files.search("x", file_glob="*.md").text or "").startswith("No matches")


def test_write_and_patch_set_mtimes_on_the_virtual_clock() -> None:
    clock = Clock()
    files = FakeFiles({"a.txt": "old\n"}, clock=clock)
    assert files.mtimes["a.txt"] == 0
    clock.advance(1500)
    assert files.write("b.txt", "new\n").text == "Created b.txt (1 lines)."
    assert files.mtimes["b.txt"] == 1500
    clock.advance(500)
    assert files.patch("a.txt", "old", "fresh").ok
    assert files.files["a.txt"] == "fresh\n" and files.mtimes["a.txt"] == 2000
    assert "not found" in (files.patch("a.txt", "missing", "x").error or "")


def test_an_outside_change_marks_the_next_read_changed_once() -> None:
    files = FakeFiles({"a.txt": "one\n"})
    assert files.read("a.txt").changed is False
    files.modify("a.txt", "two\n")
    assert files.is_changed("a.txt")
    assert files.read("a.txt").changed is True
    assert files.read("a.txt").changed is False


def test_execute_routes_the_file_tools() -> None:
    files = FakeFiles({"a.txt": TEXT})
    assert files.execute(ToolCall.of("read_file", {"path": "a.txt", "limit": 1})).ok
    assert files.execute(ToolCall.of("write_file", {"path": "c.txt", "content": "c"})).ok
    assert files.execute(ToolCall.of("patch", {"path": "c.txt", "old_string": "c", "new_string": "d"})).ok
    assert files.execute(ToolCall.of("search_files", {"pattern": "d"})).ok
    assert files.files["c.txt"] == "d"
