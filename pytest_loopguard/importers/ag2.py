"""AG2 / AutoGen group chats: `history[{name, role, content}]` (e.g. Who&When's CaptainAgent logs).

A code executor's reply ("exitcode: 1 (execution failed)\nCode output: ...") is the call: tool
`execute_code`, args `{code: <the code blocks of the message that proposed it>}`, result with the exit
code. Every other speaker's message is a message with origin agent and its `name` (the first one, the
task, is the person's prompt), so no agent's words reset what a person's prompt resets.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import ClassVar

from ..errors import TraceError
from .base import ImportedRun, Importer, Source
from .build import ImportedRunBuilder, exit_code, result, text_of

__all__ = ["AG2GroupChat"]

EXEC_RE = re.compile(r"^\s*exitcode:\s*(-?\d+)(?:\s*\(([^)]*)\))?")
CODE_RE = re.compile(r"```[\w+-]*\n(.*?)```", re.DOTALL)
TOOL = "execute_code"
TERMINATE = "TERMINATE"


class AG2GroupChat(Importer):
    name: ClassVar[str] = "ag2-groupchat"
    description: ClassVar[str] = "AG2/AutoGen group chat: history[{name, role, content}]"

    def sniff(self, source: Source) -> bool:
        doc = source.parsed
        history = doc.get("history") if isinstance(doc, dict) else doc
        if not isinstance(history, list) or not history:
            return False
        items = [h for h in history[:10] if isinstance(h, dict)]
        return bool(items) and all("name" in h and "content" in h for h in items) and all(
            "action" not in h and "observation" not in h for h in items)

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        doc = source.document
        history = doc.get("history") if isinstance(doc, dict) else doc
        if not isinstance(history, list):
            raise TraceError("expected a group chat: a JSON object with a 'history' list of {name, role, content}",
                             file=source.name, field="history")
        meta = doc if isinstance(doc, dict) else {}
        stem = source.stem
        run_id = str(meta.get("question_ID") or meta.get("id") or stem)
        b = ImportedRunBuilder(run_id, file=source.name, agent="AG2 group chat", description=f"AG2 group chat {stem}")
        for key, value in meta.items():
            if key != "history" and isinstance(value, (str, int, float, bool)):
                b.header_x[f"x-{key}"] = value
        proposal: tuple[str, str] | None = None  # (speaker, code) of the last message with code blocks
        for i, item in enumerate(history):
            if not isinstance(item, dict):
                b.skip(f"history[{i}]: not an object")
                continue
            name = str(item.get("name") or item.get("role") or "?")
            text = text_of(item.get("content"))
            run = EXEC_RE.match(text)
            if run:
                code = proposal[1] if proposal else ""
                if proposal is None:
                    b.warn(f"history[{i}]: an execution with no proposed code before it")
                b.tool(TOOL, {"code": code}, index=i, agent=name,
                       result=result(text, exit_code=exit_code(run.group(1))),
                       x={"x-proposed_by": proposal[0]} if proposal else None)
                proposal = None
                continue
            blocks = CODE_RE.findall(text)
            if blocks:
                proposal = (name, "\n".join(block.rstrip("\n") for block in blocks))
            if i == 0 or str(item.get("role")) == "human":
                b.message("user", text, origin="user", index=i)
            elif text.strip().endswith(TERMINATE) and i == len(history) - 1:
                b.done(index=i, text=text, agent=name)
            else:
                b.message("assistant", text, origin="agent", name=name, agent=name, index=i)
        yield b.build()
