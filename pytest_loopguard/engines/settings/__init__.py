"""Engine settings: the base every settings dataclass extends and its checks, then one module per built-in engine.

These stay Python in the compiled build: the policy layer checks every setting against a settings class's
annotations, which a compiled dataclass does not keep, and other packages' settings subclass `EngineSettings`.
Each engine module re-exports its own as `Settings` (`pytest_loopguard.engines.loop_guard.Settings`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EngineSettings", "SettingError", "at_least"]


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Base of every engine's settings dataclass (frozen; presets and overrides build new instances)."""


class SettingError(ValueError):
    """A settings value out of its range; the policy layer turns it into a PolicyError naming the setting."""

    def __init__(self, setting: str, problem: str) -> None:
        self.setting = setting
        self.problem = problem
        super().__init__(f"{setting}: {problem}")


def at_least(settings: object, minimum: int, *names: str) -> None:
    """Raise SettingError for the first of `names` whose value is below `minimum` (None means off)."""
    for name in names:
        value = getattr(settings, name)
        if value is not None and value < minimum:
            raise SettingError(name, f"expected an integer >= {minimum}, got {value!r}")
