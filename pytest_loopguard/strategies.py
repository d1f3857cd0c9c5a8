"""Hypothesis strategies for the library's own values: the public home of `pytest_loopguard.pytest._strategies`.

`from pytest_loopguard import strategies as lgst` keeps working as it always has; the module needs hypothesis,
which an agent that only embeds the Guard never imports (without it: one error naming the `pytest` extra).
"""

from .errors import needs_extra as _needs_extra

with _needs_extra("pytest_loopguard.strategies"):
    from .pytest._strategies import *  # noqa: F403
    from .pytest._strategies import __all__ as __all__
