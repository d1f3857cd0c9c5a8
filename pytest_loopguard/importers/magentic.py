"""Magentic-One logs (the Who&When dataset): `history[{role, content}]` with an Orchestrator and agents.

Roles are `human` (the task), `Orchestrator (thought)` (its own reasoning and ledger), `Orchestrator
(-> Agent)` (an instruction to an agent) and the agents' names (`WebSurfer`, `FileSurfer`, `Assistant`,
`ComputerTerminal`). Each agent reply is a call (labels.yaml's convention): tool = the agent's name,
args = `{action: <the reply's first line>}` (WebSurfer's "I clicked 'X'.", FileSurfer's "Address: ..."),
result text = the whole reply. Orchestrator instructions are messages with origin agent, never resets; so
is every other orchestrator line (`Orchestrator (termination condition)`: why it stopped), a message with
`x-event` naming the event, never a call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import ClassVar

from ..errors import TraceError
from .base import ImportedRun, Importer, Source
from .build import ImportedRunBuilder, exit_code, result

__all__ = ["MagenticOne"]

ORCHESTRATOR = "Orchestrator"
INSTRUCTION_RE = re.compile(r"^Orchestrator \(->\s*(.+?)\)$")
THOUGHT_ROLE = "Orchestrator (thought)"
HUMAN_ROLES = ("human", "user")
# a ComputerTerminal reply reporting a failed script (Magentic-One's code executor)
EXIT_RE = re.compile(r"^The script ran, then exited with Unix exit code: (-?\d+)|^exitcode: (-?\d+)")


def _first_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return line.strip()
    return ""


class MagenticOne(Importer):
    name: ClassVar[str] = "magentic-one"
    description: ClassVar[str] = "Magentic-One multi-agent log (Who&When): history[{role, content}]"

    def sniff(self, source: Source) -> bool:
        doc = source.parsed
        history = doc.get("history") if isinstance(doc, dict) else None
        if not isinstance(history, list):
            return False
        return any(isinstance(h, dict) and str(h.get("role", "")).startswith(ORCHESTRATOR) for h in history[:10])

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        doc = source.document
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            raise TraceError("expected a Magentic-One log: a JSON object with a 'history' list",
                             file=source.name, field="history")
        stem = source.stem
        run_id = f"magentic-{doc.get('question_ID') or stem}"
        b = ImportedRunBuilder(run_id, file=source.name, agent="Magentic-One",
                         description=f"Magentic-One log {stem}: {str(doc.get('question', ''))[:120]}")
        for key in ("question_ID", "level", "ground_truth", "is_corrected", "mistake_agent", "mistake_step",
                    "mistake_reason"):
            if doc.get(key) is not None:
                b.header_x[f"x-{key}"] = doc[key]
        for i, item in enumerate(doc["history"]):
            if not isinstance(item, dict):
                b.skip(f"history[{i}]: not an object")
                continue
            self._item(b, i, str(item.get("role", "")), str(item.get("content") or ""))
        yield b.build()

    def _item(self, b: ImportedRunBuilder, i: int, role: str, text: str) -> None:
        if role in HUMAN_ROLES:
            b.message("user", text, origin="user", index=i)
            return
        if role == THOUGHT_ROLE:
            b.message("assistant", text, origin="agent", name=ORCHESTRATOR, agent=ORCHESTRATOR, index=i)
            return
        m = INSTRUCTION_RE.match(role)
        if m:
            b.message("user", text, origin="agent", name=ORCHESTRATOR, agent=ORCHESTRATOR, index=i,
                      x={"x-to": m.group(1)})
            return
        if not role:
            b.skip(f"history[{i}]: no role")
            return
        if role.startswith(ORCHESTRATOR):
            # "Orchestrator (termination condition)" and any other event of the orchestrator's: its words,
            # not an acting agent's call (labels.yaml counts only the agents' replies)
            event = role.removeprefix(ORCHESTRATOR).strip().strip("()") or None
            b.message("assistant", text, origin="agent", name=ORCHESTRATOR, agent=ORCHESTRATOR, index=i,
                      x={"x-event": event} if event else None)
            return
        code = EXIT_RE.match(text)
        code_of = exit_code(code.group(1) or code.group(2)) if code else None
        b.tool(role, {"action": _first_line(text)}, index=i, agent=role, result=result(text, exit_code=code_of))
