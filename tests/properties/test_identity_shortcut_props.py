"""loop_guard's identity modes against their definitions: the engine reads a call's precomputed identity
where a mode writes the same text (flat arguments, `FLAT_SAME_AS`) and serialises otherwise, and must give
exactly `tool + "\\x1f" + IDENTITIES[mode](args)` for any arguments."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard import Guard, ToolCall, resolve_policy
from pytest_loopguard.core._identity import FLAT_SAME_AS, IDENTITIES, IDENTITY_MODES, is_flat
from pytest_loopguard.engines.loop_guard import LoopGuard

SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([1.0, 2.5, -0.0]) | st.text(max_size=3)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(
    st.text(max_size=2), inner, max_size=2), max_leaves=4)
KEYS = st.text(alphabet="abcé", max_size=2)
# flat arguments (string keys, plain scalars) and any others, keys in any order
FLAT = st.dictionaries(KEYS, st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3), max_size=4)
ARGS = FLAT | st.dictionaries(KEYS, VALUES, max_size=3)


def identity(mode: str, call: ToolCall) -> str:
    guard = Guard(resolve_policy({"preset": "roo", "loop_guard": {"identity": mode, "exempt": []}}))
    engine = guard.run.engines["loop_guard"]
    assert isinstance(engine, LoopGuard)
    return engine._identity(call)


@given(st.sampled_from(IDENTITY_MODES), ARGS)
def test_the_engine_identity_is_the_mode_text(mode: str, args: dict[str, Any]) -> None:
    call = ToolCall.of("t", args)
    assert identity(mode, call) == "t\x1f" + IDENTITIES[mode](call.args)


@given(st.sampled_from(sorted(FLAT_SAME_AS)), FLAT)
def test_on_flat_arguments_a_mode_writes_the_text_it_is_said_to_share(mode: str, args: dict[str, Any]) -> None:
    assert is_flat(args)
    call = ToolCall.of("t", args)
    shared = call.canonical if FLAT_SAME_AS[mode] == "canonical" else call.ordered
    assert IDENTITIES[mode](args) == shared


def test_a_float_or_a_nested_mapping_is_not_flat() -> None:
    # what tells the modes apart (1.0 vs 1, nested key order) must never take the shortcut
    assert is_flat({"a": 1, "b": "x", "c": None, "d": True})
    assert not is_flat({"a": 1.0}) and not is_flat({"a": {"b": 1}}) and not is_flat({"a": [1]})
