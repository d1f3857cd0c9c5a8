"""Was a warning heeded: per rule, how often the agent changed course within K calls of a warning or block."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, final

from ..core._expect import HEEDABLE, repeated_within
from ..core._model import Outcome, plain
from ..io._runner import execute

if TYPE_CHECKING:
    from ..core._model import ReplayResult, Trace
    from ..runtime._policy import Policy
    from ._runs import ScoredRun

__all__ = ["SOURCES", "HeedRow", "heed_rows", "heed_source"]

# where the verdicts come from: a run recorded with a live guard (the agent saw them), a simulated run (the
# fake LLM saw them) or a log replayed afterwards (the agent never saw them: what it would have done anyway)
SOURCES: Final = ("live", "simulated", "replayed")


@final
@dataclass(frozen=True, slots=True)
class HeedRow:
    """One rule's warnings and blocks on calls, from one source, and how many the agent heeded."""

    reason: str
    source: str
    given: int
    heeded: int

    @property
    def rate(self) -> float | None:
        return self.heeded / self.given if self.given else None

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "source": self.source, "given": self.given, "heeded": self.heeded,
                "rate": self.rate}


def heed_source(trace: Trace) -> str:
    """`simulated` for a scenario, `live` for a run recorded with a live guard, else `replayed`."""
    if trace.mode == "simulate":
        return "simulated"
    return "live" if trace.source.get("kind") == "recorded" else "replayed"


def _heeds(result: ReplayResult, within: int) -> list[tuple[str, bool]]:
    """(reason, heeded) for each warning or block on a call the agent could still react to."""
    steps, got = result.trace.steps, result.steps
    out: list[tuple[str, bool]] = []
    for at, step_result in enumerate(got):
        if plain(step_result.action) not in HEEDABLE or steps[at].kind != "tool":
            continue
        later = sum(1 for s, g in zip(steps[at + 1:], got[at + 1:], strict=True)
                    if s.kind == "tool" and g.action != "not_reached")
        if later == 0 and result.outcome != Outcome.COMPLETED:
            continue  # the run ended before the agent made another call: nothing to judge
        heeded = repeated_within(steps, got, at, within) is None
        for reason in dict.fromkeys(v.reason for v in step_result.verdicts if plain(v.action) in HEEDABLE):
            out.append((reason, heeded))
    return out


def heed_rows(runs: Sequence[ScoredRun], policy: Policy, within: int) -> list[HeedRow]:
    """Replay (or simulate) every run under `policy`: per rule and source, warnings and blocks given and heeded
    (none of the next `within` calls repeats the call that drew it: core/_expect.repeated_within)."""
    counts: dict[tuple[str, str], list[int]] = {}
    for run in runs:
        result = execute(run.trace, policy)
        source = heed_source(run.trace)
        for reason, heeded in _heeds(result, within):
            tally = counts.setdefault((reason, source), [0, 0])
            tally[0] += 1
            tally[1] += heeded
    order = {s: i for i, s in enumerate(SOURCES)}
    return [HeedRow(reason, source, given, heeded)
            for (reason, source), (given, heeded) in sorted(counts.items(), key=lambda kv: (kv[0][0],
                                                                                             order[kv[0][1]]))]
