"""A row of `loopguard bench`: one measurement and how it is judged, as the suite and the pytest rows report it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, final

__all__ = ["SuiteRow"]


@final
@dataclass(frozen=True, slots=True)
class SuiteRow:
    """One measurement: the unit it is counted in, min and median cost per unit over the repeats."""

    item: str
    unit: str  # what one unit is: "event", "check", "call", "guard", "run" (one command), "pytest" (a session)
    units: int  # units per repeat
    min_us: float
    median_us: float
    goal: str = ""  # the goal for this row, as text
    met: bool | None = None  # None: no goal, or not comparable
    ratio: float | None = None  # min cost per event over the baseline's min cost per event
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item, "unit": self.unit, "units": self.units, "min_us": round(self.min_us, 3),
            "median_us": round(self.median_us, 3), "ratio": None if self.ratio is None else round(self.ratio, 2),
            "goal": self.goal, "met": self.met, **self.extra,
        }
