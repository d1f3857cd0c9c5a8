"""The composite tool executor: routes `browser_*` to the fake browser, file tools to the fake files, `todo`
to a todo store and `done` to an acknowledgement; anything else is an unknown-tool error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, final

from pytest_loopguard.core._model import ToolCall, ToolResult

from .browser import FakeBrowser
from .files import FILE_TOOLS, FakeFiles

__all__ = ["TODO_STATUSES", "Todo", "TodoStore", "Toolbox"]

TODO_STATUSES: Final = ("pending", "in_progress", "completed", "cancelled")


@final
@dataclass(frozen=True, slots=True)
class Todo:
    id: str
    content: str
    status: str = "pending"


@final
class TodoStore:
    """Hermes' `todo` tool: `todo(todos=[{id, content, status}], merge=false)` replaces or merges the list."""

    def __init__(self) -> None:
        self.todos: dict[str, Todo] = {}

    def execute(self, call: ToolCall) -> ToolResult:
        raw = call.args.get("todos")
        if raw is not None:
            if not isinstance(raw, list):
                return ToolResult.failure("todos must be a list of {id, content, status}")
            parsed: list[Todo] = []
            for item in raw:
                if not isinstance(item, Mapping) or "id" not in item:
                    return ToolResult.failure("each todo needs an id")
                status = str(item.get("status", "pending"))
                if status not in TODO_STATUSES:
                    return ToolResult.failure(f"unknown todo status {status!r}; expected {', '.join(TODO_STATUSES)}")
                old = self.todos.get(str(item["id"]))
                content = str(item.get("content", old.content if old else ""))
                parsed.append(Todo(str(item["id"]), content, status))
            if not call.args.get("merge", False):
                self.todos = {}
            for todo in parsed:
                self.todos[todo.id] = todo
        return ToolResult(text=self.render())

    def active(self) -> list[Todo]:
        """Todos still to do (pending, in progress): what a context engine re-injects after a compaction."""
        return [t for t in self.todos.values() if t.status in ("pending", "in_progress")]

    def render(self) -> str:
        if not self.todos:
            return "No todos."
        marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
        return "\n".join(f"{marks[t.status]} {t.id}. {t.content}" for t in self.todos.values())


@final
class Toolbox:
    """One executor over the simulated environment (a part left out answers its tools with an error)."""

    def __init__(self, *, browser: FakeBrowser | None = None, files: FakeFiles | None = None,
                 todos: TodoStore | None = None) -> None:
        self.browser = browser
        self.files = files
        self.todos = todos if todos is not None else TodoStore()
        self.executed: list[ToolCall] = []

    def changed(self, call: ToolCall) -> bool:
        """Whether the file a read would return changed outside the agent since its last read."""
        return self.files is not None and call.tool == "read_file" and self.files.is_changed(
            str(call.args.get("path", "")))

    def execute(self, call: ToolCall) -> ToolResult:
        self.executed.append(call)
        tool = call.tool
        target: Any = None
        if tool.startswith("browser_"):
            target = self.browser
        elif tool in FILE_TOOLS:
            target = self.files
        elif tool == "todo":
            target = self.todos
        elif tool == "done":
            return ToolResult(text="Task marked done.")
        if target is None:
            return ToolResult.failure(f"Unknown tool: {tool}")
        result: ToolResult = target.execute(call)
        return result
