"""The importer hook: a plugin (or a module behind a `loopguard.importers` entry point) adds formats."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.hookspecs import hookspec

if TYPE_CHECKING:
    from .base import Importer


@hookspec
def loopguard_importers() -> list[Importer]:  # type: ignore[empty-body]
    """Return importer instances to offer next to the built-in ones (their `name` is the `--from` value)."""
