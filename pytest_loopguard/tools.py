"""Tool classification: one table per policy that every engine consults.

A rule matches a tool name exactly or by glob, optionally with an argument condition, and gives a kind.
The first matching rule wins; unlisted tools are `action`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, final

from .errors import PolicyError, brief
from .limits import MAX_SETTING_ITEMS
from .model import ToolCall

__all__ = ["KINDS", "Classifier", "Kind", "ToolRule", "parse_rules"]

Kind = Literal["observation", "action", "navigation", "read", "search", "write", "done"]
KINDS: Final = ("observation", "action", "navigation", "read", "search", "write", "done")
_GLOB_CHARS: Final = frozenset("*?[")


@final
@dataclass(frozen=True, slots=True)
class ToolRule:
    """`{tool: NAME_OR_GLOB, when: {arg: value, ...}, kind: KIND}`."""

    tool: str
    kind: Kind
    when: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "kind": self.kind}
        if self.when:
            out["when"] = dict(self.when)
        return out


def parse_rules(raw: Any, *, source: str | None = None) -> tuple[ToolRule, ...]:
    """Rules from their YAML/mapping form; errors name the rule's index and field."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise PolicyError("expected a list of rules {tool, kind, when?}", field="tools", source=source)
    if len(raw) > MAX_SETTING_ITEMS:
        raise PolicyError(f"{len(raw)} rules; at most {MAX_SETTING_ITEMS}", field="tools", source=source)
    rules = []
    for i, item in enumerate(raw):
        where = f"tools[{i}]"
        if not isinstance(item, Mapping):
            raise PolicyError("expected a mapping {tool, kind, when?}", field=where, source=source)
        unknown = set(item) - {"tool", "kind", "when"}
        if unknown:
            raise PolicyError(
                f"unknown key(s) {brief(sorted(map(str, unknown)))}; expected tool, kind, when",
                field=where, source=source,
            )
        tool, kind, when = item.get("tool"), item.get("kind"), item.get("when")
        if not isinstance(tool, str) or not tool:
            raise PolicyError("expected a tool name or glob", field=f"{where}.tool", source=source)
        if kind not in KINDS:
            raise PolicyError(
                f"unknown kind {brief(kind)}; expected one of {', '.join(KINDS)}", field=f"{where}.kind", source=source
            )
        if when is not None and not isinstance(when, Mapping):
            raise PolicyError("expected a mapping of argument values", field=f"{where}.when", source=source)
        rules.append(ToolRule(tool, kind, dict(when) if when else None))
    return tuple(rules)


@final
class Classifier:
    """Classifies calls by a rule table; decisions without argument conditions are cached per tool name."""

    __slots__ = ("_cache", "_patterns", "rules")

    def __init__(self, rules: Sequence[ToolRule] = (), extra: Iterable[ToolRule] = ()) -> None:
        self.rules: tuple[ToolRule, ...] = (*extra, *rules)
        # (compiled glob or None for exact, rule) in priority order
        self._patterns: list[tuple[re.Pattern[str] | None, ToolRule]] = []
        for rule in self.rules:
            pattern = (
                re.compile(fnmatch.translate(rule.tool)) if _GLOB_CHARS.intersection(rule.tool) else None
            )
            self._patterns.append((pattern, rule))
        self._cache: dict[str, Kind] = {}

    def _candidates(self, tool: str) -> list[ToolRule]:
        return [
            rule
            for pattern, rule in self._patterns
            if (pattern.match(tool) is not None if pattern is not None else rule.tool == tool)
        ]

    def kind(self, call: ToolCall) -> Kind:
        """The kind of a call: first matching rule, else `action`."""
        tool = call.tool
        cached = self._cache.get(tool)
        if cached is not None:
            return cached
        candidates = self._candidates(tool)
        conditional = any(rule.when for rule in candidates)
        result: Kind = "action"
        for rule in candidates:
            if not rule.when or all(call.args.get(k) == v for k, v in rule.when.items()):
                result = rule.kind
                break
        if not conditional:
            self._cache[tool] = result
        return result

    def kind_of_tool(self, tool: str) -> Kind:
        """The kind of a tool name regardless of arguments (rules with conditions are skipped)."""
        for rule in self._candidates(tool):
            if not rule.when:
                return rule.kind
        return "action"

    def is_observation(self, call: ToolCall) -> bool:
        return self.kind(call) == "observation"
