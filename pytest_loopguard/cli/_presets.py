"""`loopguard presets [NAMES]`: presets' settings side by side, one column per preset."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from ._common import EXIT_OK, OFF, out, print_json

if TYPE_CHECKING:
    from ..runtime._policy import Policy

SETTING_WIDTH: Final = 28  # long lists (marker words, tool names) are cut so presets fit side by side


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAMES", help="presets to show (default: all)")
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    from ..runtime._policy import ALIASES, preset_names, resolve_policy

    names = args.names or [n for n in preset_names() if n not in ALIASES]
    policies = [resolve_policy(n) for n in names]
    if args.json:
        print_json({p.name: p.to_dict() for p in policies})
    else:
        out(presets_table(policies))
        out("")
        out(sources_text(policies))
    return EXIT_OK


def sources_text(policies: Sequence[Policy]) -> str:
    """Where each preset comes from (its YAML's `source`: the system, version and files it follows), a line each."""
    width = max(len(p.name) for p in policies)
    return "\n".join(f"{p.name:<{width}}  {p.source or '(a policy of your own: no source given)'}" for p in policies)


def _setting_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_setting_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_setting_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def presets_table(policies: Sequence[Policy]) -> str:
    """Rows `engine.setting`, one column per policy; `—` where the policy does not enable the engine."""
    import dataclasses

    from ..engines import ENGINE_ORDER, registry
    from ..report._console import fit_table
    from ..report._tables import shorten

    known = registry()
    engines = [e for e in (*ENGINE_ORDER, *sorted(known)) if any(p.enabled(e) for p in policies)]
    rows: list[list[str]] = []
    for engine in dict.fromkeys(engines):
        for f in dataclasses.fields(known[engine].Settings):
            row = [f"{engine}.{f.name}"]
            for p in policies:
                value = _setting_text(getattr(p.settings(engine), f.name)) if p.enabled(engine) else OFF
                row.append(shorten(value, SETTING_WIDTH))
            rows.append(row)
    # Engines classify calls by the policy's tool table, so its size differs between presets too.
    rows.append(["tools (rules)", *(str(len(p.tools)) for p in policies)])
    return fit_table(rows, ["setting", *(p.name for p in policies)])
