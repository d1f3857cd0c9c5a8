"""A policy named on the command line: a preset, a policy file, or an inline YAML mapping `{preset: x, ...}`.

`--policy` (the `loopguard` command) and `--loopguard-policy` (pytest) take the forms a trace's `policy:`
field takes; the inline mapping arrives as a string, so it is read as YAML here, before `resolve_policy`.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import PolicyError

__all__ = ["parse_policy_option"]


def parse_policy_option(text: str) -> str | dict[str, Any]:
    """`text` as given (a preset name or policy file), or the mapping it spells when it starts with `{`."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        # a document starting with `{` is a flow mapping or a syntax error: never another kind of value
        value: dict[str, Any] = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PolicyError(f"an inline policy is YAML, such as {{preset: default, dedup: false}}: {problem}") from None
    return value
