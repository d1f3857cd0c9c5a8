"""Scenario files: every one runs, meets its expectations, and its recording replays to the same verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopguard_simulators import simulate
from pytest_loopguard.core._expect import check
from pytest_loopguard.core._model import ReplayResult, Verdict
from pytest_loopguard.errors import ScenarioError, TraceError
from pytest_loopguard.io._format import dumps, load, loads
from pytest_loopguard.runtime._replay import replay

CORPUS = Path(__file__).resolve().parents[2] / "traces" / "scenarios"
SCENARIOS = sorted(CORPUS.glob("*.yaml"))


def verdict(v: Verdict) -> dict[str, object]:
    # `input_tokens` is the provider's count of a recorded prompt: a live run cannot know it before the
    # call (the loop passes None), a replay of its recording does. Every other figure must match.
    out = v.to_dict()
    out["data"] = {k: x for k, x in out["data"].items() if k != "input_tokens"}
    return out


def timeline(result: ReplayResult) -> list[tuple[object, ...]]:
    """Every step's action and every verdict in full (figures included: clocks, token counts)."""
    return [(s.index, s.kind, s.tool, s.action, [verdict(v) for v in s.verdicts]) for s in result.steps]


def test_the_corpus_tells_every_seed_story() -> None:
    names = {load(p).name for p in SCENARIOS}
    assert len(names) >= 15
    for story in ("poll-spacebot-dedup", "poll-spacebot-no-dedup", "forgetful-reader-hermes",
                  "forgetful-reader-hermes-current", "forgetful-reader-default", "overflow-claw-code",
                  "overflow-spacebot", "transient-500-storm", "stale-click", "ping-pong"):
        assert any(name.startswith(f"scenario-{story}") for name in names), story


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_meets_its_expectations_and_its_recording_replays_the_same(path: Path) -> None:
    scenario = load(path)
    assert scenario.mode == "simulate" and scenario.expect is not None
    sim = simulate(scenario)
    assert check(sim.result) == []
    text = dumps(sim.recorded)
    recorded = loads(text)[0]
    assert dumps(recorded) == text  # the recording round-trips unchanged
    assert recorded.source["kind"] == "simulated" and recorded.mode == "replay"
    again = replay(recorded)
    assert timeline(again) == timeline(sim.result)
    assert (again.outcome, again.stopped_at, again.stopped_by) == (sim.result.outcome, sim.result.stopped_at,
                                                                  sim.result.stopped_by)
    assert check(again) == []


def test_a_policy_argument_overrides_the_scenarios_own() -> None:
    scenario = load(CORPUS / "poll-spacebot-dedup.yaml")
    sim = simulate(scenario, {"preset": "spacebot", "dedup": False})
    assert sim.result.counts().get("compact", 0) == 2  # the no-dedup scenario's arithmetic
    assert sim.recorded.policy == {"preset": "spacebot", "dedup": False}
    assert timeline(replay(loads(dumps(sim.recorded))[0])) == timeline(sim.result)


def test_the_same_scenario_records_the_same_trace() -> None:
    scenario = load(CORPUS / "ping-pong-snapshot-click-spacebot.yaml")
    assert dumps(simulate(scenario).recorded) == dumps(simulate(scenario).recorded)


# ---- bad scenarios -------------------------------------------------------------------------------------
HEAD = "loopguard: 1\nname: bad\nmode: simulate\npolicy: default\n"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ("agent: {behaviour: daydreamer}\n", "agent.behaviour", "unknown behaviour 'daydreamer'"),
        ("agent: {script: [{think: hard}]}\n", "agent.script[0]", "unknown key"),
        ("agent: {script: [{text: hi}]}\n", "agent.script[0]", "exactly one of tool, calls, answer, error"),
        ("agent: {script: [{tool: browser_navigate, args: {url: 'https://gone.example'}}]}\n",
         "agent.script (turn 1)", "page 'https://gone.example' is not defined"),
        ("agent: {script: [{tool: read_file, args: {path: missing.py}}]}\n",
         "agent.script (turn 1)", "file 'missing.py' is not defined"),
        ("agent: {behaviour: poller, target: 1, url: 'https://gone.example'}\n", "agent.url", "not defined"),
        ("agent: {behaviour: forgetful_reader, files: [x.py]}\n", "agent.files[0]", "not defined"),
        ("agent: {behaviour: poller}\n", "agent.target", "index of the element"),
        ("env: {browser: {start: 'https://gone.example'}}\nagent: {script: []}\n", "env.browser.start",
         "not a defined page"),
        ("env: {disk: {}}\nagent: {script: []}\n", "env", "unknown key"),
        ("agent: {script: [], provider: mistral}\n", "agent.provider", "unknown provider"),
        ("agent: {}\n", "agent", "exactly one of behaviour, script"),
        ("agent: {script: []}\nx-expect-steps: {1: explode}\n", "x-expect-steps.1", "unknown action"),
    ],
)
def test_bad_scenarios_raise_scenario_errors_naming_file_and_field(
    tmp_path: Path, body: str, field: str, words: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(HEAD + body, encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        simulate(load(path))
    assert err.value.file == str(path) and err.value.field == field
    assert words in str(err.value)
    assert isinstance(err.value, TraceError)


def test_a_recorded_trace_is_not_a_scenario() -> None:
    scenario = load(CORPUS / "max-turns-claw-code.yaml")
    recorded = simulate(scenario).recorded
    with pytest.raises(ScenarioError, match="mode: simulate"):
        simulate(recorded)
