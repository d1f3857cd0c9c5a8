"""Property: any simulated run, under any preset, records a trace that replays to the same verdicts."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loopguard_simulators import AgentLoop, FakeBrowser, FakeFiles, FakeLLM, Toolbox
from pytest_loopguard.io._format import dumps, loads
from pytest_loopguard.runtime._policy import preset_names
from pytest_loopguard.runtime._replay import replay

SHOP = "https://shop.example"
LAMP = "https://shop.example/lamp"
PAGES = {
    SHOP: {"title": "Shop", "ready_after": 2, "snapshot_chars": 600,
           "elements": [{"index": 1, "href": LAMP}, {"index": 2, "name": "Filter"}]},
    LAMP: {"title": "Lamp", "snapshot_chars": 600, "elements": [{"index": 3, "name": "Add to cart"}]},
}
FILES = {"a.py": "".join(f"a{n}\n" for n in range(40)), "b.py": "b\n" * 300}

CALLS = st.sampled_from([
    {"tool": "browser_snapshot"},
    {"tool": "browser_click", "args": {"index": 1}},
    {"tool": "browser_click", "args": {"index": 2}},
    {"tool": "browser_click", "args": {"index": 3}},
    {"tool": "browser_navigate", "args": {"url": SHOP}},
    {"tool": "browser_tab_list"},
    {"tool": "read_file", "args": {"path": "a.py"}},
    {"tool": "read_file", "args": {"path": "b.py", "offset": 100, "limit": 50}},
    {"tool": "read_file", "args": {"path": "missing.py"}},
    {"tool": "search_files", "args": {"pattern": "a1"}},
    {"tool": "write_file", "args": {"path": "a.py", "content": "new\n"}},
    {"tool": "todo", "args": {"todos": [{"id": "1", "content": "read", "status": "in_progress"}]}},
    {"tool": "done"},
])
TURN = st.one_of(
    CALLS,
    st.lists(CALLS, min_size=2, max_size=3).map(lambda calls: {"calls": calls}),
    st.sampled_from(["500", "529", "429", "overflow", "invalid_request", "timeout"]).map(lambda e: {"error": e}),
)
POLICIES = st.sampled_from([n for n in preset_names() if n != "spacebot"])


def timeline(result: Any) -> list[Any]:
    # every figure but `input_tokens`: the provider's count of a recorded prompt, unknown live before the call
    return [(s.index, s.action, [(v.engine, v.action, v.reason, v.message,
                                  {k: x for k, x in v.data.items() if k != "input_tokens"}) for v in s.verdicts])
            for s in result.steps]


@settings(max_examples=80, deadline=None)
@given(script=st.lists(TURN, min_size=1, max_size=25), policy=POLICIES,
       window=st.sampled_from([None, 1500, 4000]), max_turns=st.integers(1, 30))
def test_recorded_runs_replay_to_the_same_verdicts(script: list[Any], policy: str, window: int | None,
                                                   max_turns: int) -> None:
    loop = AgentLoop(
        FakeLLM([*script, {"answer": "done"}], window_tokens=window),
        Toolbox(browser=FakeBrowser(PAGES, start=SHOP), files=FakeFiles(FILES)),
        policy,
        prompt="Buy the lamp and note it in a.py.",
        context={"window_tokens": window} if window else None,
        max_turns=max_turns,
    )
    sim = loop.run()
    again = replay(loads(dumps(sim.recorded))[0])
    assert timeline(again) == timeline(sim.result)
    assert (again.outcome, again.stopped_at, again.stopped_by) == (sim.result.outcome, sim.result.stopped_at,
                                                                  sim.result.stopped_by)
