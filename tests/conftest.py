"""Hypothesis profiles: `ci` (derandomized, reproducible, no deadline) when the CI variable is set, else `dev`."""

from __future__ import annotations

import os

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
settings.load_profile("ci" if os.environ.get("CI") else "dev")
