"""Scoring policies on labelled real runs, and diffs of the verdicts of two policies."""

from __future__ import annotations

from .._lazy import exports

TYPE_CHECKING = False  # typing's, without importing typing: see pytest_loopguard._lazy
if TYPE_CHECKING:
    from ._diff import Change, TraceDiff, diff_results
    from ._labels import LabelsError, RunLabel, load_labels
    from ._runs import ScoredRun, load_runs
    from ._score import LoopScore, PolicyScore, RunScore, match_labels, score_policy

__all__ = [
    "Change",
    "LabelsError",
    "LoopScore",
    "PolicyScore",
    "RunLabel",
    "RunScore",
    "ScoredRun",
    "TraceDiff",
    "diff_results",
    "load_labels",
    "load_runs",
    "match_labels",
    "score_policy",
]

__getattr__, __dir__ = exports(__name__, {
    "_diff": ("Change", "TraceDiff", "diff_results"),
    "_labels": ("LabelsError", "RunLabel", "load_labels"),
    "_runs": ("ScoredRun", "load_runs"),
    "_score": ("LoopScore", "PolicyScore", "RunScore", "match_labels", "score_policy"),
})
