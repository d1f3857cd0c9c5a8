"""Bounded engine state: the LRU map, and each engine's per-key maps at the edge of their `max_keys` cap.

Each edge test runs the same calls under a cap that holds every key and under one key fewer: the verdict
that depended on the evicted key changes as docs/engines.md ("Bounded state") says it does.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_loopguard import Guard, PolicyError, ToolCall, ToolResult, resolve_policy
from pytest_loopguard.core._model import Task
from pytest_loopguard.engines.budget import Budget
from pytest_loopguard.engines.failure_tracker import FailureTracker
from pytest_loopguard.engines.loop_guard import LoopGuard
from pytest_loopguard.engines.lru import DEFAULT_MAX_KEYS, LRUMap
from pytest_loopguard.engines.read_tracker import ReadTracker
from pytest_loopguard.runtime._guard import Decision

ONLY = {"loop_guard": False, "read_tracker": False, "failure_tracker": False, "budget": False, "dedup": False,
        "context": False}


def guard(preset: str, engine: str, task: Task | None = None, **settings: Any) -> Guard:
    """A Guard running `engine` alone under `preset`, with setting overrides."""
    spec: dict[str, Any] = {**ONLY, "preset": preset, engine: settings or True}
    return Guard(resolve_policy(spec), task=task)


def call(g: Guard, tool: str, text: str = "ok", ok: bool = True, **args: Any) -> Decision:
    c = ToolCall.of(tool, args)
    result = ToolResult(text=text) if ok else ToolResult.failure(text)
    before = g.before_call(c, result)
    after = g.after_call(c, result if before.runs else None, before)
    return Decision(after.action, before.verdicts + after.verdicts) if after is not before else before


def reasons(d: Decision) -> list[str]:
    return [v.reason for v in d.verdicts]


# ---- the map -----------------------------------------------------------------------------------------
def test_a_new_key_past_the_cap_evicts_the_least_recently_used() -> None:
    m: LRUMap[str, int] = LRUMap(3)
    for k in "abc":
        m[k] = 1
    assert m.get("b") == 1  # a read marks nothing: a is still the oldest
    m["a"] = 2  # an assignment marks a used: b is now the oldest
    m["d"] = 1
    assert list(m) == ["c", "a", "d"] and m.evicted == 1 and m["a"] == 2
    m["c"] = 2  # an update marks c used, evicts nothing
    m["e"] = 1
    assert list(m) == ["d", "c", "e"] and m.evicted == 2
    assert m.get("b") is None and m.get("b", 0) == 0 and "b" not in m


def test_increment_counts_marks_the_key_used_and_evicts_only_for_a_new_key() -> None:
    m: LRUMap[str, int] = LRUMap(2)
    assert (m.increment("a"), m.increment("b"), m.increment("a")) == (1, 1, 2)
    assert list(m) == ["b", "a"] and m.evicted == 0  # counting a marked it: b is now the oldest
    assert m.increment("c") == 1
    assert dict(m) == {"a": 2, "c": 1} and list(m) == ["a", "c"] and m.evicted == 1
    assert m.increment("b") == 1  # evicted: counted from nothing again


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="cap"):
        LRUMap(0)


@pytest.mark.parametrize("engine", ["loop_guard", "failure_tracker", "read_tracker", "budget"])
def test_max_keys_is_an_engine_setting_with_a_generous_default(engine: str) -> None:
    assert resolve_policy("default").settings(engine).max_keys == DEFAULT_MAX_KEYS == 10_000
    with pytest.raises(PolicyError, match="max_keys"):
        resolve_policy({"preset": "default", engine: {"max_keys": 0}})


def test_loop_guard_ping_pong_needs_no_map_below_the_ring() -> None:
    # a cap below the ring: ping-pong reads the ring's own calls, so it still sees the cycle and its tools
    g = guard("default", "loop_guard", ring_size=6, max_keys=1)
    got = [call(g, tool, index=1) for tool in ("click", "type") * 3]
    assert reasons(got[-1]) == ["loop_guard.ping_pong"]  # period 2 seen 3 times: at ping_pong_min_repeats, a block
    assert got[-1].verdicts[0].data["tools"] == ["click", "type"]
    engine = g.run.engines["loop_guard"]
    assert isinstance(engine, LoopGuard) and len(engine._outcomes) == 1


# ---- each engine at the edge -------------------------------------------------------------------------
def loop_guard_last(max_keys: int) -> list[str]:
    g = guard("default", "loop_guard", ring_size=2, outcome_block_threshold=2, max_keys=max_keys)
    call(g, "a", "same")
    call(g, "b", "b")
    call(g, "c", "c")  # with a cap of 2 this third identity evicts a's outcome count
    call(g, "a", "same")  # a's outcome count: 2 (poisoned) or 1 again
    return reasons(call(g, "a", "same"))


def test_loop_guard_eviction_forgets_an_outcome_count() -> None:
    assert loop_guard_last(3) == ["loop_guard.identical_outcome"]
    assert loop_guard_last(2) == []


def unchanged_output_last(max_keys: int) -> list[str]:
    """The check `pytest` gets another output (which marks it used), a third check comes, then pytest's output
    stays the same across edits: its count survives at a cap of 2 only if the other output marked it used."""
    g = guard("default", "loop_guard", max_keys=max_keys, unchanged_output_warn_at=3,
              outcome_block_threshold=100)

    def edit(i: int) -> None:
        call(g, "str_replace_editor", "edited", command="str_replace", path="a.py", old_str=f"x{i}", new_str=f"y{i}")

    call(g, "bash", "3 failed", command="pytest")
    call(g, "bash", "ok", command="ruff check")
    edit(0)
    call(g, "bash", "2 failed", command="pytest")  # another output: pytest is now the most recently used
    call(g, "bash", "ok", command="mypy")  # a third check: at a cap of 2 ruff's entry goes, not pytest's
    edit(1)
    call(g, "bash", "2 failed", command="pytest")
    edit(2)
    return reasons(call(g, "bash", "2 failed", command="pytest"))


def test_loop_guard_another_output_marks_a_check_used() -> None:
    assert unchanged_output_last(3) == unchanged_output_last(2) == ["loop_guard.unchanged_output"]
    assert unchanged_output_last(1) == []  # mypy's entry evicted pytest's


def failure_tracker_last(max_keys: int) -> list[str]:
    g = guard("hermes-current", "failure_tracker", max_keys=max_keys)
    call(g, "terminal", "boom", ok=False, command="make")
    call(g, "browser_click", "boom", ok=False, index=1)  # a second signature and tool evict the first at cap 1
    return reasons(call(g, "terminal", "boom", ok=False, command="make"))


def test_failure_tracker_eviction_forgets_an_exact_failure_count() -> None:
    assert failure_tracker_last(2) == ["failure_tracker.exact_failure"]
    assert failure_tracker_last(1) == []


def test_failure_tracker_tools_with_failing_keys_stay_within_twice_the_cap() -> None:
    g = guard("default", "failure_tracker", max_keys=3, failing_key_warn_at=2, failing_key_streak_warn_at=None)
    engine = g.run.engines["failure_tracker"]
    assert isinstance(engine, FailureTracker)
    for i in range(100):  # a new tool failing each time: its key evicts an older tool's
        call(g, f"tool_{i}", "boom", ok=False, path=f"f{i}.py")
        # every tool with a key held is known (a success of it must forget the key), and few others are
        assert {key[0] for key in engine.key_failures} <= engine._failing_tools
        assert len(engine._failing_tools) <= 6
    assert len(engine.key_failures) == 3
    # the tools whose keys are held are still known: a success of the last one forgets its key, so its next
    # failure is a first one again (no warning at 2)
    call(g, "tool_99", "fixed", path="f99.py")
    assert reasons(call(g, "tool_99", "boom", ok=False, path="f99.py")) == []
    assert reasons(call(g, "tool_99", "boom", ok=False, path="f99.py")) == ["failure_tracker.failing_key"]


def read_tracker_last(max_keys: int) -> list[str]:
    g = guard("default", "read_tracker", file_reads_warn_at=2, max_keys=max_keys)
    call(g, "bash", command="cat a.py")
    call(g, "bash", command="cat b.py")
    return reasons(call(g, "bash", "other", command="cat a.py"))


def test_read_tracker_eviction_forgets_a_file_read_count() -> None:
    assert read_tracker_last(2) == ["read_tracker.file_reads"]
    assert read_tracker_last(1) == []


def budget_navigations(max_keys: int) -> list[list[str]]:
    g = guard("openchrome", "budget", task=Task("Buy the cheapest flight"), max_same_url_navigations=1,
              max_consecutive_same_tool=None, max_keys=max_keys)
    urls = ("https://a.example/", "https://b.example/", "https://a.example/")
    return [reasons(call(g, "navigate", url=url)) for url in urls]


def test_budget_eviction_forgets_a_url_navigation_count() -> None:
    # a limit of 1: the first navigation to a URL is at the limit ("near"), the second exceeds it
    assert budget_navigations(2) == [["budget.near"], ["budget.near"], ["budget.same_url_navigations"]]
    # evicted, a's count starts again: its second navigation is judged as a first one
    assert budget_navigations(1) == [["budget.near"], ["budget.near"], ["budget.near"]]


def test_read_tracker_regions_drop_the_first_read_and_keep_read_order() -> None:
    g = guard("default", "read_tracker", max_keys=2)
    for path in ("a.py", "b.py", "a.py", "c.py"):
        call(g, "read_file", path=path)
    engine = g.run.engines["read_tracker"]
    assert isinstance(engine, ReadTracker)
    assert [r[0] for r in engine.regions] == ["b.py", "c.py"]


# ---- 100k distinct calls -----------------------------------------------------------------------------
N = 50
CALLS = 100_000


def test_state_stays_within_the_cap_after_100k_distinct_calls() -> None:
    spec: dict[str, Any] = {
        "preset": "default", "dedup": False, "context": False,
        "loop_guard": {"max_keys": N, "ring_size": 30},
        "failure_tracker": {"max_keys": N, "guardrails": True, "failing_key_warn_at": 3},
        "read_tracker": {"max_keys": N, "file_reads_warn_at": 3, "exact_reread_warn_at": 2},
        "budget": {"max_keys": N},
    }
    g = Guard(resolve_policy(spec), task=Task("t"))
    for i in range(CALLS):
        tool = ("read_file", "navigate", "terminal")[i % 3]
        args = {"path": f"f{i}.py"} if tool == "read_file" else {"url": f"https://x{i}.example/"} \
            if tool == "navigate" else {"command": f"cat g{i}.py"}
        call(g, tool, f"out {i}", ok=tool != "terminal", **args)
    lg, ft, rt, bu = (g.run.engines[n] for n in ("loop_guard", "failure_tracker", "read_tracker", "budget"))
    assert isinstance(lg, LoopGuard) and isinstance(ft, FailureTracker)
    assert isinstance(rt, ReadTracker) and isinstance(bu, Budget)
    maps = {
        "loop_guard._outcomes": lg._outcomes,
        "failure_tracker.exact_failures": ft.exact_failures, "failure_tracker.key_failures": ft.key_failures,
        "read_tracker._regions": rt._regions, "read_tracker.file_reads": rt.file_reads,
        "read_tracker._rereads": rt._rereads, "budget._navigations": bu._navigations,
    }
    sizes = {name: len(m) for name, m in maps.items()}
    assert all(0 < size <= N for size in sizes.values()), sizes
    # every map was full: the cap, not a lack of keys, is what held it
    assert all(size == N for size in sizes.values()), sizes
