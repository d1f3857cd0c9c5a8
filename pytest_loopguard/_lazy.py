"""A package's public names, each imported from the module that defines it when the name is first read.

Every `__init__` of the package uses it: `__getattr__, __dir__ = exports(__name__, {"_guard": ("Guard",), ...})`,
with the same names imported under `if TYPE_CHECKING:` for the type checker. Importing a package then costs
(almost) nothing until one of its names is read: pytest imports the plugin's package in every process, the
xdist controller included, which never replays.
"""

from __future__ import annotations

import sys

# typing.TYPE_CHECKING without importing typing (the package root imports this module; type checkers treat
# any name TYPE_CHECKING alike)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["exports"]


def exports(
    package: str, homes: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose public names are defined in the modules `homes` maps
    (a module named relative to the package → the names it defines)."""
    home = {name: f"{package}.{module}" for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module not in sys.modules:
            __import__(module)
        # Not kept in the package's globals: a pytester run drops the modules it imported when it ends, and a
        # kept class would then outlive its module (the next run imports a new one).
        return getattr(sys.modules[module], name)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *home})

    return __getattr__, __dir__
