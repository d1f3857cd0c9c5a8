"""Imported once by `loopguard run -j`'s forkserver, so that every worker forks with the replay modules,
the engines and the engine registry already loaded (~45 ms a worker would otherwise spend on its own)."""

from __future__ import annotations

import contextlib

from ..runtime._policy import resolve_policy
from . import _jobs as run_jobs  # noqa: F401  # the workers' code

# the default preset: imports every built-in engine and reads the registry's plugins; a broken plugin must
# not take the forkserver down: each worker meets it and reports it as one process would
with contextlib.suppress(Exception):
    resolve_policy(None)
