"""Hypothesis profiles: `ci` (derandomized) when the CI variable is set, else `dev`; `random` for CI's seeded job."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=50,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
# Local runs explore more (new seeds each run) but keep the suite quick; no deadline: timing is not behaviour.
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=50,
    suppress_health_check=[HealthCheck.too_slow],
)
# CI's second job (`.ci/run`): random examples, a fixed number of them, the seed given by --hypothesis-seed so a
# failure is reproduced from the seed the job prints; no database, so the run depends on the seed alone.
settings.register_profile(
    "random",
    derandomize=False,
    database=None,
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose runs skip the pytest plugins the dev extra's frameworks install (langsmith's costs 1.5 s per
    pytest start): pytester clears PYTEST_ADDOPTS for its runs, so it is set again here."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:langsmith_plugin -p no:anyio")
    return pytester


_SLOW_PROFILE = os.path.join(os.path.dirname(__file__), "slow_tests.txt")


def _slow_ids() -> frozenset[str]:
    with open(_SLOW_PROFILE, encoding="utf-8") as f:
        return frozenset(line.strip() for line in f if line.strip() and not line.startswith("#"))


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by `-m`
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests in slow_tests.txt (tools/slow_profile.py: the slowest of a measured run) are marked `slow`: the
    default run leaves them to `python -m pytest -m slow`, which CI runs too."""
    slow = _slow_ids()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
