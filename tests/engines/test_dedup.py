"""The dedup engine: one full result per polling tool in the prompt view, the transcript untouched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_loopguard.core._conversation import Entry
from pytest_loopguard.core._model import LLMCall, ToolCall, ToolResult, Verdict, combine
from pytest_loopguard.io._format import trace_from_mapping
from pytest_loopguard.runtime._guard import Guard
from pytest_loopguard.runtime._policy import resolve_policy
from pytest_loopguard.runtime._replay import replay

SNAPSHOT = ToolCall.of("browser_snapshot")
TABS = ToolCall.of("browser_tab_list")


def model_call(g: Guard, calls: Sequence[ToolCall] = ()) -> list[Verdict]:
    """One successful `llm` step as replay drives it."""
    llm = LLMCall(output_tokens=5)
    g.end_turn()
    verdicts = [*g.before_llm(llm).verdicts, *g.llm_result(llm).verdicts]
    if combine(verdicts) != "fail":
        verdicts += g.start_turn(list(calls), llm).verdicts
    return verdicts


def results(g: Guard, *calls: tuple[ToolCall, str]) -> list[Verdict]:
    """A model call asking for `calls`, and their results (text as given); the model call's verdicts."""
    verdicts = model_call(g, [c for c, _ in calls])
    for call, text in calls:
        before = g.before_call(call, ToolResult(text=text))
        g.after_call(call, ToolResult(text=text) if before.runs else None, before)
    return verdicts


def dedup_verdicts(verdicts: Sequence[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.engine == "dedup"]


def full_results(entries: Sequence[Entry], tool: str) -> list[str]:
    return [e.text for e in entries if e.role == "tool" and e.tool == tool and not e.replaced]


def guard(policy: Any = "spacebot") -> Guard:
    return Guard(resolve_policy(policy), keep_transcript=True)


def test_keeps_exactly_one_full_result_per_tool() -> None:
    g = guard()
    verdicts: list[Verdict] = []
    for i in range(4):
        verdicts += results(g, (SNAPSHOT, f"tree {i}"), (ToolCall.of("browser_click", {"index": i}), f"clicked {i}"))
        verdicts += results(g, (TABS, f"tabs {i}"))
    verdicts += model_call(g)
    view = g.run.view.entries
    assert full_results(view, "browser_snapshot") == ["tree 3"]
    assert full_results(view, "browser_tab_list") == ["tabs 3"]
    assert full_results(view, "browser_click") == [f"clicked {i}" for i in range(4)]  # not a dedup tool
    stale = [e for e in view if e.replaced]
    assert {e.text for e in stale} == {
        "[browser_snapshot output superseded by a later call]",
        "[browser_tab_list output superseded by a later call]",
    }
    # each model call replaces what the results since the previous one superseded: 3 + 3 in all
    mine = dedup_verdicts(verdicts)
    assert {(v.action, v.reason) for v in mine} == {("allow", "dedup.superseded")}
    assert sum(v.data["replaced"] for v in mine) == 6
    assert {t for v in mine for t in v.data["tools"]} == {"browser_snapshot", "browser_tab_list"}


def test_structure_stays_and_the_transcript_is_untouched() -> None:
    g = guard()
    results(g, (SNAPSHOT, "first tree"))
    results(g, (SNAPSHOT, "second tree"))
    transcript = list(g.run.transcript.entries)
    model_call(g)
    view = g.run.view.entries
    assert len(view) == len(transcript)  # the model call asked for nothing: no entry added
    for shown, kept in zip(view, transcript, strict=True):
        assert (shown.role, shown.tool, shown.call_id, shown.turn) == (kept.role, kept.tool, kept.call_id, kept.turn)
    assert g.run.transcript.entries == transcript
    assert [e.text for e in g.run.transcript.entries if e.role == "tool"] == ["first tree", "second tree"]
    assert not any(e.replaced for e in g.run.transcript.entries)


def test_several_results_in_one_turn_are_handled_one_by_one() -> None:
    g = guard()
    results(g, (SNAPSHOT, "a"), (TABS, "t1"), (SNAPSHOT, "b"), (SNAPSHOT, "c"), (TABS, "t2"))
    (v,) = dedup_verdicts(model_call(g))
    assert v.data["replaced"] == 3
    assert full_results(g.run.view.entries, "browser_snapshot") == ["c"]
    assert full_results(g.run.view.entries, "browser_tab_list") == ["t2"]


def test_no_verdict_when_nothing_is_replaced_and_replaced_entries_are_not_redone() -> None:
    g = guard()
    results(g, (SNAPSHOT, "a"))
    assert dedup_verdicts(model_call(g)) == []  # one result: nothing superseded
    results(g, (SNAPSHOT, "b"))
    (v,) = dedup_verdicts(model_call(g))
    assert v.data["replaced"] == 1
    placeholder = next(e for e in g.run.view.entries if e.replaced)
    assert dedup_verdicts(model_call(g)) == []  # nothing new: no verdict, no rewrite
    assert next(e for e in g.run.view.entries if e.replaced) is placeholder
    results(g, (SNAPSHOT, "c"))
    (v,) = dedup_verdicts(model_call(g))
    assert v.data["replaced"] == 1  # only "b": "a" was already a placeholder
    assert next(e for e in g.run.view.entries if e.replaced) is placeholder


class CountingList(list[Entry]):
    """A list that counts item reads, to check the engine only looks at new entries."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        CountingList.reads += 1
        return super().__getitem__(index)


def test_work_per_model_call_is_proportional_to_new_entries() -> None:
    g = guard()
    for i in range(50):
        results(g, (ToolCall.of("shell", {"cmd": str(i)}), "ok"))
    g.run.view.replace_entries(CountingList(g.run.view.entries))
    model_call(g)  # the first call scans everything once
    CountingList.reads = 0
    results(g, (SNAPSHOT, "tree"))  # two new entries: the assistant call and the result
    model_call(g)
    assert CountingList.reads <= 4


def test_a_blocked_snapshot_is_a_result_too() -> None:
    # Spacebot replaces all but the most recent result per tool, whatever that result says
    g = guard({"preset": "spacebot", "loop_guard": False})
    results(g, (SNAPSHOT, "tree"))
    g.end_turn()
    model_call(g, [SNAPSHOT])
    g.after_call(SNAPSHOT, None)  # blocked
    model_call(g)
    assert full_results(g.run.view.entries, "browser_snapshot") == ["Error: blocked"]


def test_after_a_compaction_the_kept_result_is_still_the_latest() -> None:
    policy = {"preset": "spacebot", "loop_guard": False}
    g = Guard(resolve_policy(policy), context={"window_tokens": 200})
    for i in range(4):
        results(g, (ToolCall.of("shell", {"cmd": str(i)}), "x" * 200))
    results(g, (SNAPSHOT, "tree 1"))
    verdicts = model_call(g)
    assert any(v.reason == "context.compact" for v in verdicts)
    assert full_results(g.run.view.entries, "browser_snapshot") == ["tree 1"]
    results(g, (SNAPSHOT, "tree 2"))
    (v,) = dedup_verdicts(model_call(g))
    assert v.data["replaced"] == 1
    assert full_results(g.run.view.entries, "browser_snapshot") == ["tree 2"]


def test_a_compaction_that_keeps_the_view_length_is_rescanned() -> None:
    # default: compact at 80% of 1000; 6 entries fold 2 into a summary and gain an injected message,
    # so the view has 6 entries again and every index after the summary has moved
    g = Guard(resolve_policy("default"), context={"window_tokens": 1000})
    read = ToolCall.of("read_file", {"path": "a.py"})
    model_call(g, [read])
    g.after_call(read, ToolResult(text="r", tokens=400))
    model_call(g, [SNAPSHOT])
    g.after_call(SNAPSHOT, ToolResult(text="tree 1", tokens=400))
    results(g, (ToolCall.of("browser_click", {"index": 1}), "clicked"))
    verdicts = model_call(g, [SNAPSHOT])
    assert any(v.reason == "context.compact" for v in verdicts) and len(g.run.view) == 6 + 1
    g.after_call(SNAPSHOT, ToolResult(text="tree 2", tokens=400))
    (v,) = dedup_verdicts(model_call(g))
    assert v.data["replaced"] == 1
    view = g.run.view.entries
    assert full_results(view, "browser_snapshot") == ["tree 2"]
    assert [e.role for e in view if e.replaced and e.role not in ("summary", "user")] == ["tool"]


@pytest.mark.parametrize(("preset", "enabled"), [
    ("spacebot", True), ("spacebot-branch", True), ("spacebot-channel", True), ("default", True),
    ("hermes", False), ("hermes-current", False), ("claw-code", False),
])
def test_presets_enable_dedup_of_snapshots_and_tab_lists(preset: str, enabled: bool) -> None:
    policy = resolve_policy(preset)
    assert policy.enabled("dedup") is enabled
    if enabled:
        assert policy.settings("dedup").tools == ("browser_snapshot", "browser_tab_list")


def test_placeholder_and_tools_are_settings() -> None:
    policy = {"preset": "default", "dedup": {"tools": ["shell"], "placeholder": "<{tool} elided>"},
              "loop_guard": False, "budget": False, "failure_tracker": False}
    g = guard(policy)
    results(g, (ToolCall.of("shell", {"cmd": "ls"}), "a"))
    results(g, (ToolCall.of("shell", {"cmd": "ls -l"}), "b"))
    results(g, (SNAPSHOT, "s1"), (SNAPSHOT, "s2"))
    model_call(g)
    assert [e.text for e in g.run.view.entries if e.role == "tool"] == ["<shell elided>", "b", "s1", "s2"]


def test_dedup_in_a_replayed_trace() -> None:
    steps: list[dict[str, Any]] = []
    for i in range(3):
        steps += [{"llm": {"output_tokens": 5}}, {"tool": "browser_snapshot", "result": {"tokens": 3000}},
                  {"tool": "browser_click", "args": {"index": i}}]
    steps.append({"llm": {"output_tokens": 5}})
    trace = trace_from_mapping({"loopguard": 1, "name": "d", "policy": "spacebot", "steps": steps})
    result = replay(trace)
    got = [(s.index, v.data["replaced"]) for s in result.steps for v in s.verdicts if v.engine == "dedup"]
    assert got == [(6, 1), (9, 1)]  # at step 3 there is one snapshot: nothing superseded yet
