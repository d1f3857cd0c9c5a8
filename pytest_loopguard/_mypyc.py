"""mypyc's class options for the modules the compiled build compiles; in pure Python without mypy, no-ops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["mypyc_attr"]

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # pragma: no cover - mypy (which brings mypy_extensions) is not a runtime dependency

    def mypyc_attr(*_args: object, **_options: object) -> Callable[[Any], Any]:  # type: ignore[misc]
        return lambda cls: cls
