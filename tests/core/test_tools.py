"""Tool classification (DESIGN.md §6): exact and glob rules, argument conditions, first match, default."""

from __future__ import annotations

import pytest

from pytest_loopguard import PolicyError, resolve_policy
from pytest_loopguard.core._classify import TOOL_CACHE_LIMIT, Classifier, ToolRule, parse_rules
from pytest_loopguard.core._model import ToolCall


def kind(classifier: Classifier, tool: str, **args: object) -> str:
    return classifier.kind(ToolCall.of(tool, args))


def test_exact_rule() -> None:
    c = Classifier(parse_rules([{"tool": "browser_snapshot", "kind": "observation"}]))
    assert kind(c, "browser_snapshot") == "observation"
    assert kind(c, "browser_snapshot_x") == "action"


def test_glob_rule() -> None:
    c = Classifier(parse_rules([{"tool": "browser_get_*", "kind": "observation"}, {"tool": "fs.?ead", "kind": "read"}]))
    assert kind(c, "browser_get_title") == "observation"
    assert kind(c, "browser_get") == "action"
    assert kind(c, "fs.read") == "read"


def test_argument_condition_computer_screenshot_is_an_observation() -> None:
    c = resolve_policy("default").classifier
    assert kind(c, "computer", action="screenshot") == "observation"
    assert kind(c, "computer", action="left_click", coordinate=[10, 20]) == "action"
    assert kind(c, "computer") == "action"
    # a decision that depends on arguments is not cached per tool name
    assert kind(c, "computer", action="screenshot") == "observation"
    assert c.kind_of_tool("computer") == "action"


def test_first_matching_rule_wins() -> None:
    c = Classifier(parse_rules([
        {"tool": "browser_snapshot", "kind": "observation"},
        {"tool": "browser_*", "kind": "action"},
        {"tool": "browser_snapshot", "kind": "read"},
    ]))
    assert kind(c, "browser_snapshot") == "observation"
    assert kind(c, "browser_click") == "action"


def test_extra_rules_are_consulted_before_the_table() -> None:
    c = Classifier([ToolRule("shell", "action")], extra=[ToolRule("shell", "observation")])
    assert kind(c, "shell") == "observation"


def test_unlisted_tools_are_actions() -> None:
    assert kind(Classifier(), "anything") == "action"
    assert kind(resolve_policy("default").classifier, "send_email") == "action"


def test_presets_kinds() -> None:
    c = resolve_policy("default").classifier
    got = {t: kind(c, t) for t in ("navigate", "read_file", "search_files", "write_file", "done", "tabs_context")}
    assert got == {"navigate": "navigation", "read_file": "read", "search_files": "search",
                   "write_file": "write", "done": "done", "tabs_context": "observation"}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"tool": "x"}, "tools"),
        ([{"tool": "x", "kind": "poll"}], "tools[0].kind"),
        ([{"tool": "", "kind": "action"}], "tools[0].tool"),
        ([{"tool": "x", "kind": "action", "if": {}}], "tools[0]"),
        ([{"tool": "x", "kind": "action", "when": "screenshot"}], "tools[0].when"),
    ],
)
def test_bad_rules_name_their_field(raw: object, field: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_rules(raw)
    assert info.value.field == field


def test_rule_round_trips_to_its_mapping() -> None:
    raw = [{"tool": "computer", "kind": "observation", "when": {"action": "screenshot"}}]
    assert [r.to_dict() for r in parse_rules(raw)] == raw


def test_the_per_tool_caches_stay_bounded_and_answer_the_same() -> None:
    # a policy's classifier lives as long as the process: a run naming a new tool with every call must not
    # grow it without bound, and a forgotten answer is worked out again the same
    rules = [ToolRule("read_*", kind="read"), ToolRule("shell", kind="action", shell="cmd")]
    classifier = Classifier(rules)
    names = [f"read_{i}" if i % 2 else f"tool_{i}" for i in range(3 * TOOL_CACHE_LIMIT)]
    kinds = [classifier.kind(ToolCall.of(name, {})) for name in names]
    locators = [classifier.locator(ToolCall.of(name, {})) for name in names]
    assert len(classifier.kinds) <= TOOL_CACHE_LIMIT and len(classifier._locator_cache) <= TOOL_CACHE_LIMIT
    assert kinds == ["read" if n.startswith("read_") else "action" for n in names]
    assert [classifier.kind(ToolCall.of(n, {})) for n in names[:10]] == kinds[:10]  # evicted: the same answer
    assert [classifier.locator(ToolCall.of(n, {})) for n in names[:10]] == locators[:10]
    assert classifier.locator(ToolCall.of("shell", {"cmd": "cat a.py"})) is not None
