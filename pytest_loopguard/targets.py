"""A call's target: what it does (effect, verb) and the files or URLs it is about, from the policy's tool table.

Engines read it as `run.target(call)`. Counting reads of one file in any form is
`for f in run.target(call).files("read"): reads[f] += 1`, and a failing key is
`(call.tool, t.verb, t.targets)` with `t = run.target(call)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, final

from .model import ToolCall
from .shell import EDITOR_EFFECTS, Command, Effect, normalise_path, read_command_line
from .tools import Classifier, Kind

__all__ = ["NO_TARGET", "CallTarget", "Command", "Effect", "target_of"]

# which command of a line speaks for it: one that names a file first, then by what it does (running a
# program is what a line is for, then changing files, then looking at them)
_RANK: Final[Mapping[str, int]] = {"run": 6, "revert": 5, "write": 4, "search": 3, "read": 2, "list": 1, "other": 0}
_KIND_EFFECTS: Final[Mapping[Kind, Effect]] = {
    "read": "read", "observation": "read", "navigation": "read", "search": "search", "write": "write",
    "action": "other", "done": "other",
}
OPENERS: Final = frozenset({"open", "create"})  # SWE-agent commands that make a file the open one


@final
@dataclass(frozen=True, slots=True)
class CallTarget:
    """The call's main command (`effect`, `verb`, `targets`) and every command of it (`commands`).

    For a plain tool, `verb` is the tool name (or the editor sub-command) and there is one command.
    For a shell line, the main command is the first that names a file, preferring run > revert > write >
    search > read > list > other: `cd src && python -m pytest t.py` is a pytest run of `src/t.py`.
    """

    effect: Effect
    verb: str
    targets: tuple[str, ...] = ()
    commands: tuple[Command, ...] = ()

    @classmethod
    def of(cls, commands: Iterable[Command]) -> CallTarget:
        cmds = tuple(commands)
        if not cmds:
            return NO_TARGET
        main = max(cmds, key=lambda c: (bool(c.targets), _RANK[c.effect]))  # max keeps the first of equals
        return cls(main.effect, main.verb, main.targets, cmds)

    def files(self, *effects: Effect) -> tuple[str, ...]:
        """Every target of the commands with one of `effects` (of all commands when none is given), once each."""
        seen: dict[str, None] = {}
        for command in self.commands:
            if not effects or command.effect in effects:
                seen.update(dict.fromkeys(command.targets))
        return tuple(seen)

    @property
    def on_open(self) -> bool:
        """Whether some command acts on the file SWE-agent has open (its target comes from the run)."""
        return any(c.on_open for c in self.commands)

    def resolved(self, open_file: str | None) -> CallTarget:
        """This target with `open_file` filled in where a command acts on the open file."""
        if open_file is None or not self.on_open:
            return self
        return CallTarget.of(replace(c, targets=(open_file,)) if c.on_open else c for c in self.commands)

    def opened(self) -> str | None:
        """The file a SWE-agent `open F` / `create F` in this call makes the open one, if any."""
        for command in reversed(self.commands):
            if command.verb in OPENERS and command.targets:
                return command.targets[0]
        return None


NO_TARGET: Final = CallTarget("other", "")


def target_of(call: ToolCall, classifier: Classifier) -> CallTarget:
    """The target of `call` as the tool table locates it (before any open file is filled in)."""
    rule = classifier.locator(call)
    effect = _KIND_EFFECTS[classifier.kind(call)]
    if rule is None:
        return CallTarget.of([Command(call.tool, effect)])
    if rule.shell is not None:
        line = call.args.get(rule.shell)
        if isinstance(line, str):
            return CallTarget.of(read_command_line(line))
        return CallTarget.of([Command(call.tool, effect)])  # no line to read: the tool itself
    assert rule.target is not None
    verb = call.tool
    if rule.verb is not None:
        sub = call.args.get(rule.verb)
        if isinstance(sub, str) and sub:
            verb = sub
            effect = EDITOR_EFFECTS.get(sub, effect)
    targets = tuple(p for p in (normalise_path(v) for v in _strings(call.args.get(rule.target))) if p is not None)
    return CallTarget.of([Command(verb, effect, targets)])


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
