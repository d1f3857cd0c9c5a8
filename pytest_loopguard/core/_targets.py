"""A call's target: what it does (effect, verb) and the files or URLs it is about (`_classify.target_of` finds it).

Engines read it as `run.target(call)`. Counting reads of one file in any form is
`for f in run.target(call).files("read"): reads[f] += 1`, and a failing key is
`(call.tool, t.verb, t.targets)` with `t = run.target(call)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Final, final

from ._shell import Command, Effect

__all__ = ["NO_TARGET", "CallTarget", "Command", "Effect"]

# which command of a line speaks for it: one that names a file first, then by what it does (running a
# program is what a line is for, then changing files, then looking at them)
_RANK: Final[Mapping[str, int]] = {"run": 6, "revert": 5, "write": 4, "search": 3, "read": 2, "list": 1, "other": 0}
OPENERS: Final = frozenset({"open", "create"})  # SWE-agent commands that make a file the open one


@final
class CallTarget:
    """The call's main command (`effect`, `verb`, `targets`) and every command of it (`commands`).

    For a plain tool, `verb` is the tool name (or the editor sub-command) and there is one command.
    For a shell line, the main command is the first that names a file, preferring run > revert > write >
    search > read > list > other: `cd src && python -m pytest t.py` is a pytest run of `src/t.py`.
    A value: treat it as immutable (the run caches one per distinct call and engines share it).
    """

    # a plain slots class rather than a dataclass: what engines ask of every call (`on_open`, the files
    # of one effect) is worked out once here, since the run caches a target per distinct call
    __slots__ = ("commands", "effect", "effect_files", "on_open", "targets", "verb")

    def __init__(self, effect: Effect, verb: str, targets: tuple[str, ...] = (),
                 commands: tuple[Command, ...] = ()) -> None:
        self.effect = effect
        self.verb = verb
        self.targets = targets
        self.commands = commands
        # whether some command acts on the file SWE-agent has open (its target comes from the run)
        self.on_open = any(c.on_open for c in commands)
        files: dict[Effect, dict[str, None]] = {}
        for command in commands:
            if command.targets:
                files.setdefault(command.effect, {}).update(dict.fromkeys(command.targets))
        # effect -> the targets of the commands with that effect, once each (`files(effect)`; empty: no file)
        self.effect_files: Mapping[Effect, tuple[str, ...]] = {e: tuple(paths) for e, paths in files.items()}

    @classmethod
    def of(cls, commands: Iterable[Command]) -> CallTarget:
        cmds = tuple(commands)
        if not cmds:
            return NO_TARGET
        # one command (every plain tool) speaks for itself; max keeps the first of equals
        main = cmds[0] if len(cmds) == 1 else max(cmds, key=lambda c: (bool(c.targets), _RANK[c.effect]))
        return cls(main.effect, main.verb, main.targets, cmds)

    def files(self, *effects: Effect) -> tuple[str, ...]:
        """Every target of the commands with one of `effects` (of all commands when none is given), once each."""
        if len(effects) == 1:  # what engines ask on every call: computed with the target
            return self.effect_files.get(effects[0], ())
        seen: dict[str, None] = {}
        for command in self.commands:
            if not effects or command.effect in effects:
                seen.update(dict.fromkeys(command.targets))
        return tuple(seen)

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

    def _key(self) -> tuple[Effect, str, tuple[str, ...], tuple[Command, ...]]:
        return (self.effect, self.verb, self.targets, self.commands)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CallTarget) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"CallTarget(effect={self.effect!r}, verb={self.verb!r}, targets={self.targets!r}, "
                f"commands={self.commands!r})")


NO_TARGET: Final = CallTarget("other", "")
