"""Properties of the read tracker over generated reads and searches (PRESETS.md hermes/default, DESIGN §7):
identical reads warn at `warn_at` and block from `block_at`; reads of other regions in between never do."""

from __future__ import annotations

from hypothesis import given, note
from hypothesis import strategies as st

from pytest_loopguard import Policy, ToolCall, Trace, replay, resolve_policy
from pytest_loopguard.io._format import dumps
from pytest_loopguard.pytest import _strategies as lgst

# Every argument of the key is given, so two calls with different arguments read different keys (a
# missing offset is offset 1, the default: {path} and {path, offset: 1} are one region).
READ_ARGS = st.fixed_dictionaries({
    "path": st.sampled_from(["src/app.py", "README.md", "src/db.py"]),
    "offset": st.sampled_from([1, 500, 1000]),
    "limit": st.sampled_from([100, 500]),
})
SEARCH_ARGS = st.fixed_dictionaries({
    "pattern": st.sampled_from(["raise", "def main", "import"]),
    "path": st.sampled_from([".", "src"]),
    "offset": st.sampled_from([0, 50]),
    "limit": st.sampled_from([50, 10]),
})
# hermes (the seed's version) keys a search without limit/offset: paging through results repeats it
HERMES_SEARCH_ARGS = st.fixed_dictionaries({
    "pattern": st.sampled_from(["raise", "def main", "import"]),
    "path": st.sampled_from([".", "src"]),
})
READS = lgst.tool_calls(tools=["read_file"], args=READ_ARGS)
SEARCHES = lgst.tool_calls(tools=["search_files"], args=SEARCH_ARGS)
HERMES_SEARCHES = lgst.tool_calls(tools=["search_files"], args=HERMES_SEARCH_ARGS)


def reader_verdicts(trace: Trace, policy: Policy | str) -> list[list[tuple[str, str]]]:
    return [[(v.action, v.reason) for v in s.verdicts if v.engine == "read_tracker"]
            for s in replay(trace, policy).steps]


def expected_run(n: int, warn_at: int, block_at: int) -> list[list[tuple[str, str]]]:
    """Count ≥ block_at → block (repeat_block); count == warn_at → warn (repeat_warning, content returned)."""
    out: list[list[tuple[str, str]]] = []
    for count in range(1, n + 1):
        if count >= block_at:
            out.append([("block", "read_tracker.repeat_block")])
        elif count == warn_at:
            out.append([("warn", "read_tracker.repeat_warning")])
        else:
            out.append([])
    return out


@given(lgst.policies(engines=("read_tracker",), max_threshold=7) | st.sampled_from(["default", "hermes"]).map(
    resolve_policy), lgst.identical_runs(READS | SEARCHES, max_size=12))
def test_identical_reads_and_searches_warn_then_block_where_the_thresholds_say(policy: Policy, trace: Trace) -> None:
    note(dumps(trace))
    s = policy.settings("read_tracker")
    only_reads = policy.with_overrides({"loop_guard": False})  # default's loop guard would stop a long run
    assert reader_verdicts(trace, only_reads) == expected_run(len(trace.steps), s.warn_at, s.block_at)


@given(lgst.interleaved_traces(calls=READS, max_size=20), st.sampled_from(["default", "hermes"]))
def test_reads_of_other_regions_in_between_never_repeat(trace: Trace, policy: str) -> None:
    note(dumps(trace))
    assert reader_verdicts(trace, policy) == [[] for _ in trace.steps]


@given(lgst.interleaved_traces(calls=SEARCHES, max_size=20), st.sampled_from(["default", "hermes-current"]))
def test_searches_for_other_pages_in_between_never_repeat(trace: Trace, policy: str) -> None:
    note(dumps(trace))
    assert reader_verdicts(trace, policy) == [[] for _ in trace.steps]


@given(lgst.interleaved_traces(calls=READS | HERMES_SEARCHES, max_size=20))
def test_hermes_shares_one_streak_between_reads_and_searches(trace: Trace) -> None:
    # hermes: a read between two identical searches resets the search streak (and the reverse)
    note(dumps(trace))
    assert reader_verdicts(trace, "hermes") == [[] for _ in trace.steps]


def test_default_keeps_separate_streaks_for_reads_and_searches() -> None:
    # default: an interleaved search does not reset a read streak, so the 3rd identical read warns
    read, search = ToolCall.of("read_file", {"path": "a.py"}), ToolCall.of("search_files", {"pattern": "x"})
    trace = lgst.build_trace([read, search, read, search, read])
    assert reader_verdicts(trace, "default")[4] == [("warn", "read_tracker.repeat_warning")]
    assert reader_verdicts(trace, "hermes") == [[]] * 5


def test_hermes_counts_paging_through_one_search_as_repeating_it() -> None:
    # PRESETS.md: `hermes` keys searches without limit/offset (the bug fixed on 2026-03-18)
    pages = [ToolCall.of("search_files", {"pattern": "raise", "offset": 50 * i}) for i in range(4)]
    trace = lgst.build_trace(pages)
    assert [[r for _, r in v] for v in reader_verdicts(trace, "hermes")] == [
        [], [], ["read_tracker.repeat_warning"], ["read_tracker.repeat_block"]]
    assert reader_verdicts(trace, "hermes-current") == [[]] * 4
