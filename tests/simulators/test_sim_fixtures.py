"""The simulation fixtures: factories sharing a virtual clock, wired by agent_loop under the active policy."""

from __future__ import annotations

import pytest

from pytest_loopguard.pytest._sim_fixtures import SimulationKit

pytest_plugins = ["pytester"]


def test_the_kit_wires_its_latest_fakes_into_the_loop() -> None:
    kit = SimulationKit("spacebot")
    kit.make_browser({"https://x.example": {"ready_after": 3, "elements": [{"index": 1, "name": "Go"}]}})
    kit.make_llm(behaviour="poller", url="https://x.example", target=1)
    sim = kit.make_loop(max_turns=10).run()
    assert sim.result.outcome == "completed" and sim.result.policy == "spacebot"
    assert kit.clock.now_ms > 0  # the loop ran on the kit's clock
    files = kit.make_files({"a": "1"})
    assert files.clock is kit.clock


def test_the_kit_needs_a_model_and_names_behaviours() -> None:
    kit = SimulationKit()
    with pytest.raises(ValueError, match="no model"):
        kit.make_loop()
    with pytest.raises(ValueError, match="unknown behaviour"):
        kit.make_llm(behaviour="daydreamer")
    with pytest.raises(TypeError, match="need a behaviour name"):
        kit.make_llm([{"answer": "x"}], target=1)


def test_fixtures_in_a_test_run(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        test_sim="""
import pytest

def test_poller(fake_llm, fake_browser, agent_loop):
    fake_browser({"https://x.example": {"ready_after": 2, "elements": [{"index": 1, "name": "Go"}]}})
    fake_llm(behaviour="poller", url="https://x.example", target=1)
    sim = agent_loop(max_turns=10).run()
    assert sim.result.outcome == "completed"
    assert sim.result.policy == "default"

@pytest.mark.loopguard(policy="qa-agent")
def test_marker_policy(fake_llm, fake_files, agent_loop):
    fake_files({"a.txt": "x"})
    fake_llm([{"tool": "read_file", "args": {"path": "gone.txt"}}] * 4)
    result = agent_loop().run().result
    assert result.policy == "qa-agent"
    assert result.outcome == "stopped" and result.stopped_by == "failure_tracker"

@pytest.mark.loopguard(policy="spacebot", dedup=False)
def test_marker_overrides(fake_llm, agent_loop):
    fake_llm([{"answer": "ok"}])
    sim = agent_loop().run()
    assert sim.recorded.policy == {"preset": "spacebot", "dedup": False}

@pytest.mark.loopguard(policy="spacebot", dedup=False)
def test_docs_example(fake_browser, fake_llm, agent_loop):
    fake_browser({"https://x.example": {"ready_after": 8, "snapshot_chars": 4000,
                                        "elements": [{"index": 1, "name": "Go"}]}})
    fake_llm(behaviour="poller", url="https://x.example", target=1)
    sim = agent_loop(max_turns=20, context={"window_tokens": 10000}).run()
    assert sim.result.counts().get("compact", 0) >= 1
"""
    )
    # a subprocess keeps the inner session's plugins out of this one's plugin manager
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
