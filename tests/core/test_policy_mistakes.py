"""Policy mistakes a first user makes are one line that says what to write (issue 26 item 6): a warning
stage after the block (`warn_at > block_at`, which silently removed the warning), and an unknown preset or
setting, which now get a "did you mean"."""

from __future__ import annotations

import pytest

from pytest_loopguard.errors import PolicyError
from pytest_loopguard.runtime._policy import resolve_policy


@pytest.mark.parametrize(("engine", "settings", "field"), [
    ("loop_guard", {"warn_at": 6}, "loop_guard.warn_at"),  # default's block_at is 5
    ("loop_guard", {"warn_at": 3, "block_at": 2}, "loop_guard.warn_at"),
    ("read_tracker", {"file_reads_warn_at": 10, "file_reads_block_at": 5}, "read_tracker.file_reads_warn_at"),
])
def test_a_warning_after_the_block_is_a_policy_error(engine: str, settings: dict[str, int], field: str) -> None:
    with pytest.raises(PolicyError) as info:
        resolve_policy({"preset": "default", engine: settings})
    assert info.value.field == field and "after the block" in info.value.problem
    assert "\n" not in str(info.value)
    resolve_policy({"preset": "default", "loop_guard": {"warn_at": 5}})  # equal: the block wins, allowed


@pytest.mark.parametrize(("spec", "hint"), [
    ("defualt", "did you mean 'default'?"),
    ({"preset": "default", "loop_gaurd": {"warn_at": 2}}, "did you mean 'loop_guard'?"),
    ({"preset": "default", "loop_guard": {"warn_att": 2}}, "did you mean 'warn_at'?"),
])
def test_unknown_presets_engines_and_settings_suggest_the_name_meant(spec: object, hint: str) -> None:
    with pytest.raises(PolicyError) as info:
        resolve_policy(spec)
    assert hint in str(info.value) and "\n" not in str(info.value)
