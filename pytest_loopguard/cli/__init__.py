"""The `loopguard` command: one module per subcommand (`_run` ... `_eval`), the parser and dispatch in `_main`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._main import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    # `main` loads on first use: the `run -j` workers import this package for its runner modules, not the parser
    if name == "main":
        from ._main import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
