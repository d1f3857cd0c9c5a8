"""Policy mistakes a first user makes are one line that says what to write (issue 26 item 6): an unknown
preset, engine or setting gets a "did you mean"."""

from __future__ import annotations

import pytest

from pytest_loopguard.errors import PolicyError
from pytest_loopguard.runtime._policy import resolve_policy


@pytest.mark.parametrize(("spec", "hint"), [
    ("defualt", "did you mean 'default'?"),
    ({"preset": "default", "loop_gaurd": {"warn_at": 2}}, "did you mean 'loop_guard'?"),
    ({"preset": "default", "loop_guard": {"warn_att": 2}}, "did you mean 'warn_at'?"),
])
def test_unknown_presets_engines_and_settings_suggest_the_name_meant(spec: object, hint: str) -> None:
    with pytest.raises(PolicyError) as info:
        resolve_policy(spec)
    assert hint in str(info.value) and "\n" not in str(info.value)
