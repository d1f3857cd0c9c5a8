"""Call targets: the tool table's target/shell/verb arguments, `run.target(call)`, and SWE-agent's open file."""

from __future__ import annotations

import pytest

from pytest_loopguard import PolicyError, resolve_policy
from pytest_loopguard.core._classify import Classifier, ToolRule, parse_rules, target_of
from pytest_loopguard.core._model import ToolCall, ToolResult
from pytest_loopguard.core._shell import Command
from pytest_loopguard.core._targets import NO_TARGET, CallTarget
from pytest_loopguard.runtime._guard import Guard


def target(tool: str, rules: tuple[ToolRule, ...] = (), **args: object) -> CallTarget:
    return target_of(ToolCall.of(tool, args), Classifier(rules))


def test_a_target_argument_names_the_file_and_the_kind_gives_the_effect() -> None:
    rules = parse_rules([{"tool": "open_file", "kind": "read", "target": "file"}])
    t = target("open_file", rules, file="./src/../a.py", line=3)
    assert (t.effect, t.verb, t.targets) == ("read", "open_file", ("a.py",))
    assert t.files("read") == ("a.py",)


def test_a_list_of_paths_gives_every_target() -> None:
    rules = parse_rules([{"tool": "read_many", "kind": "read", "target": "paths"}])
    assert target("read_many", rules, paths=["a.py", "b/c.py", 3]).targets == ("a.py", "b/c.py")


def test_built_in_locators_cover_shell_editor_and_file_tools() -> None:
    bash = target("bash", command="cd src && sed -n '1,5p' m.py")
    assert (bash.effect, bash.verb, bash.targets) == ("read", "sed", ("src/m.py",))
    assert target("execute_bash", command="git checkout a.py").effect == "revert"
    editor = target("str_replace_editor", command="str_replace", path="/repo/a.py", old_str="x", new_str="y")
    assert (editor.effect, editor.verb, editor.targets) == ("write", "str_replace", ("/repo/a.py",))
    assert target("str_replace_editor", command="view", path="/repo/a.py").effect == "read"
    nav = target("navigate", url="https://example.com/a")
    assert nav.targets == ("https://example.com/a",)
    assert target("read_file", path="a.py").targets == ("a.py",)


def test_the_coding_agents_tools_are_located_by_their_own_argument_names() -> None:
    # Claude Code, Codex CLI, Gemini CLI, Cline and aider, with the argument names their logs hold
    commit = target("Bash", command='git add -A && git commit -m "feat: x"')
    assert commit.verb == "git add"  # the key the failure tracker counts the rejected commits under
    assert target("exec_command", cmd="sed -n '1,5p' src/m.rs").targets == ("src/m.rs",)
    assert target("execute_command", command="cat a.py").targets == ("a.py",)
    # Codex's older `shell` tool takes an argv: the line after `bash -lc`, any other argv joined
    assert target("shell", command=["bash", "-lc", "cat a.py"]).targets == ("a.py",)
    assert target("shell", command=["cat", "b c.py"]).targets == ("b c.py",)
    assert target("shell", command=["bash", 3]).targets == ()  # not an argv: the tool itself
    for tool, arg in (("Read", "file_path"), ("Edit", "file_path"), ("Write", "file_path"),
                      ("NotebookEdit", "notebook_path"), ("read_file", "absolute_path"), ("read_file", "file_path"),
                      ("replace", "file_path"), ("write_to_file", "path"), ("replace_in_file", "path"),
                      ("edit", "path")):
        assert target(tool, **{arg: "src/a.py"}).targets == ("src/a.py",), (tool, arg)
    # `path` wins over the other names; an argument no locator names gives no target
    assert target("read_file", path="a.py", file_path="b.py").targets == ("a.py",)
    assert target("Read", filename="a.py").targets == ()


def test_tools_without_a_locator_have_no_target() -> None:
    t = target("browser_click", index=3)
    assert (t.effect, t.verb, t.targets) == ("other", "browser_click", ())
    not_a_line = target("bash", command={"not": "a line"})
    assert (not_a_line.effect, not_a_line.verb, not_a_line.targets) == ("other", "bash", ())
    assert CallTarget.of([]) is NO_TARGET


def test_a_policy_rule_overrides_the_built_in_locator_and_locators_change_no_kind() -> None:
    rules = parse_rules([{"tool": "bash", "shell": "cmd"}, {"tool": "bash", "kind": "observation"}])
    classifier = Classifier(rules)
    call = ToolCall.of("bash", {"cmd": "cat a.py", "command": "cat b.py"})
    assert target_of(call, classifier).targets == ("a.py",)
    assert classifier.kind(call) == "observation"
    assert Classifier(()).kind(call) == "action"  # the built-in locators give no kind


def test_conditional_locators_follow_the_arguments() -> None:
    rules = parse_rules([{"tool": "fs", "when": {"op": "read"}, "kind": "read", "target": "path"},
                         {"tool": "fs", "shell": "line"}])
    assert target("fs", rules, op="read", path="a").targets == ("a",)
    assert target("fs", rules, op="exec", line="cat b").targets == ("b",)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ([{"tool": "x"}], "tools[0].kind"),
        ([{"tool": "x", "target": ""}], "tools[0].target"),
        ([{"tool": "x", "shell": 3}], "tools[0].shell"),
        ([{"tool": "x", "target": "p", "shell": "c"}], "tools[0].shell"),
        ([{"tool": "x", "kind": "read", "verb": "c"}], "tools[0].verb"),
        ([{"tool": "x", "kind": "read", "paths": "c"}], "tools[0]"),
    ],
)
def test_bad_locator_rules_name_their_field(raw: object, field: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_rules(raw)
    assert info.value.field == field


def test_locator_rules_round_trip_and_load_in_a_policy() -> None:
    raw = [{"tool": "my_shell", "shell": "line"}, {"tool": "ed", "kind": "write", "target": "p", "verb": "op"}]
    assert [r.to_dict() for r in parse_rules(raw)] == raw
    policy = resolve_policy({"preset": "spacebot", "tools": raw})
    guard = Guard(policy)
    assert guard.run.target(ToolCall.of("my_shell", {"line": "cat q.py"})).files("read") == ("q.py",)


def test_run_target_is_cached_per_call_identity() -> None:
    guard = Guard(resolve_policy("default"))
    call = ToolCall.of("bash", {"command": "cat a.py"})
    first = guard.run.target(call)
    assert guard.run.target(ToolCall.of("bash", {"command": "cat a.py"})) is first


def test_swe_agent_open_file_is_tracked_per_run() -> None:
    # pydicom__pydicom-1458: create → edit 1:1 → ... → open numpy_handler.py → three failing `edit 287:295`
    guard = Guard(resolve_policy("default"))
    run = guard.run

    def step(line: str, *, ran: bool = True) -> CallTarget:
        call = ToolCall.of("bash", {"command": line})
        decision = guard.before_call(call)
        t = run.target(call)
        guard.after_call(call, ToolResult() if ran else None, decision)
        return t

    assert step("edit 1:1\nimport numpy\nend_of_edit").targets == ()  # nothing open yet
    assert step("create reproduce_bug.py").targets == ("reproduce_bug.py",)
    assert step("edit 1:1\nimport numpy\nend_of_edit").targets == ("reproduce_bug.py",)
    step("open pydicom/pixel_data_handlers/numpy_handler.py 293")
    edit = step("edit 287:295\n    x = 1\nend_of_edit")
    handler = "pydicom/pixel_data_handlers/numpy_handler.py"
    assert (edit.effect, edit.verb, edit.targets) == ("write", "edit", (handler,))
    assert step("goto 10").files("read") == (handler,)
    # a blocked `open` opened nothing
    step("open other.py", ran=False)
    assert step("goto 1").targets == (handler,)
    # a fresh run starts with no open file
    assert Guard(resolve_policy("default")).run.target(ToolCall.of("bash", {"command": "goto 1"})).targets == ()


def test_the_call_asked_last_resolves_against_the_file_open_now() -> None:
    # RunContext.target remembers the last call it answered; what it remembers is the target before the open file
    run = Guard(resolve_policy("default")).run
    goto = ToolCall.of("bash", {"command": "goto 10"})
    assert run.target(goto).targets == ()
    run.open_file = "a.py"
    assert run.target(goto).targets == ("a.py",)
    run.open_file = "b.py"
    assert run.target(goto).targets == ("b.py",)
    assert run.target(ToolCall.of("bash", {"command": "cat c.py"})).targets == ("c.py",)


def test_resolved_fills_only_commands_on_the_open_file() -> None:
    t = CallTarget.of([Command("cat", "read", ("b.py",)), Command("goto", "read", on_open=True)])
    assert t.resolved("a.py").files("read") == ("b.py", "a.py")
    assert t.resolved(None) is t
