"""parse_policy_option: the command line's policy forms, the inline mapping read as YAML."""

from __future__ import annotations

import pytest

from pytest_loopguard.errors import PolicyError
from pytest_loopguard.runtime._policy import resolve_policy
from pytest_loopguard.runtime._policy_option import parse_policy_option


@pytest.mark.parametrize("text", ["spacebot", "policies/strict.yaml", "default+x"])
def test_names_and_files_pass_through(text: str) -> None:
    assert parse_policy_option(text) == text


def test_an_inline_mapping_is_the_mapping_a_trace_would_hold() -> None:
    spec = parse_policy_option(" {preset: default, loop_guard: {warn_at: 2}, dedup: false}")
    assert spec == {"preset": "default", "loop_guard": {"warn_at": 2}, "dedup": False}
    policy = resolve_policy(spec)
    assert policy.settings("loop_guard").warn_at == 2 and "dedup" not in policy.engines


@pytest.mark.parametrize(("text", "problem"), [("{preset: default", "an inline policy is YAML"),
                                               ("{[1, 2]: x}", "an inline policy is YAML"),
                                               ("{a: 1} trailing", "an inline policy is YAML")])
def test_broken_inline_yaml_is_one_clear_error(text: str, problem: str) -> None:
    with pytest.raises(PolicyError, match=problem):
        parse_policy_option(text)
