"""Which build is installed: the pure-Python package, or one whose typed core mypyc compiled (LOOPGUARD_COMPILE=1)."""

from __future__ import annotations

import importlib.util
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

__all__ = ["build_name", "compiled", "compiled_modules", "stale_modules"]

_PACKAGE = Path(__file__).resolve().parent
_MARGIN_S = 2.0


def compiled_modules(package: Path = _PACKAGE) -> tuple[str, ...]:
    """The package's (this one unless told) modules that import as compiled extension modules, sorted by name.

    Read from what `import` would load, not from file names alone: a compiled module next to its `.py`
    wins (extension modules come first in Python's search order), so it is the one that runs.
    """
    suffixes = sorted(EXTENSION_SUFFIXES, key=len, reverse=True)  # the longest first: `.cpython-…so` before `.so`
    found = []
    for path in package.rglob("*"):
        suffix = next((s for s in suffixes if path.name.endswith(s)), None)
        if suffix is None:
            continue
        name = ".".join(path.relative_to(package.parent).with_name(path.name[: -len(suffix)]).parts)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None and Path(spec.origin).resolve() == path.resolve():
            found.append(name)
    return tuple(sorted(set(found)))


def stale_modules(package: Path = _PACKAGE) -> tuple[str, ...]:
    """Compiled modules whose `.py` source was changed after they were built (in a development tree).

    Such a module still runs its old compiled code: rebuild (`python hatch_build.py`) or remove the
    compiled files (`python hatch_build.py --clean`).
    """
    out = []
    for name in compiled_modules(package):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None  # compiled_modules() found both
        ext = Path(spec.origin)
        source = ext.with_name(name.rpartition(".")[2] + ".py")
        # a margin: an installer writes both files within moments of each other, in either order
        if source.exists() and source.stat().st_mtime > ext.stat().st_mtime + _MARGIN_S:
            out.append(name)
    return tuple(out)


def compiled() -> bool:
    """Whether any module of this installation is compiled (else it is the pure-Python package)."""
    return bool(compiled_modules())


def build_name() -> str:
    """A one-line description of the build, for `loopguard bench`'s output."""
    names = compiled_modules()
    if not names:
        return "pure Python"
    short = ", ".join(n.removeprefix("pytest_loopguard.") for n in names)
    stale = ", ".join(n.removeprefix("pytest_loopguard.") for n in stale_modules())
    return f"compiled (mypyc: {short})" + (f"; STALE, sources changed since the build: {stale}" if stale else "")
