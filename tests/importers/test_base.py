"""`trace_name`: a run id becomes a trace name that is also a safe file stem, in any script and any length."""

from __future__ import annotations

import pytest

from pytest_loopguard.importers import trace_name


@pytest.mark.parametrize(("run_id", "name"), [
    ("django__django-14349", "django__django-14349"),
    ("owner/repo#12", "owner-repo-12"),
    ("日本語 タスク", "日本語-タスク"),
    ("cafe\u0301", "caf\u00e9"),            # a decomposed é (as macOS file names have it) is written composed
    ("../..", "run"),
    ("", "run"),
])
def test_unsafe_characters_become_dashes_and_letters_of_any_script_stay(run_id: str, name: str) -> None:
    assert trace_name(run_id) == name


def test_a_long_id_is_cut_at_a_character_boundary_and_keeps_a_hash_of_the_whole_id() -> None:
    a, b = trace_name("語" * 200 + "a"), trace_name("語" * 200 + "b")
    assert a != b
    for name in (a, b):
        assert len(name.encode("utf-8")) <= 120 and name.startswith("語" * 30)
        assert name.encode("utf-8").decode("utf-8") == name
