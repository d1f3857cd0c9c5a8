"""read_tracker: consecutive read/search keys, shared vs separate streaks, the unchanged stub, regions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopguard import Guard, ToolCall, ToolResult, Verdict, resolve_policy
from pytest_loopguard.core._model import Message
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.engines.read_tracker import ReadTracker, Settings
from pytest_loopguard.runtime._guard import Decision

OTHER_ENGINES = ("loop_guard", "failure_tracker", "budget", "dedup", "context")
CONTENT = ToolResult(text="line 1\nline 2\n")


def tracker_guard(preset: str = "hermes", plugins: tuple[object, ...] = (), **settings: Any) -> Guard:
    """A Guard whose only engine is the read tracker of `preset` (with setting overrides)."""
    spec: dict[str, Any] = {"preset": preset, **dict.fromkeys(OTHER_ENGINES, False)}
    if settings:
        spec["read_tracker"] = settings
    return Guard(resolve_policy(spec), plugins=plugins)


def call(g: Guard, tool: str, result: ToolResult | None = CONTENT, **args: Any) -> Decision:
    """One call through the guard; it runs (and reports `result`) unless a verdict blocks it."""
    c = ToolCall.of(tool, args)
    before = g.before_call(c, result)
    return g.after_call(c, result if before.runs else None, before)


def read(g: Guard, path: str = "src/app.py", result: ToolResult | None = CONTENT, **args: Any) -> Decision:
    return call(g, "read_file", result, path=path, **args)


def search(g: Guard, pattern: str = "TODO", **args: Any) -> Decision:
    return call(g, "search_files", pattern=pattern, **args)


def tracker(g: Guard) -> ReadTracker:
    engine = g.run.engines["read_tracker"]
    assert isinstance(engine, ReadTracker)
    return engine


def reasons(d: Decision) -> list[str]:
    return [v.reason for v in d.verdicts]


def only(d: Decision) -> Verdict:
    assert len(d.verdicts) == 1, d.verdicts
    return d.verdicts[0]


# ---- consecutive layer ------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["hermes", "hermes-current", "default"])
def test_consecutive_identical_search_warns_at_3_blocks_from_4(preset: str) -> None:
    g = tracker_guard(preset)
    actions = [search(g).action for _ in range(6)]
    assert actions == ["allow", "allow", "warn", "block", "block", "block"]


@pytest.mark.parametrize("preset", ["hermes", "default"])
def test_consecutive_identical_read_warns_at_3_blocks_from_4(preset: str) -> None:
    g = tracker_guard(preset)
    decisions = [read(g) for _ in range(5)]
    assert [d.action for d in decisions] == ["allow", "allow", "warn", "block", "block"]
    warn = only(decisions[2])
    assert warn.reason == "read_tracker.repeat_warning" and "3 times" in warn.message
    assert warn.data["count"] == 3
    block = only(decisions[3])
    assert block.reason == "read_tracker.repeat_block"
    assert block.message.startswith("BLOCKED") and "4 times" in block.message
    assert "5 times" in only(decisions[4]).message


def test_blocked_read_gets_no_content_and_warned_read_does() -> None:
    g = tracker_guard("hermes")
    seen: list[bool] = []

    class Recorder:
        @hookimpl
        def loopguard_after_call(self, blocked: bool) -> None:
            seen.append(blocked)

    g.pm.register(Recorder())
    for _ in range(4):
        read(g)
    assert seen == [False, False, False, True]


def test_thresholds_come_from_settings() -> None:
    g = tracker_guard("hermes", warn_at=2, block_at=3)
    assert [read(g).action for _ in range(3)] == ["allow", "warn", "block"]


def test_warn_only_at_warn_at_then_nothing_until_block_at() -> None:
    g = tracker_guard("hermes", warn_at=2, block_at=5)
    assert [read(g).action for _ in range(6)] == ["allow", "warn", "allow", "allow", "block", "block"]


def test_a_streak_after_a_reset_starts_at_1_even_for_the_same_key() -> None:
    g = tracker_guard("hermes", warn_at=2, block_at=3)
    read(g)
    call(g, "terminal", command="ls")
    assert [read(g).action for _ in range(3)] == ["allow", "warn", "block"]


def test_read_key_defaults_offset_1_limit_500() -> None:
    g = tracker_guard("hermes")
    read(g)
    read(g, offset=1, limit=500)
    assert reasons(read(g, offset=1)) == ["read_tracker.repeat_warning"]


def test_read_key_is_pagination_aware() -> None:
    g = tracker_guard("hermes")
    for offset in (1, 501, 1001, 1501, 2001):
        assert read(g, offset=offset, limit=500).action == "allow"
    for limit in (100, 200, 300):
        assert read(g, limit=limit).action == "allow"


def test_read_key_uses_the_path_as_given() -> None:
    g = tracker_guard("hermes")
    read(g, "src/app.py")
    read(g, "src/app.py")
    assert read(g, "./src/app.py").action == "allow"


def test_any_other_tool_resets_the_count() -> None:
    g = tracker_guard("hermes")
    read(g)
    read(g)
    call(g, "terminal", command="ls")
    assert [read(g).action for _ in range(3)] == ["allow", "allow", "warn"]


def test_interleaved_reads_never_warn_consecutive_only() -> None:
    # the follow-up to seed 001: read → edit → verify flows and alternating files are not loops
    g = tracker_guard("hermes")
    for _ in range(10):
        assert read(g, "a.py").action == "allow"
        assert read(g, "b.py").action == "allow"


def test_shared_streak_a_read_between_identical_searches_resets_it() -> None:
    g = tracker_guard("hermes")
    for _ in range(5):
        assert search(g).action == "allow"
        assert read(g).action == "allow"


def test_separate_streaks_a_search_does_not_reset_the_read_streak() -> None:
    # the consecutive layer alone: default's per-file layer also sees these exact re-reads
    g = tracker_guard("default", exact_reread_warn_at=None)
    assert read(g).action == "allow"
    assert search(g).action == "allow"
    assert read(g).action == "allow"
    assert search(g).action == "allow"
    assert reasons(read(g)) == ["read_tracker.repeat_warning"]  # 3rd read of the region
    assert reasons(search(g)) == ["read_tracker.repeat_warning"]  # 3rd identical search
    assert reasons(read(g)) == ["read_tracker.repeat_block"]


def test_separate_streaks_reads_of_another_region_do_not_reset_the_search_streak() -> None:
    g = tracker_guard("default")
    search(g)
    read(g, "a.py")
    search(g)
    read(g, "b.py")
    assert search(g).action == "warn"


def test_separate_streaks_other_tools_reset_both() -> None:
    # the consecutive layer alone: default's per-file layer also sees these exact re-reads
    g = tracker_guard("default", exact_reread_warn_at=None)
    read(g)
    search(g)
    read(g)
    search(g)
    call(g, "write_file", path="other.py", content="x")
    assert read(g).action == "allow"
    assert search(g).action == "allow"


def test_hermes_search_key_ignores_pagination() -> None:
    # the seed's bug: paging through one search's results is counted as repeating it
    g = tracker_guard("hermes")
    actions = [search(g, offset=offset).action for offset in (0, 50, 100, 150)]
    assert actions == ["allow", "allow", "warn", "block"]


def test_hermes_current_search_key_has_limit_and_offset() -> None:
    g = tracker_guard("hermes-current")
    assert [search(g, offset=offset).action for offset in (0, 50, 100, 150)] == ["allow"] * 4
    assert [search(g, limit=limit).action for limit in (10, 20, 30)] == ["allow"] * 3


def test_search_defaults_fill_the_key() -> None:
    g = tracker_guard("hermes-current")
    search(g)
    search(g, target="content", path=".", limit=50, offset=0)
    assert search(g, file_glob=None).action == "warn"


@pytest.mark.parametrize(("field", "value"), [("target", "files"), ("path", "src"), ("file_glob", "*.py"),
                                              ("pattern", "FIXME")])
def test_search_key_fields_distinguish_searches(field: str, value: str) -> None:
    g = tracker_guard("hermes")
    search(g)
    search(g)
    args = {"pattern": "TODO", field: value}
    assert call(g, "search_files", **args).action == "allow"


def test_unhashable_argument_values_still_key() -> None:
    g = tracker_guard("hermes")
    actions = [search(g, file_glob=["*.py", "*.md"]).action for _ in range(3)]
    assert actions == ["allow", "allow", "warn"]


# ---- unchanged layer ----------------------------------------------------------------------------------
def test_unchanged_stub_second_read_is_a_stub_then_blocked() -> None:
    g = tracker_guard("hermes-current")
    decisions = [read(g) for _ in range(4)]
    assert decisions[0].action == "allow"
    stub = only(decisions[1])
    assert (stub.action, stub.reason) == ("block", "read_tracker.unchanged")
    assert "File unchanged since last read" in stub.message
    second = only(decisions[2])
    assert (second.action, second.reason) == ("block", "read_tracker.repeat_block")
    assert second.message.startswith("BLOCKED") and "3 times" in second.message  # N = hits + 1
    assert "4 times" in only(decisions[3]).message


def test_unchanged_stub_off_outside_hermes_current() -> None:
    for preset in ("hermes", "default"):
        g = tracker_guard(preset)
        assert [read(g).action for _ in range(2)] == ["allow", "allow"]


def test_stub_hits_do_not_advance_the_consecutive_count() -> None:
    g = tracker_guard("hermes-current")
    changed = ToolResult(text="new", changed=True)
    read(g)  # count 1
    read(g)  # stub; the count stays 1
    assert read(g, result=changed).action == "allow"  # count 2
    assert reasons(read(g, result=changed)) == ["read_tracker.repeat_warning"]  # count 3
    assert reasons(read(g, result=changed)) == ["read_tracker.repeat_block"]  # count 4


def test_a_stub_hit_leaves_the_shared_streak_untouched() -> None:
    g = tracker_guard("hermes-current")
    read(g)
    search(g)
    search(g)
    assert reasons(read(g)) == ["read_tracker.unchanged"]
    assert reasons(search(g)) == ["read_tracker.repeat_warning"]  # the 3rd search: the stub was not a key


def test_changed_file_is_read_again_not_stubbed() -> None:
    g = tracker_guard("hermes-current")
    read(g)
    assert read(g, result=ToolResult(text="edited elsewhere", changed=True)).action == "allow"


def test_a_full_read_clears_the_hits() -> None:
    g = tracker_guard("hermes-current")
    read(g)
    read(g)  # hit 1
    read(g, result=ToolResult(text="v2", changed=True))  # a full read
    assert reasons(read(g)) == ["read_tracker.unchanged"]  # hit 1 again, not a repeat block


def test_hits_survive_other_tools_until_a_full_read() -> None:
    g = tracker_guard("hermes-current")
    read(g)
    assert reasons(read(g)) == ["read_tracker.unchanged"]
    call(g, "terminal", command="make")
    assert reasons(read(g)) == ["read_tracker.repeat_block"]


def test_writing_the_path_forgets_its_regions() -> None:
    g = tracker_guard("hermes-current")
    read(g, "a.py")
    read(g, "a.py", offset=501)
    call(g, "patch", path="a.py", old="x", new="y")
    assert read(g, "a.py").action == "allow"
    assert read(g, "a.py", offset=501).action == "allow"


def test_writing_another_path_keeps_the_regions() -> None:
    g = tracker_guard("hermes-current")
    read(g, "a.py")
    call(g, "write_file", path="b.py", content="x")
    assert reasons(read(g, "a.py")) == ["read_tracker.unchanged"]


def test_the_stub_is_per_region() -> None:
    g = tracker_guard("hermes-current")
    read(g, "a.py")
    assert read(g, "a.py", offset=501).action == "allow"
    assert reasons(read(g, "a.py")) == ["read_tracker.unchanged"]


class BlockTool:
    """A plugin standing in for another engine that blocks one tool's calls."""

    def __init__(self, tool: str) -> None:
        self.tool = tool

    @hookimpl
    def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
        if call.tool == self.tool:
            return Verdict("test", "block", "test.block")
        return None


def test_a_blocked_write_did_not_write_the_file() -> None:
    g = tracker_guard("hermes-current", plugins=(BlockTool("write_file"),))
    read(g, "a.py")
    call(g, "write_file", path="a.py", content="x")
    assert reasons(read(g, "a.py")) == ["read_tracker.unchanged"]


def test_a_read_blocked_elsewhere_or_failed_is_not_learned() -> None:
    g = tracker_guard("hermes-current", plugins=(BlockTool("read_file"),))
    read(g)
    assert tracker(g).regions == []
    g = tracker_guard("hermes-current")
    read(g, result=ToolResult.failure("No such file"))
    assert read(g).action == "allow"
    assert tracker(g).regions == [("src/app.py", 1, 500)]


def test_compaction_forgets_what_was_unchanged() -> None:
    g = tracker_guard("hermes-current")
    read(g)
    g.hook.loopguard_compacted(view=g.run.view)
    assert read(g).action == "allow"
    assert reasons(read(g)) == ["read_tracker.unchanged"]  # learned again from that full read


def fresh_index(g: Guard) -> dict[Any, set[Any]]:
    """The unchanged layer's path index, checked against the capped region map it indexes."""
    t = tracker(g)
    grouped: dict[Any, set[Any]] = {}
    for region in t._fresh:
        grouped.setdefault(region[0], set()).add(region)
    assert t._fresh_by_path == grouped  # it indexes exactly the regions the map holds
    return t._fresh_by_path


def stub_after_eviction(max_keys: int) -> list[str]:
    g = tracker_guard("hermes-current", max_keys=max_keys)
    read(g, "a.py")
    read(g, "b.py")
    read(g, "c.py", offset=501)  # with a cap of 2 this third region evicts a.py's
    assert sum(len(regions) for regions in fresh_index(g).values()) == min(max_keys, 3)
    return reasons(read(g, "a.py"))


def test_unchanged_stub_index_shares_the_cap_at_its_edge() -> None:
    assert stub_after_eviction(3) == ["read_tracker.unchanged"]
    assert stub_after_eviction(2) == []  # evicted: a full read again, as docs/engines.md says
    g = tracker_guard("hermes-current", max_keys=2)
    read(g, "a.py")
    read(g, "b.py")
    read(g, "c.py")
    assert set(fresh_index(g)) == {"b.py", "c.py"}  # a.py's entry went with its only region
    call(g, "patch", path="c.py", old="x", new="y")  # a write still forgets what the index holds
    assert set(fresh_index(g)) == {"b.py"}
    assert read(g, "c.py").action == "allow"
    assert reasons(read(g, "b.py")) == ["read_tracker.unchanged"]


def test_unchanged_stub_index_stays_within_the_cap_over_many_paths() -> None:
    g = tracker_guard("hermes-current", max_keys=8)
    for i in range(1000):
        read(g, f"f{i % 300}.py", offset=1 + 500 * (i % 3))
        if i % 7 == 0:
            call(g, "write_file", path=f"f{(i * 13) % 300}.py", content="x")
    index = fresh_index(g)
    assert sum(len(regions) for regions in index.values()) == len(tracker(g)._fresh) == 8


def test_searches_are_never_stubbed() -> None:
    g = tracker_guard("hermes-current")
    assert [search(g).action for _ in range(2)] == ["allow", "allow"]


# ---- regions ------------------------------------------------------------------------------------------
def test_regions_are_the_ordered_set_of_reads_only() -> None:
    g = tracker_guard("default")
    read(g, "b.py")
    search(g)
    read(g, "a.py", offset=10, limit=20)
    read(g, "b.py")
    call(g, "write_file", path="b.py", content="x")
    assert tracker(g).regions == [("b.py", 1, 500), ("a.py", 10, 20)]


def test_regions_survive_compaction() -> None:
    g = tracker_guard("hermes-current")
    read(g, "a.py")
    read(g, "b.py")
    g.hook.loopguard_compacted(view=g.run.view)
    assert tracker(g).regions == [("a.py", 1, 500), ("b.py", 1, 500)]


def test_regions_is_a_copy() -> None:
    g = tracker_guard("hermes")
    read(g)
    tracker(g).regions.clear()
    assert tracker(g).regions == [("src/app.py", 1, 500)]


def test_runs_are_isolated() -> None:
    policy = resolve_policy({"preset": "hermes", "context": False})
    first, second = Guard(policy), Guard(policy)
    read(first)
    read(first)
    assert read(second).action == "allow"
    assert tracker(second).regions == [("src/app.py", 1, 500)]


# ---- presets ------------------------------------------------------------------------------------------
def test_preset_settings_follow_presets_md() -> None:
    hermes = resolve_policy("hermes").settings("read_tracker")
    current = resolve_policy("hermes-current").settings("read_tracker")
    default = resolve_policy("default").settings("read_tracker")
    for s in (hermes, current, default):
        assert (s.warn_at, s.block_at) == (3, 4)
        assert (s.read_offset_default, s.read_limit_default) == (1, 500)
        assert (s.search_target_default, s.search_path_default) == ("content", ".")
        assert (s.search_limit_default, s.search_offset_default) == (50, 0)
    assert (hermes.shared_streak, hermes.search_pagination, hermes.unchanged_stub) == (True, False, False)
    assert (current.shared_streak, current.search_pagination, current.unchanged_stub) == (True, True, True)
    assert (default.shared_streak, default.search_pagination, default.unchanged_stub) == (False, True, False)
    assert Settings() == Settings(shared_streak=False, search_pagination=True, unchanged_stub=False)


@pytest.mark.parametrize("preset", ["hermes", "hermes-current", "default"])
def test_preset_tool_table_kinds(preset: str) -> None:
    classifier = resolve_policy(preset).classifier
    kinds = {tool: classifier.kind(ToolCall.of(tool)) for tool in
             ("read_file", "search_files", "write_file", "patch", "terminal")}
    assert kinds == {"read_file": "read", "search_files": "search", "write_file": "write", "patch": "write",
                     "terminal": "action"}


# ---- property: the consecutive layer against the rule as PRESETS.md states it --------------------------
CALLS = st.sampled_from([
    ("read_file", {"path": "a.py"}), ("read_file", {"path": "a.py", "offset": 501}), ("read_file", {"path": "b.py"}),
    ("search_files", {"pattern": "x"}), ("search_files", {"pattern": "x", "offset": 50}),
    ("terminal", {"command": "ls"}), ("write_file", {"path": "a.py"}),
])


def expected_actions(calls: list[tuple[str, dict[str, Any]]], shared: bool, paginated: bool) -> list[str]:
    """Hermes' rule written out: one (or two) last-key/count pairs; 3 warns, 4+ blocks; others reset."""
    last: dict[str, Any] = {}
    count: dict[str, int] = {}
    out = []
    for tool, args in calls:
        if tool == "read_file":
            streak, key = "r", ("r", args["path"], args.get("offset", 1), args.get("limit", 500))
        elif tool == "search_files":
            page = (args.get("limit", 50), args.get("offset", 0)) if paginated else ()
            streak, key = "s", ("s", args["pattern"], *page)
        else:
            last.clear()
            count.clear()
            out.append("allow")
            continue
        streak = "one" if shared else streak
        count[streak] = count.get(streak, 0) + 1 if last.get(streak) == key else 1
        last[streak] = key
        out.append("block" if count[streak] >= 4 else "warn" if count[streak] == 3 else "allow")
    return out


@settings(max_examples=150, deadline=None)
@given(calls=st.lists(CALLS, max_size=30), preset=st.sampled_from(["hermes", "hermes-current", "default"]))
def test_consecutive_layer_matches_the_rule(calls: list[tuple[str, dict[str, Any]]], preset: str) -> None:
    s = resolve_policy(preset).settings("read_tracker")
    g = tracker_guard(preset, unchanged_stub=False, exact_reread_warn_at=None)  # the consecutive layer alone
    got = [call(g, tool, **args).action for tool, args in calls]
    assert got == expected_actions(calls, s.shared_streak, s.search_pagination)


# ---- per-file layer (default) ------------------------------------------------------------------------
def bash(g: Guard, command: str, text: str = "ok") -> Decision:
    return call(g, "bash", ToolResult(text=text), command=command)


def test_reads_of_one_file_in_any_range_and_form_warn_then_block() -> None:
    g = tracker_guard("default", file_reads_warn_at=4, file_reads_warn_every=2, file_reads_block_at=7)
    forms = ["sed -n '1,20p' pkg/a.py", "cat pkg/a.py", "nl -ba ./pkg/a.py | sed -n '5,9p'",
             "cd pkg && head -n 30 a.py", "sed -n '40,60p' pkg/a.py", "tail -n 5 pkg/a.py", "cat pkg/a.py"]
    decisions = []
    for i, command in enumerate(forms):
        decisions.append(bash(g, command, f"content {i}"))  # every range returns other text
        bash(g, "python reproduce.py")  # other calls between the reads
    assert [reasons(d) for d in decisions] == [[], [], [], ["read_tracker.file_reads"], [],
                                               ["read_tracker.file_reads"], ["read_tracker.file_reads_block"]]
    warn = only(decisions[3])
    assert warn.data == {"path": "pkg/a.py", "count": 4, "warn_at": 4, "block_at": 7}
    # the message names the file, how many times, and suggests another next step
    assert "You have read pkg/a.py 4 times in this task" in warn.message
    assert "make the change or run a check" in warn.message
    block = only(decisions[6])
    assert block.action == "block" and block.data["count"] == 7 and "pkg/a.py 7 times" in block.message
    assert tracker(g).file_reads == {"pkg/a.py": 7}


def test_exact_reread_with_other_calls_between_warns_at_the_third() -> None:
    g = tracker_guard("default", exact_reread_warn_at=3)
    view = {"command": "view", "path": "/w/parser.c"}
    got = []
    for i in range(4):
        c = ToolCall.of("str_replace_editor", view)
        before = g.before_call(c)
        got.append(g.after_call(c, ToolResult(text="static int x;"), before))
        bash(g, f"grep -n token{i} /w/parser.c")
    assert [reasons(d) for d in got] == [[], [], ["read_tracker.exact_reread"], []]
    v = only(got[2])
    assert v.data == {"path": "/w/parser.c", "count": 3, "warn_at": 3}
    assert "this exact read of /w/parser.c 3 times" in v.message and "same text" in v.message
    # a different text (the file changed) is another read; a read in a row is the consecutive layer's
    g = tracker_guard("default", exact_reread_warn_at=3)
    assert [reasons(bash(g, "cat f.py", t)) for t in ("a", "b", "a")] == [[], [], []]
    assert [reasons(bash(g, "cat g.py", "x")) for _ in range(3)] == [[], [], []]


def test_reverts_of_one_file_warn_at_the_threshold_and_every_as_many_more() -> None:
    g = tracker_guard("default", file_reverts_warn_at=2)
    got = []
    for command in ["cp src/s.py.backup src/s.py", "git checkout src/s.py", "git restore src/s.py",
                    "cp src/s.py.orig src/s.py"]:
        got.append(bash(g, command))
        bash(g, "python fix.py")
    assert [reasons(d) for d in got] == [[], ["read_tracker.file_reverts"], [], ["read_tracker.file_reverts"]]
    v = only(got[1])
    assert v.data == {"path": "src/s.py", "count": 2, "warn_at": 2}
    assert "You have put src/s.py back 2 times" in v.message and "fix it forward" in v.message


def test_a_persons_message_starts_the_per_file_counts_afresh_a_harness_one_does_not() -> None:
    g = tracker_guard("default", file_reads_warn_at=3)
    bash(g, "cat a.py")
    bash(g, "cat a.py", "other")
    g.message(Message("user", "output of your command", origin="harness"))
    assert tracker(g).file_reads == {"a.py": 2}
    g.message(Message("user", "now fix the other bug"))
    assert tracker(g).file_reads == {}


def test_the_per_file_layer_is_off_in_every_published_preset() -> None:
    for preset in ("hermes", "hermes-current"):
        s = resolve_policy(preset).settings("read_tracker")
        assert (s.file_reads_warn_at, s.file_reads_block_at, s.exact_reread_warn_at, s.file_reverts_warn_at) == (
            None, None, None, None)
    s = resolve_policy("default").settings("read_tracker")
    assert (s.file_reads_warn_at, s.file_reads_warn_every, s.file_reads_block_at, s.exact_reread_warn_at,
            s.file_reverts_warn_at) == (30, 10, 60, 3, 4)


def test_default_keys_the_coding_agents_reads_by_their_file_argument_hermes_by_path_only() -> None:
    # Claude Code's Read names `file_path`, Gemini CLI's read_file `absolute_path`: reads of two files
    # alternating are no repeat of one region under default
    g = tracker_guard("default")
    assert [call(g, "Read", file_path=f"src/{'ab'[i % 2]}.py").action for i in range(4)] == ["allow"] * 4
    for _ in range(2):
        call(g, "read_file", absolute_path="/repo/c.py")
    assert call(g, "read_file", absolute_path="/repo/c.py").action == "warn"  # the 3rd read of one region
    # Hermes reads `path` only, as it does: the same alternation is one region there (its literal behaviour)
    h = tracker_guard("hermes")
    assert [call(h, "read_file", file_path=f"src/{'ab'[i % 2]}.py").action for i in range(4)] == [
        "allow", "allow", "warn", "block"]
