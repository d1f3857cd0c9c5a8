"""Policies and the Guard that runs their engines for one run, and replay."""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._guard import Clock, Decision, Guard
    from ._policy import ALIASES, Policy, preset_names, resolve_policy, resolving_once
    from ._policy_option import parse_policy_option
    from ._replay import Replayer, policy_for, replay, turn_plan

__all__ = [
    "ALIASES",
    "Clock",
    "Decision",
    "Guard",
    "Policy",
    "Replayer",
    "parse_policy_option",
    "policy_for",
    "preset_names",
    "replay",
    "resolve_policy",
    "resolving_once",
    "turn_plan",
]

__getattr__, __dir__ = exports(__name__, {
    "_guard": ("Clock", "Decision", "Guard"),
    "_policy": ("ALIASES", "Policy", "preset_names", "resolve_policy", "resolving_once"),
    "_policy_option": ("parse_policy_option",),
    "_replay": ("Replayer", "policy_for", "replay", "turn_plan"),
})
