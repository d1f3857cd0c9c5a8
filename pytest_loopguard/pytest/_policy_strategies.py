"""Hypothesis strategies for policies: a preset, or your own policy file or mapping, with drawn thresholds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy

from ..runtime._policy import Policy, read_policy_file, resolve_policy

__all__ = ["policies", "policy_overrides"]


def policies(
    preset: str | Path | Mapping[str, Any] = "default", *, engines: Sequence[str] = ("loop_guard",),
    max_threshold: int = 8,
) -> SearchStrategy[Policy]:
    """A preset — or your own policy file or mapping — with drawn thresholds for `engines`:
    `policy_overrides(...)` resolved by `resolve_policy`."""
    return policy_overrides(preset, engines=engines, max_threshold=max_threshold).map(resolve_policy)


@st.composite
def policy_overrides(
    draw: DrawFn,
    preset: str | Path | Mapping[str, Any] = "default",
    *,
    engines: Sequence[str] = ("loop_guard",),
    max_threshold: int = 8,
) -> dict[str, Any]:
    """A policy mapping: a preset with drawn thresholds for `engines` — what a trace's `policy:` holds,
    so a trace built with it saves and loads with its thresholds.

    `preset` is a bundled preset's name, or your own policy: a policy file (a path ending in `.yaml` or
    `.yml`, read once when the strategy is built) or a policy mapping. Everything it sets stays; the drawn
    thresholds replace only the settings below, so the properties run around the policy your agent ships.

    loop_guard: 2 ≤ warn_at < block_at ≤ max_threshold, max_warnings_per_call 1..4, poll_multiplier 1..3;
    read_tracker: 2 ≤ warn_at < block_at ≤ max_threshold; failure_tracker: max_failures 1..max_threshold.
    The mapping's `name` lists the drawn values, so a failing example says which thresholds it used.
    """
    base, base_name = _policy_base(preset)
    overrides: dict[str, Any] = dict(base)
    if "loop_guard" in engines:
        warn_at = draw(st.integers(min_value=2, max_value=max_threshold - 1))
        overrides["loop_guard"] = {
            **_settings_of(base, "loop_guard"),
            "warn_at": warn_at,
            "block_at": draw(st.integers(min_value=warn_at + 1, max_value=max_threshold)),
            "max_warnings_per_call": draw(st.integers(min_value=1, max_value=4)),
            "poll_multiplier": draw(st.integers(min_value=1, max_value=3)),
        }
    if "read_tracker" in engines:
        warn_at = draw(st.integers(min_value=2, max_value=max_threshold - 1))
        overrides["read_tracker"] = {
            **_settings_of(base, "read_tracker"),
            "warn_at": warn_at,
            "block_at": draw(st.integers(min_value=warn_at + 1, max_value=max_threshold)),
        }
    if "failure_tracker" in engines:
        overrides["failure_tracker"] = {**_settings_of(base, "failure_tracker"),
                                        "max_failures": draw(st.integers(min_value=1, max_value=max_threshold))}
    drawn = {"loop_guard": ("warn_at", "block_at", "max_warnings_per_call", "poll_multiplier"),
             "read_tracker": ("warn_at", "block_at"), "failure_tracker": ("max_failures",)}
    summary = ",".join(
        f"{engine}.{key}={overrides[engine][key]}" for engine in drawn if engine in engines for key in drawn[engine]
    )
    overrides["name"] = f"{base_name}[{summary}]"
    return overrides


def _policy_base(preset: str | Path | Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """The mapping drawn thresholds go on top of, and the name the drawn policies are called by: a preset's
    `{preset: NAME}`; a policy file's own mapping (its `name:`, else its stem); a mapping as given."""
    if isinstance(preset, Mapping):
        name = preset.get("name") or preset.get("preset") or preset.get("extends") or "policy"
        return preset, str(name)
    if isinstance(preset, Path) or preset.endswith((".yaml", ".yml")):
        path = Path(preset)
        raw = read_policy_file(path)
        resolve_policy(str(path))  # a bad file fails here, in one line, before anything is drawn
        return raw, str(raw.get("name") or path.stem)
    return {"preset": preset}, preset


def _settings_of(base: Mapping[str, Any], engine: str) -> dict[str, Any]:
    """An engine's settings in the base policy (none when it sets none, or turns the engine on with `true`)."""
    settings = base.get(engine)
    return dict(settings) if isinstance(settings, Mapping) else {}
