"""Policies: presets and aliases resolve to PRESETS.md's numbers; overrides, policy files and their errors."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from pytest_loopguard.core._model import ToolCall
from pytest_loopguard.engines import ENGINE_ORDER
from pytest_loopguard.errors import PolicyError
from pytest_loopguard.runtime._policy import ALIASES, Policy, preset_names, resolve_policy

PRESET_DIR = Path(__file__).resolve().parents[2] / "pytest_loopguard" / "presets"
PRESETS = (
    "browser-use", "claw-code", "default", "hermes", "hermes-current", "openchrome", "qa-agent",
    "spacebot-branch", "spacebot-channel", "spacebot-worker",
)


def test_every_preset_and_alias_is_listed_and_resolves() -> None:
    names = preset_names()
    assert set(PRESETS) | {"spacebot"} <= set(names)
    for name in names:
        policy = resolve_policy(name)
        assert policy.name == name
        assert list(policy.engines) == [e for e in ENGINE_ORDER if e in policy.engines]


@pytest.mark.parametrize("name", sorted(p.stem for p in PRESET_DIR.glob("*.yaml")))
def test_preset_description_is_whole(name: str) -> None:
    # a `#` after a space starts a YAML comment: an unquoted "PR #359" cut the description at "PR"
    line = next(ln for ln in (PRESET_DIR / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
                if ln.startswith("description:"))
    written = line.removeprefix("description:").strip().strip('"').split()
    description = resolve_policy(name).description
    assert description.split() == written
    assert description.endswith("."), description


def test_none_means_default() -> None:
    assert resolve_policy(None).name == "default"
    # every engine but stuck_detector, whose rule sets are other systems' (PRESETS.md: default)
    assert set(resolve_policy(None).engines) == set(ENGINE_ORDER) - {"stuck_detector"}


def test_alias_keeps_the_name_as_given_and_the_settings_of_its_target() -> None:
    assert ALIASES["spacebot"] == "spacebot-worker"
    alias, worker = resolve_policy("spacebot"), resolve_policy("spacebot-worker")
    assert alias.name == "spacebot"
    assert alias.engines == worker.engines
    assert alias.tools == worker.tools


# PRESETS.md, the Spacebot table: warn, block, poll ×, outcome block, ping-pong min repeats, max warnings/call.
@pytest.mark.parametrize(
    ("preset", "row"),
    [
        ("spacebot-worker", (4, 7, 3, 4, 4, 3)),
        ("spacebot-branch", (3, 5, 2, 3, 3, 2)),
        ("spacebot-channel", (2, 4, 2, 3, 3, 2)),
    ],
)
def test_spacebot_thresholds(preset: str, row: tuple[int, ...]) -> None:
    policy = resolve_policy(preset)
    lg = policy.settings("loop_guard")
    got = (lg.warn_at, lg.block_at, lg.poll_multiplier, lg.outcome_block_threshold, lg.ping_pong_min_repeats,
           lg.max_warnings_per_call)
    assert got == row
    # the branch and channel presets extend the worker: its identity and warning action are inherited
    assert (lg.identity, lg.warn_action, lg.ring_size) == ("ordered", "block", 30)
    assert set(policy.engines) == {"loop_guard", "dedup", "context"}
    assert policy.classifier.kind(ToolCall.of("browser_snapshot")) == "observation"


def test_default_preset_numbers() -> None:
    policy = resolve_policy("default")
    lg = policy.settings("loop_guard")
    assert (lg.identity, lg.warn_at, lg.block_at, lg.warn_action, lg.poll_multiplier) == ("canonical", 3, 5, "warn", 3)
    assert (tuple(lg.ping_pong_periods), lg.ping_pong_min_repeats, lg.outcome_block_threshold) == ((2, 3), 3, 6)
    rt = policy.settings("read_tracker")
    assert (rt.shared_streak, rt.search_pagination, rt.unchanged_stub) == (False, True, False)
    ft = policy.settings("failure_tracker")
    assert (ft.turn_failure, ft.max_failures, ft.final_response_after_failure) == ("all_failed", 12, True)


def test_hermes_versions_differ_where_presets_md_says() -> None:
    seed, current = resolve_policy("hermes").settings("read_tracker"), resolve_policy("hermes-current")
    assert (seed.shared_streak, seed.search_pagination, seed.unchanged_stub) == (True, False, False)
    rt = current.settings("read_tracker")
    assert (rt.shared_streak, rt.search_pagination, rt.unchanged_stub) == (True, True, True)
    assert not resolve_policy("hermes").enabled("failure_tracker")
    assert current.settings("failure_tracker").guardrails is True


def test_failure_presets() -> None:
    qa = resolve_policy("qa-agent").settings("failure_tracker")
    assert (qa.max_failures, qa.max_repetitions, qa.max_steps, tuple(qa.target_keys)) == (3, 3, 50, ("index",))
    bu = resolve_policy("browser-use").settings("failure_tracker")
    assert (bu.max_failures, bu.max_repetitions, bu.max_steps) == (5, None, 500)
    assert set(resolve_policy("qa-agent").engines) == {"failure_tracker"}


def test_openchrome_envelope_defaults_and_tool_table() -> None:
    policy = resolve_policy("openchrome")
    b = policy.settings("budget")
    limits = (b.max_consecutive_same_tool, b.max_observation_streak, b.max_failure_streak, b.max_same_url_navigations)
    assert limits == (5, 6, 4, 3)
    assert (b.max_tool_calls, b.max_wall_ms, b.allowed_domains, b.checkpoint_every_calls) == (None, None, None, None)
    assert policy.classifier.kind(ToolCall.of("computer", {"action": "screenshot"})) == "observation"
    assert policy.classifier.kind(ToolCall.of("computer", {"action": "click"})) == "action"
    assert policy.classifier.kind(ToolCall.of("navigate", {"url": "https://a.example"})) == "navigation"


def test_unknown_preset() -> None:
    meant = r"unknown preset 'spacebat' \(did you mean 'spacebot'\?\); known presets: .*spacebot"
    with pytest.raises(PolicyError, match=meant) as info:
        resolve_policy("spacebat")
    assert info.value.field == "preset"


# ---- overrides ---------------------------------------------------------------------------------------
def test_mapping_overrides_one_setting_and_keeps_the_rest() -> None:
    policy = resolve_policy({"preset": "spacebot", "loop_guard": {"warn_at": 1, "block_at": 2}})
    lg = policy.settings("loop_guard")
    assert (lg.warn_at, lg.block_at, lg.poll_multiplier, lg.identity) == (1, 2, 3, "ordered")
    assert policy.name == "spacebot+overrides"
    assert resolve_policy("spacebot").settings("loop_guard").warn_at == 4  # presets are not mutated


def test_mapping_without_overrides_keeps_the_preset_name() -> None:
    assert resolve_policy({"preset": "hermes"}).name == "hermes"
    assert resolve_policy({"preset": "hermes", "name": "mine"}).name == "mine"


def test_engines_can_be_switched_off_and_on() -> None:
    policy = resolve_policy({"preset": "default", "dedup": False, "context": None})
    assert "dedup" not in policy.engines and "context" not in policy.engines
    on = resolve_policy({"preset": "qa-agent", "loop_guard": True})
    assert on.settings("loop_guard") == type(on.settings("loop_guard"))()  # the engine's own defaults
    assert list(on.engines) == ["loop_guard", "failure_tracker"]  # consultation order, not override order


def test_with_overrides() -> None:
    policy = resolve_policy("default").with_overrides({"loop_guard": {"warn_at": 2}}, name="tight")
    assert policy.name == "tight" and policy.settings("loop_guard").warn_at == 2


def test_tool_rules_in_a_mapping_come_first() -> None:
    policy = resolve_policy({"preset": "default", "tools": [{"tool": "browser_*", "kind": "observation"}]})
    assert policy.classifier.kind(ToolCall.of("browser_click")) == "observation"
    assert resolve_policy("default").classifier.kind(ToolCall.of("browser_click")) == "action"


def test_unknown_engine() -> None:
    meant = r"unknown engine 'loop_gard' \(did you mean 'loop_guard'\?\); known engines: .*loop_guard"
    with pytest.raises(PolicyError, match=meant) as info:
        resolve_policy({"preset": "default", "loop_gard": {"warn_at": 1}})
    assert info.value.field == "loop_gard"


def test_unknown_setting() -> None:
    meant = r"unknown setting 'warn_after'( \(did you mean '\w+'\?\))?; expected one of: .*warn_at"
    with pytest.raises(PolicyError, match=meant) as info:
        resolve_policy({"preset": "default", "loop_guard": {"warn_after": 1}})
    assert info.value.field == "loop_guard.warn_after"
    assert "policy field 'loop_guard.warn_after'" in str(info.value)


@pytest.mark.parametrize(
    ("settings", "field", "expected"),
    [
        ({"warn_at": "three"}, "loop_guard.warn_at", "expected int"),
        ({"warn_at": True}, "loop_guard.warn_at", "expected int"),  # a bool is not a count
        ({"identity": "sorted"}, "loop_guard.identity", "one of 'canonical', 'ordered'"),
        ({"ping_pong_periods": 2}, "loop_guard.ping_pong_periods", "expected tuple"),
        ({"ping_pong_periods": [2, "x"]}, "loop_guard.ping_pong_periods[1]", "expected int"),
    ],
)
def test_setting_type_errors(settings: dict[str, object], field: str, expected: str) -> None:
    with pytest.raises(PolicyError, match=expected) as info:
        resolve_policy({"preset": "default", "loop_guard": settings})
    assert info.value.field == field


def test_list_settings_become_tuples() -> None:
    lg = resolve_policy({"preset": "default", "loop_guard": {"ping_pong_periods": [2]}}).settings("loop_guard")
    assert lg.ping_pong_periods == (2,)


def test_engine_value_must_be_a_mapping_or_bool() -> None:
    with pytest.raises(PolicyError, match="expected a mapping of settings"):
        resolve_policy({"preset": "default", "loop_guard": 3})


def test_bad_tool_rule() -> None:
    with pytest.raises(PolicyError, match="unknown kind 'poll'") as info:
        resolve_policy({"preset": "default", "tools": [{"tool": "x", "kind": "poll"}]})
    assert info.value.field == "tools[0].kind"


def test_wrong_spec_type() -> None:
    with pytest.raises(PolicyError, match="expected a preset name, a policy file"):
        resolve_policy(42)


# ---- policy files ------------------------------------------------------------------------------------
def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_policy_file_starts_from_a_preset_and_overrides(tmp_path: Path) -> None:
    path = write(tmp_path / "strict-browser.yaml", """
        preset: spacebot-branch
        description: tighter than the branch
        loop_guard: {warn_at: 2}
        context: false
        """)
    policy = resolve_policy(str(path))
    assert policy.name == "strict-browser"  # the file's stem
    assert policy.description == "tighter than the branch"
    lg = policy.settings("loop_guard")
    assert (lg.warn_at, lg.block_at) == (2, 5)
    assert set(policy.engines) == {"loop_guard", "dedup"}


def test_policy_file_relative_to_the_trace_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "p.yaml", "preset: default\nname: local\n")
    monkeypatch.chdir(tmp_path.parent)
    assert resolve_policy("p.yaml", base_dir=tmp_path).name == "local"


def test_policy_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "preset: default\nloop_guard: {warn_at: x}\n")
    with pytest.raises(PolicyError) as info:
        resolve_policy(str(bad))
    assert info.value.source == str(bad) and str(info.value).startswith(f"{bad}: policy field 'loop_guard.warn_at'")
    with pytest.raises(PolicyError, match="not found"):
        resolve_policy(str(tmp_path / "absent.yaml"))
    with pytest.raises(PolicyError, match="must hold a mapping"):
        resolve_policy(str(write(tmp_path / "list.yaml", "- a\n")))
    with pytest.raises(PolicyError, match="YAML syntax error"):
        resolve_policy(str(write(tmp_path / "syntax.yaml", "preset: [default\n")))


def test_policy_objects_pass_through_and_serialise() -> None:
    policy = resolve_policy("openchrome")
    assert resolve_policy(policy) is policy
    data = policy.to_dict()
    assert data["name"] == "openchrome" and list(data["engines"]) == ["budget"]
    assert data["engines"]["budget"]["max_observation_streak"] == 6
    assert {"tool": "computer", "kind": "observation", "when": {"action": "screenshot"}} in data["tools"]
    assert isinstance(policy, Policy)


# ---- issue 12's presets: every one names what it follows, with the commit or version ------------------------
NEW_PRESETS = {
    "openhands": ("156d0686", {"stuck_detector", "context"}),
    "openhands-sdk": ("611629e", {"stuck_detector"}),
    "gemini-cli": ("5411f113", {"stuck_detector"}),
    "gemini-cli-2026-06": ("28429", {"stuck_detector"}),
    "roo": ("89068c4", {"loop_guard"}),  # issue 24: the released code (v3.33.1)
    "goose": ("RepetitionInspector", {"loop_guard"}),
}


@pytest.mark.parametrize("name", sorted(NEW_PRESETS))
def test_new_presets_name_their_source_and_engines(name: str) -> None:
    version, engines = NEW_PRESETS[name]
    policy = resolve_policy(name)
    assert version in policy.source and "docs/presets.md" in policy.source
    assert policy.description  # quoted in the YAML: a `#` in it would otherwise start a comment
    assert set(policy.engines) == engines


def test_gemini_2026_06_differs_from_gemini_cli_only_in_cycle_lengths() -> None:
    new = resolve_policy("gemini-cli").settings("stuck_detector")
    old = resolve_policy("gemini-cli-2026-06").settings("stuck_detector")
    assert (new.cycle_lengths, old.cycle_lengths) == ((1, 2, 3, 4, 5), (1,))
    assert dataclasses.replace(old, cycle_lengths=new.cycle_lengths) == new


# ---- the presets folder is read as it is now, though its listing is kept between look-ups ---------------------
def test_a_preset_added_or_removed_after_a_look_up_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_loopguard.runtime import _policy as policy_module

    monkeypatch.setattr(policy_module, "_presets_dir", lambda: tmp_path)
    monkeypatch.setattr(policy_module, "_listed", {})
    policy_module._build_preset.cache_clear()
    try:
        write(tmp_path / "a.yaml", "engines: {loop_guard: {warn_at: 3}}\n")
        assert resolve_policy("a").settings("loop_guard").warn_at == 3
        with pytest.raises(PolicyError, match="unknown preset 'b'; known presets: a, spacebot"):
            resolve_policy("b")
        write(tmp_path / "b.yaml", "extends: a\nengines: {}\n")  # listed after `a` was: found all the same
        assert resolve_policy("b").settings("loop_guard").warn_at == 3
        (tmp_path / "a.yaml").unlink()  # a listed preset gone: unknown, though its policy was built
        with pytest.raises(PolicyError, match="unknown preset 'a'; known presets: b, spacebot"):
            resolve_policy("a")
        (tmp_path / "sub").mkdir()
        write(tmp_path / "sub" / "c.yaml", "engines: {}\n")
        for path_like in ("sub/c", "../" + tmp_path.name + "/b", ""):  # a name is never a path
            with pytest.raises(PolicyError, match="unknown preset"):
                resolve_policy(path_like)
    finally:
        policy_module._build_preset.cache_clear()
