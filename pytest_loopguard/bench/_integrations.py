"""`loopguard bench --integrations`: what each framework integration adds to a scripted run of its framework.

Each integration ships `overhead_run(calls, guarded)` (`integrations/_<framework>_bench.py`): one offline run
of the framework's own agent loop on a scripted model that makes `calls` tool calls, with the integration
(`guarded`) or without it. The row is the guarded run's cost over the unguarded one's on the same script, both
timed in this process, min of the repeats: the integration's overhead as the framework's users would feel it
(issue 22's goal: at most 10% on a 200-call run). A framework that is not installed gets a row saying so.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Final

from ._rows import SuiteRow

__all__ = ["FRAMEWORKS", "integration_rows"]

# (framework, the extra that installs it, the module with its overhead_run)
FRAMEWORKS: Final = (
    ("LangChain", "langchain", "pytest_loopguard.integrations._langchain_bench"),
    ("OpenAI Agents SDK", "openai-agents", "pytest_loopguard.integrations._openai_agents_bench"),
    ("Pydantic AI", "pydantic-ai", "pytest_loopguard.integrations._pydantic_ai_bench"),
    ("Google ADK", "google-adk", "pytest_loopguard.integrations._google_adk_bench"),
    ("Claude Agent SDK + Claude Code CLI", "claude-agent-sdk", "pytest_loopguard.integrations._claude_code_bench"),
    # the SDK over a stand-in CLI that does next to nothing: what the hooks cost per call, beside no real work
    ("Claude Agent SDK, stand-in CLI", "claude-agent-sdk", "pytest_loopguard.integrations._claude_agent_sdk_bench"),
)
# rows that show a cost per call rather than judge an overhead: their "framework" is not one a user runs
INFORMATIONAL: Final = frozenset({"Claude Agent SDK, stand-in CLI"})
GOAL_RATIO: Final = 1.10


def _timed(run: Callable[[int, bool], None], calls: int, repeat: int,
           baselines: Mapping[str, Callable[[int], object]]) -> tuple[list[float], list[float], dict[str, float]]:
    """Seconds of each unguarded and guarded run of `repeat` each, and the fastest of each further baseline run,
    taken in turns so a change of load hits them all alike."""
    times: tuple[list[float], list[float]] = ([], [])
    others = {name: float("inf") for name in baselines}
    for _ in range(repeat):
        for guarded in (False, True):
            start = time.perf_counter()
            run(calls, guarded)
            times[guarded].append(time.perf_counter() - start)
        for name, other in baselines.items():
            start = time.perf_counter()
            other(calls)
            others[name] = min(others[name], time.perf_counter() - start)
    return times[0], times[1], others


def integration_rows(calls: int = 200, repeat: int = 5) -> list[SuiteRow]:
    rows: list[SuiteRow] = []
    for name, extra, module in FRAMEWORKS:
        item = f"{name}, {calls}-call scripted run, guarded"
        try:
            bench = importlib.import_module(module)
            run: Callable[[int, bool], None] = bench.overhead_run
        except ModuleNotFoundError as exc:
            rows.append(SuiteRow(item, "agent run", 1, 0.0, 0.0, goal="≤ 1.10× unguarded", met=None,
                                 extra={"skipped": f"{exc.name} is not installed: pip install "
                                                   f"'pytest-loopguard[{extra}]'"}))
            continue
        run(calls, True)  # first runs import and warm the framework outside the timing
        run(calls, False)
        baselines: Mapping[str, Callable[[int], object]] = getattr(bench, "BASELINES", {})
        for other in baselines.values():
            other(calls)
        plains, guardeds, others = _timed(run, calls, repeat, baselines)
        plain, guarded = min(plains), min(guardeds)
        ratio = guarded / plain
        judged = name not in INFORMATIONAL
        rows.append(SuiteRow(item, "agent run", 1, guarded * 1e6, statistics.median(guardeds) * 1e6,
                             goal="≤ 1.10× unguarded" if judged else "— (cost per call)",
                             met=ratio <= GOAL_RATIO if judged else None, ratio=ratio,
                             extra={"unguarded_us": round(plain * 1e6, 1),
                                    "overhead_pct": round((ratio - 1) * 100, 1),
                                    # each guarded run over the unguarded run just before it: steadier than
                                    # the ratio of the minima where the framework's threads make runs vary
                                    "ratio_paired_median": round(statistics.median(
                                        g / p for g, p in zip(guardeds, plains, strict=True)), 3),
                                    "per_call_us": round((guarded - plain) / calls * 1e6, 2),
                                    **{f"{k}_us": round(v * 1e6, 1) for k, v in others.items()},
                                    **{f"{k}_ratio": round(v / plain, 3) for k, v in others.items()},
                                    **{f"ratio_over_{k}": round(guarded / v, 3) for k, v in others.items()}}))
    return rows
