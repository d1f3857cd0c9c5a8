"""Tool classification: one table per policy that every engine consults.

A rule matches a tool name exactly or by glob, optionally with an argument condition, and gives a kind,
and/or where the call's target is: `target: ARG` names the argument holding the file or URL (`verb: ARG`
the argument holding an editor sub-command such as `view`), `shell: ARG` the argument holding a shell
command line (read by `shell.read_command_line`). Kinds and targets are looked up separately: for each,
the first matching rule that gives one wins. Unlisted tools are `action`. Every table ends with
`LOCATORS`, the common shell and file tools' arguments, so a policy only names targets that differ.
`target_of` reads a call's target (a `CallTarget`) by the table. `repeat: poll | paged | exempt` declares how
the loop guard reads the tool's repetition (docs/engines.md, "Declared repetition").
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, final

from ..errors import PolicyError, brief
from ._limits import MAX_SETTING_ITEMS
from ._model import ToolCall
from ._shell import EDITOR_EFFECTS, Command, Effect, normalise_path, read_command_line
from ._targets import CallTarget

__all__ = ["KINDS", "LOCATORS", "REPEATS", "Classifier", "Kind", "Repeat", "ToolRule", "parse_rules", "target_of"]

Kind = Literal["observation", "action", "navigation", "read", "search", "write", "done"]
KINDS: Final = ("observation", "action", "navigation", "read", "search", "write", "done")
# how a tool's repetition is read: `poll` (expected to repeat, within a poll budget), `paged` (a changed result
# is progress), `exempt` (invisible to the repetition rules)
Repeat = Literal["poll", "paged", "exempt"]
REPEATS: Final = ("poll", "paged", "exempt")
# tool names whose kind and locator are cached per classifier (a policy's runs share it for the process's
# life, and a run may name a new tool with every call): past this, the caches start again
TOOL_CACHE_LIMIT: Final = 4096
_GLOB_CHARS: Final = frozenset("*?[")
_TARGET_KEYS: Final = ("target", "shell", "verb")
_RULE_KEYS: Final = ("tool", "kind", "when", *_TARGET_KEYS, "repeat")
# what a call of each kind does to its target, when its tool's rule names no shell line or editor verb
_KIND_EFFECTS: Final[Mapping[Kind, Effect]] = {
    "read": "read", "observation": "read", "navigation": "read", "search": "search", "write": "write",
    "action": "other", "done": "other",
}


@final
@dataclass(frozen=True, slots=True)
class ToolRule:
    """`{tool: NAME_OR_GLOB, when: {arg: value, ...}, kind: KIND}`."""

    tool: str
    kind: Kind | None  # None: the rule only says where the target is
    when: Mapping[str, Any] | None = None
    target: str | None = None  # the argument holding the call's file or URL
    shell: str | None = None  # the argument holding a shell command line
    verb: str | None = None  # the argument holding an editor sub-command (view, create, str_replace, ...)
    # other arguments that hold the target when `target` is absent (built-in locators only: the coding agents
    # name a file `path`, `file_path` or `absolute_path` for the same tool name)
    also: tuple[str, ...] = ()
    repeat: Repeat | None = None  # declared repetition (None: the rule says nothing about it)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool}
        if self.kind is not None:
            out["kind"] = self.kind
        if self.when:
            out["when"] = dict(self.when)
        for key in _TARGET_KEYS:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.repeat is not None:
            out["repeat"] = self.repeat
        return out

    @property
    def locates(self) -> bool:
        """Whether the rule says where a call's target is."""
        return self.target is not None or self.shell is not None


def parse_rules(raw: Any, *, source: str | None = None) -> tuple[ToolRule, ...]:
    """Rules from their YAML/mapping form; errors name the rule's index and field."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise PolicyError("expected a list of rules {tool, kind?, when?, target?, shell?, verb?, repeat?}",
                          field="tools", source=source)
    if len(raw) > MAX_SETTING_ITEMS:
        raise PolicyError(f"{len(raw)} rules; at most {MAX_SETTING_ITEMS}", field="tools", source=source)
    rules = []
    for i, item in enumerate(raw):
        where = f"tools[{i}]"
        if not isinstance(item, Mapping):
            raise PolicyError("expected a mapping {tool, kind?, when?, target?, shell?, verb?, repeat?}", field=where,
                              source=source)
        unknown = set(item) - set(_RULE_KEYS)
        if unknown:
            raise PolicyError(
                f"unknown key(s) {brief(sorted(map(str, unknown)))}; expected {', '.join(_RULE_KEYS)}",
                field=where, source=source,
            )
        tool, kind, when = item.get("tool"), item.get("kind"), item.get("when")
        if not isinstance(tool, str) or not tool:
            raise PolicyError("expected a tool name or glob", field=f"{where}.tool", source=source)
        locators = {key: item.get(key) for key in _TARGET_KEYS}
        for key, value in locators.items():
            if value is not None and (not isinstance(value, str) or not value):
                raise PolicyError("expected an argument name", field=f"{where}.{key}", source=source)
        if locators["target"] is not None and locators["shell"] is not None:
            raise PolicyError("a rule names either a target argument or a shell argument, not both",
                              field=f"{where}.shell", source=source)
        if locators["verb"] is not None and locators["target"] is None:
            raise PolicyError("'verb' goes with 'target' (the argument holding the path)", field=f"{where}.verb",
                              source=source)
        repeat = item.get("repeat")
        if repeat is not None and repeat not in REPEATS:
            raise PolicyError(f"unknown repeat {brief(repeat)}; expected one of {', '.join(REPEATS)}",
                              field=f"{where}.repeat", source=source)
        if kind is None and locators["target"] is None and locators["shell"] is None and repeat is None:
            raise PolicyError(f"a rule gives a kind, a target or a repeat; expected kind one of {', '.join(KINDS)}",
                              field=f"{where}.kind", source=source)
        if kind is not None and kind not in KINDS:
            raise PolicyError(
                f"unknown kind {brief(kind)}; expected one of {', '.join(KINDS)}", field=f"{where}.kind", source=source
            )
        if when is not None and not isinstance(when, Mapping):
            raise PolicyError("expected a mapping of argument values", field=f"{where}.when", source=source)
        rules.append(ToolRule(tool, kind, dict(when) if when else None, target=locators["target"],
                              shell=locators["shell"], verb=locators["verb"], repeat=repeat))
    return tuple(rules)


def _locators() -> tuple[ToolRule, ...]:
    # the research agents' tools, then the coding agents' (Claude Code, Codex CLI, Gemini CLI, Cline/Roo,
    # aider as their importers name them): where a call's command line or file is, so the loop guard's and
    # failure tracker's keys are `git commit` or `src/app.py`, not the bare tool name
    shell_tools = {
        "bash": "command", "execute_bash": "command", "run": "command", "terminal": "command", "shell": "command",
        "cmd": "command", "run_shell_command": "command", "Bash": "command", "execute_command": "command",
        "exec_command": "cmd", "local_shell": "command",
    }
    editor_tools = ("str_replace_editor", "str_replace_based_edit_tool")
    path_tools = (
        "read_file", "write_file", "edit_file", "patch", "search_files",
        "Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "replace", "write_to_file", "replace_in_file",
        "list_files", "edit",
    )
    path_args = ("file_path", "absolute_path", "notebook_path")
    return (
        *(ToolRule(t, None, shell=arg) for t, arg in shell_tools.items()),
        *(ToolRule(t, None, target="path", verb="command") for t in editor_tools),
        *(ToolRule(t, None, target="path", also=path_args) for t in path_tools),
        *(ToolRule(t, None, target="url") for t in ("navigate", "browser_navigate")),
    )


# consulted after every policy's own rules; they give no kind, so they never change a classification
LOCATORS: Final = _locators()


@final
class Classifier:
    """Classifies calls by a rule table; decisions without argument conditions are cached per tool name."""

    __slots__ = ("_locator_cache", "_patterns", "_repeat_cache", "declares_repeat", "kinds", "rules", "targets")

    def __init__(self, rules: Sequence[ToolRule] = (), extra: Iterable[ToolRule] = ()) -> None:
        self.rules: tuple[ToolRule, ...] = (*extra, *rules, *LOCATORS)
        # (compiled glob or None for exact, rule) in priority order
        self._patterns: list[tuple[re.Pattern[str] | None, ToolRule]] = []
        for rule in self.rules:
            pattern = (
                re.compile(fnmatch.translate(rule.tool)) if _GLOB_CHARS.intersection(rule.tool) else None
            )
            self._patterns.append((pattern, rule))
        # tool name -> kind, for tools whose kind needs no arguments (`RunContext.kind` reads it first)
        self.kinds: dict[str, Kind] = {}
        self._locator_cache: dict[str, ToolRule | None] = {}
        # whether any rule declares repetition: a table without one never looks it up (`repeat`)
        self.declares_repeat = any(rule.repeat is not None for rule in self.rules)
        self._repeat_cache: dict[str, Repeat | None] = {}
        # call fingerprint -> its target before any open file is filled in (`RunContext.target` fills it):
        # a pure function of the call and this table, so every run of the policy shares it
        self.targets: dict[str, CallTarget] = {}

    def _candidates(self, tool: str) -> list[ToolRule]:
        return [
            rule
            for pattern, rule in self._patterns
            if (pattern.match(tool) is not None if pattern is not None else rule.tool == tool)
        ]

    def kind(self, call: ToolCall) -> Kind:
        """The kind of a call: first matching rule, else `action`."""
        tool = call.tool
        cached = self.kinds.get(tool)
        if cached is not None:
            return cached
        candidates = [rule for rule in self._candidates(tool) if rule.kind is not None]
        conditional = any(rule.when for rule in candidates)
        result: Kind = "action"
        for rule in candidates:
            if rule.kind is not None and _holds(rule, call):
                result = rule.kind
                break
        if not conditional:
            if len(self.kinds) >= TOOL_CACHE_LIMIT:
                self.kinds.clear()
            self.kinds[tool] = result
        return result

    def kind_of_tool(self, tool: str) -> Kind:
        """The kind of a tool name regardless of arguments (rules with conditions are skipped)."""
        for rule in self._candidates(tool):
            if not rule.when and rule.kind is not None:
                return rule.kind
        return "action"

    def locator(self, call: ToolCall) -> ToolRule | None:
        """The first matching rule that says where the call's target is, or None."""
        tool = call.tool
        if tool in self._locator_cache:
            return self._locator_cache[tool]
        candidates = [rule for rule in self._candidates(tool) if rule.locates]
        found = next((rule for rule in candidates if _holds(rule, call)), None)
        if not any(rule.when for rule in candidates):
            if len(self._locator_cache) >= TOOL_CACHE_LIMIT:
                self._locator_cache.clear()
            self._locator_cache[tool] = found
        return found

    def repeat(self, call: ToolCall) -> Repeat | None:
        """The call's declared repetition: the first matching rule that declares one, else None."""
        if not self.declares_repeat:
            return None
        tool = call.tool
        if tool in self._repeat_cache:
            return self._repeat_cache[tool]
        candidates = [rule for rule in self._candidates(tool) if rule.repeat is not None]
        found = next((rule.repeat for rule in candidates if _holds(rule, call)), None)
        if not any(rule.when for rule in candidates):
            if len(self._repeat_cache) >= TOOL_CACHE_LIMIT:
                self._repeat_cache.clear()
            self._repeat_cache[tool] = found
        return found

    def is_observation(self, call: ToolCall) -> bool:
        return self.kind(call) == "observation"


def _holds(rule: ToolRule, call: ToolCall) -> bool:
    return not rule.when or all(call.args.get(k) == v for k, v in rule.when.items())


def target_of(call: ToolCall, classifier: Classifier) -> CallTarget:
    """The target of `call` as the tool table locates it (before any open file is filled in)."""
    rule = classifier.locator(call)
    effect = _KIND_EFFECTS[classifier.kind(call)]
    if rule is None:
        return CallTarget.of([Command(call.tool, effect)])
    if rule.shell is not None:
        line = shell_line(call.args.get(rule.shell))
        if line is not None:
            return CallTarget.of(read_command_line(line))
        return CallTarget.of([Command(call.tool, effect)])  # no line to read: the tool itself
    assert rule.target is not None
    verb = call.tool
    if rule.verb is not None:
        sub = call.args.get(rule.verb)
        if isinstance(sub, str) and sub:
            verb = sub
            effect = EDITOR_EFFECTS.get(sub, effect)
    value = call.args.get(rule.target)
    if value is None:
        value = next((call.args[arg] for arg in rule.also if arg in call.args), None)
    targets = tuple(p for p in (normalise_path(v) for v in _strings(value)) if p is not None)
    return CallTarget.of([Command(verb, effect, targets)])


def shell_line(value: Any) -> str | None:
    """The command line a shell call runs: a string, or an argv list (Codex's `shell` tool writes
    `["bash", "-lc", LINE]`: the line; any other argv is joined as a shell would read it back)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) == 3 and value[1] in ("-c", "-lc", "-ic"):
            return str(value[2])
        return shlex.join(value)
    return None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
