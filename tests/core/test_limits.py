"""Every documented number range of a trace and a policy, tested at its edge: the limit passes, one over
is refused with an error naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopguard.core._limits import MAX_EXTENDS, MAX_INT, MAX_SETTING, MAX_SETTING_ITEMS, MAX_STEPS
from pytest_loopguard.errors import PolicyError, TraceError
from pytest_loopguard.io._format import loads, trace_from_mapping
from pytest_loopguard.runtime import _policy as policy_module
from pytest_loopguard.runtime._policy import resolve_policy
from pytest_loopguard.runtime._replay import replay


def trace(body: str) -> str:
    return "loopguard: 1\nname: t\n" + body


def refused(text: str) -> TraceError:
    with pytest.raises(TraceError) as info:
        loads(text, path="edge.yaml")
    assert str(info.value).startswith("edge.yaml:") and "\n" not in str(info.value)
    return info.value


@pytest.mark.parametrize(
    ("body", "field", "limit"),
    [
        ("max_turns: {}\nsteps: []\n", "max_turns", MAX_SETTING),
        ("context: {{window_tokens: {}}}\nsteps: []\n", "context.window_tokens", MAX_SETTING),
        ("steps:\n  - tool: a\n    result: {{tokens: {}}}\n", "result.tokens", MAX_SETTING),
        ("steps:\n  - llm: {{input_tokens: {}}}\n", "llm.input_tokens", MAX_SETTING),
        ("task: {{objective: o, budget: {{max_tool_calls: {}}}}}\nsteps: []\n", "task.budget.max_tool_calls",
         MAX_SETTING),
        ("steps:\n  - tool: a\n    t: {}\n", "t", MAX_INT),
        ("seed: {}\nsteps: []\n", "seed", MAX_INT),
    ],
)
def test_trace_numbers_at_their_edge(body: str, field: str, limit: int) -> None:
    assert loads(trace(body.format(limit)), path="edge.yaml")
    error = refused(trace(body.format(limit + 1)))
    assert error.field == field and f"≤ {limit}" in error.problem


def test_step_count_at_its_edge() -> None:
    # the mapping form: the check is the loader's, and parsing 100,000 steps of YAML text would be slow
    step = {"tool": "a"}
    assert len(trace_from_mapping({"loopguard": 1, "name": "t", "steps": [step] * MAX_STEPS}).steps) == MAX_STEPS
    with pytest.raises(TraceError) as info:
        trace_from_mapping({"loopguard": 1, "name": "t", "steps": [step] * (MAX_STEPS + 1)})
    assert info.value.field == "steps"
    assert info.value.problem == f"{MAX_STEPS + 1} steps; at most {MAX_STEPS} in one trace"


def test_a_float_for_an_integer_is_range_checked_before_it_is_converted() -> None:
    error = refused(trace("max_turns: 1.0e+300\nsteps: []\n"))
    assert error.field == "max_turns" and "1e+300" in error.problem


def test_huge_numbers_replay_without_overflow() -> None:
    # the largest accepted values go through the engines' float arithmetic (ratios of limits) unharmed
    text = trace(f"context: {{window_tokens: {MAX_SETTING}}}\n"
                 f"task: {{objective: o, budget: {{max_tool_calls: {MAX_SETTING}}}}}\n"
                 f"steps:\n  - llm: {{input_tokens: {MAX_SETTING}}}\n  - tool: a\n    t: {MAX_INT}\n")
    assert replay(loads(text, path="edge.yaml")[0]).outcome == "incomplete"


# ---- policy settings -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("setting", "low"), [("loop_guard.warn_at", 1), ("budget.near_ratio", 0),
                                            ("context.compact_at", 0), ("failure_tracker.max_failures", 0),
                                            ("loop_guard.ring_size", 1)])
def test_numeric_settings_at_their_edges(setting: str, low: int) -> None:
    # every number lies in [0, MAX_SETTING]; an engine may raise the lower end (a ring of at least 1)
    engine, name = setting.split(".")
    # a warning stage needs room below the block stage (warn_at < block_at): no block stage here
    other = {"block_at": None} if setting == "loop_guard.warn_at" else {}
    assert getattr(resolve_policy({engine: {name: MAX_SETTING, **other}}).settings(engine), name) == MAX_SETTING
    assert getattr(resolve_policy({engine: {name: low, **other}}).settings(engine), name) == low
    for bad in (MAX_SETTING + 1, low - 1, float("nan"), float("inf"), float("-inf")):
        with pytest.raises(PolicyError) as info:
            resolve_policy({engine: {name: bad, **other}})
        assert info.value.field == setting, bad


def test_an_engine_narrows_a_range_in_its_settings() -> None:
    assert resolve_policy({"loop_guard": {"ping_pong_detect_repeats": 1}})
    with pytest.raises(PolicyError, match="expected an integer >= 1, got 0") as info:
        resolve_policy({"loop_guard": {"ping_pong_detect_repeats": 0}})
    assert info.value.field == "loop_guard.ping_pong_detect_repeats"


def test_list_settings_at_their_edge() -> None:
    words = [f"w{i}" for i in range(MAX_SETTING_ITEMS)]
    assert len(resolve_policy({"loop_guard": {"poll_words": words}}).settings("loop_guard").poll_words) == len(words)
    with pytest.raises(PolicyError, match=f"a list of {MAX_SETTING_ITEMS + 1} items; at most {MAX_SETTING_ITEMS}"):
        resolve_policy({"loop_guard": {"poll_words": [*words, "one-more"]}})
    rules = [{"tool": f"t{i}", "kind": "action"} for i in range(MAX_SETTING_ITEMS + 1)]
    with pytest.raises(PolicyError, match="rules; at most"):
        resolve_policy({"tools": rules})


def test_a_policy_value_error_shows_a_short_value() -> None:
    nested: list[object] = []
    for _ in range(50):
        nested = [nested, nested]  # 2^50 leaves if printed in full
    with pytest.raises(PolicyError) as info:
        resolve_policy({"loop_guard": {"warn_at": nested}})
    assert len(str(info.value)) < 300


# ---- preset chains -------------------------------------------------------------------------------------------
@pytest.fixture
def presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "presets"
    folder.mkdir()
    monkeypatch.setattr(policy_module, "_presets_dir", lambda: folder)
    policy_module._build_preset.cache_clear()
    yield folder
    policy_module._build_preset.cache_clear()


def chain(folder: Path, length: int) -> str:
    """Presets p0 … p(length-1), each extending the next; returns the first one's name."""
    (folder / f"p{length - 1}.yaml").write_text("engines: {loop_guard: {warn_at: 7, block_at: 9}}\n")
    for i in range(length - 1):
        (folder / f"p{i}.yaml").write_text(f"extends: p{i + 1}\nengines: {{}}\n")
    return "p0"


def test_extends_chain_at_its_edge(presets: Path) -> None:
    assert resolve_policy(chain(presets, MAX_EXTENDS)).settings("loop_guard").warn_at == 7
    for path in presets.iterdir():
        path.unlink()
    policy_module._build_preset.cache_clear()
    with pytest.raises(PolicyError, match=f"an extends chain longer than {MAX_EXTENDS} presets"):
        resolve_policy(chain(presets, MAX_EXTENDS + 1))


def test_an_extends_cycle_is_refused(presets: Path) -> None:
    (presets / "a.yaml").write_text("extends: b\n")
    (presets / "b.yaml").write_text("extends: a\n")
    with pytest.raises(PolicyError, match="presets extend each other in a cycle: a -> b -> a"):
        resolve_policy("a")
    (presets / "self.yaml").write_text("extends: self\n")
    with pytest.raises(PolicyError, match="cycle: self -> self"):
        resolve_policy("self")


def test_a_preset_with_a_python_tag_is_refused(presets: Path) -> None:
    marker = presets / "ran"
    (presets / "evil.yaml").write_text(f"engines: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(PolicyError, match="not allowed"):
        resolve_policy("evil")
    assert not marker.exists()
