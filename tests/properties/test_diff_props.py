"""Properties of `diff_results` over generated traces and pairs of presets: the changes account for every
intervention exactly once, swapping the policies mirrors the diff, and a policy against itself moves nothing."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard import Trace, replay
from pytest_loopguard.eval._diff import diff_results, interventions, spent
from pytest_loopguard.pytest import _strategies as lgst
from pytest_loopguard.runtime._policy import ALIASES, preset_names

PRESETS = [n for n in preset_names() if n not in ALIASES]
TRACES = lgst.traces(kinds=("tool", "llm", "message", "done", "rejected"), max_steps=25, expectations=False)


@given(TRACES, st.sampled_from(PRESETS), st.sampled_from(PRESETS))
def test_changes_account_for_every_intervention(trace: Trace, a: str, b: str) -> None:
    before, after = replay(trace, a), replay(trace, b)
    d = diff_results(before, after)
    kinds = Counter(c.kind for c in d.changes)
    old, new = interventions(before), interventions(after)
    same = len(set(old) & set(new))
    assert len(old) == same + kinds["changed"] + kinds["moved"] + kinds["vanished"]
    assert len(new) == same + kinds["changed"] + kinds["moved"] + kinds["appeared"]
    # each intervention is named by at most one change, on its own side
    assert len({c.before for c in d.changes if c.before}) == sum(1 for c in d.changes if c.before)
    assert all(c.before in old for c in d.changes if c.before) and all(c.after in new for c in d.changes if c.after)
    assert all(c.before.step == c.after.step for c in d.changes if c.kind == "changed" and c.before and c.after)
    assert all((c.before.action, c.before.reason) == (c.after.action, c.after.reason)
               for c in d.changes if c.kind == "moved" and c.before and c.after)


@given(TRACES, st.sampled_from(PRESETS), st.sampled_from(PRESETS))
def test_swapping_the_policies_mirrors_the_diff(trace: Trace, a: str, b: str) -> None:
    forward = diff_results(replay(trace, a), replay(trace, b))
    backward = diff_results(replay(trace, b), replay(trace, a))
    mirror = {"appeared": "vanished", "vanished": "appeared", "moved": "moved", "changed": "changed"}
    assert Counter((mirror[c.kind], c.after, c.before) for c in forward.changes) == Counter(
        (c.kind, c.before, c.after) for c in backward.changes)
    assert forward.moved == backward.moved
    assert forward.to_dict()["steps_saved"] == -backward.to_dict()["steps_saved"]


@given(TRACES, st.sampled_from(PRESETS))
def test_a_policy_against_itself_moves_nothing(trace: Trace, a: str) -> None:
    d = diff_results(replay(trace, a), replay(trace, a))
    assert d.changes == () and not d.moved
    steps, tokens = spent(replay(trace, a))
    assert 0 <= steps <= len(trace.steps) and tokens >= 0
