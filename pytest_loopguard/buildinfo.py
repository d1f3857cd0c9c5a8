"""Which build is installed: the pure-Python package, or one whose typed core mypyc compiled (LOOPGUARD_COMPILE=1)."""

from __future__ import annotations

import importlib.util
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

__all__ = ["build_name", "compiled", "compiled_modules"]

_PACKAGE = Path(__file__).resolve().parent


def compiled_modules() -> tuple[str, ...]:
    """The package's modules that import as compiled extension modules, sorted by name.

    Read from what `import` would load, not from file names alone: a compiled module next to its `.py`
    wins (extension modules come first in Python's search order), so it is the one that runs.
    """
    found = []
    for suffix in EXTENSION_SUFFIXES:
        for path in _PACKAGE.rglob("*" + suffix):
            parts = path.relative_to(_PACKAGE.parent).with_name(path.name[: -len(suffix)]).parts
            name = ".".join(parts)
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.origin is not None and Path(spec.origin).resolve() == path.resolve():
                found.append(name)
    return tuple(sorted(set(found)))


def compiled() -> bool:
    """Whether any module of this installation is compiled (else it is the pure-Python package)."""
    return bool(compiled_modules())


def build_name() -> str:
    """A one-line description of the build, for `loopguard bench`'s output."""
    names = compiled_modules()
    if not names:
        return "pure Python"
    short = ", ".join(n.removeprefix("pytest_loopguard.") for n in names)
    return f"compiled (mypyc: {short})"
