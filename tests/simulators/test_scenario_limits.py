"""Every count a scenario gives the simulators, at its documented edge: the limit builds, one over is a
ScenarioError naming the file and the field (no value may make a simulated run loop longer than MAX_TURNS
turns or generate more than MAX_GENERATED_CHARS characters)."""

from __future__ import annotations

import pytest

from loopguard_simulators import simulate
from loopguard_simulators.scenario import build
from pytest_loopguard.core._limits import MAX_GENERATED_CHARS, MAX_SCENARIO_COUNT, MAX_SETTING, MAX_TURNS
from pytest_loopguard.errors import ScenarioError
from pytest_loopguard.io._format import loads

SCENARIO = """\
loopguard: 1
name: edge
mode: simulate
max_turns: 3
env:
  files:
    a.py: {{lines: 1, width: 10}}
    gen.txt: {gen}
  browser:
    start: https://x.example
    pages:
      https://x.example: {{ready_after: {ready}, snapshot_chars: {chars}}}
agent:
  {agent}
  llm_latency_ms: {latency}
"""
RETRIER = "behaviour: retrier\n  call: {{tool: read_file, args: {{path: a.py}}}}\n  attempts: {n}"
PING_PONG = ("behaviour: ping_pong\n  a: {{tool: read_file, args: {{path: a.py}}}}\n"
             "  b: {{tool: browser_snapshot}}\n  turns: {n}")
SCRIPT = "script:\n    - {{tool: read_file, args: {{path: a.py}}, repeat: {n}}}"
DEFAULTS = {"gen": "{lines: 2, width: 8}", "ready": 0, "chars": 100, "agent": RETRIER.format(n=2), "latency": 5}


def scenario(**values: object) -> str:
    return SCENARIO.format(**{**DEFAULTS, **values})


def builds(text: str) -> None:
    build(loads(text, path="edge.yaml")[0])


def refused(text: str, field: str) -> None:
    trace = loads(text, path="edge.yaml")[0]
    with pytest.raises(ScenarioError) as info:
        simulate(trace)
    assert info.value.field == field and str(info.value).startswith("edge.yaml: ")


@pytest.mark.parametrize(
    ("key", "template", "limit", "field"),
    [
        ("agent", RETRIER, MAX_SCENARIO_COUNT, "agent.attempts"),
        ("agent", PING_PONG, MAX_SCENARIO_COUNT, "agent.turns"),
        ("agent", SCRIPT, MAX_TURNS, "agent.script[0].repeat"),
        ("ready", "{n}", MAX_SCENARIO_COUNT, "env.browser.pages.https://x.example.ready_after"),
        ("chars", "{n}", MAX_GENERATED_CHARS, "env.browser.pages.https://x.example.snapshot_chars"),
        ("gen", "{{lines: {n}, width: 1}}", MAX_SCENARIO_COUNT, "env.files.gen.txt.lines"),
        ("latency", "{n}", MAX_SETTING, "agent.llm_latency_ms"),
    ],
)
def test_scenario_counts_at_their_edge(key: str, template: str, limit: int, field: str) -> None:
    builds(scenario(**{key: template.format(n=limit)}))
    refused(scenario(**{key: template.format(n=limit + 1)}), field)


def test_generated_file_text_at_its_edge() -> None:
    width = MAX_GENERATED_CHARS // 1024
    builds(scenario(gen=f"{{lines: 1024, width: {width}}}"))
    refused(scenario(gen=f"{{lines: 1025, width: {width}}}"), "env.files.gen.txt")


def test_a_script_stays_within_max_turns_over_all_its_turns() -> None:
    two = "script:\n    - {tool: read_file, args: {path: a.py}, repeat: %d}\n    - {answer: done, repeat: %d}"
    builds(scenario(agent=two % (MAX_TURNS - 1, 1)))
    refused(scenario(agent=two % (MAX_TURNS - 1, 2)), "agent.script[1].repeat")


def test_max_turns_at_its_edge() -> None:
    builds(scenario().replace("max_turns: 3", f"max_turns: {MAX_TURNS}"))
    refused(scenario().replace("max_turns: 3", f"max_turns: {MAX_TURNS + 1}"), "max_turns")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (("start: https://x.example", "start: [a]"), "env.browser.start"),
        (("{ready_after: 0, snapshot_chars: 100}", "{elements: 3}"), "env.browser.pages.https://x.example.elements"),
        (("args: {path: a.py}", "args: {path: [a.py]}"), "agent.call"),
    ],
)
def test_values_of_the_wrong_type_are_scenario_errors(change: tuple[str, str], field: str) -> None:
    refused(scenario().replace(*change), field)
