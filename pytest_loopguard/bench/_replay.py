"""Replay speed: seeded synthetic traces replayed under each preset (`loopguard bench`).

This is where performance targets are measured; tests never time anything. The traces mix what real
runs do: turns of one to three calls, bursts of identical calls, paged file reads and searches, browser
snapshots of several KB, failed calls, transient and context-overflow LLM errors, phase changes and user
messages. Traces are generated before any clock starts, so only replay is timed.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

from tabulate import tabulate

from ..core._model import LLMCall, Message, Step, StepResult, Task, ToolCall, ToolResult, Trace, make_step
from ..live._session import Session
from ..report._console import progress
from ..runtime._policy import Policy
from ..runtime._replay import replay

__all__ = ["BenchRow", "bench_table", "run_bench", "synthetic_trace"]

STEPS_PER_TRACE: Final = 400
_FILES: Final = tuple(f"src/module_{i}.py" for i in range(24))
_PATTERNS: Final = ("def main", "TODO", "import yaml", "class Guard", "raise TraceError")
_URLS: Final = tuple(f"https://shop.example.com/item/{i}" for i in range(12))
_SHELL: Final = ("git status", "pytest -q", "ls -la", "tail -n 50 build.log", "make lint")
_TRANSIENT: Final = "503 Service Unavailable: the server had an error"
_OVERFLOW: Final = "This model's maximum context length is 16000 tokens; your prompt has too many tokens"


@final
@dataclass(frozen=True, slots=True)
class BenchRow:
    """One policy's measurement: events replayed (steps reached), wall seconds, interventions."""

    policy: str
    events: int
    traces: int
    seconds: float
    interventions: int

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("inf")

    @property
    def us_per_event(self) -> float:
        return self.seconds * 1e6 / self.events if self.events else 0.0


class _Generator:
    """Draws steps from one seeded random source; result texts come from a fixed pool (no per-step building)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        words = ("agent", "loop", "guard", "snapshot", "button", "link", "heading", "item", "price", "cart")
        self.snapshots = [
            "\n".join(f'- {rng.choice(words)} [ref={j}] "{rng.choice(words)} {j}"' for j in range(rng.randint(90, 160)))
            for _ in range(8)
        ]
        self.file_texts = [" ".join(rng.choice(words) for _ in range(rng.randint(150, 350))) for _ in range(8)]
        self.t = 0

    def call(self) -> tuple[ToolCall, ToolResult]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.22:
            return ToolCall.of("browser_snapshot"), ToolResult(text=rng.choice(self.snapshots))
        if roll < 0.40:
            call = ToolCall.of("browser_click", {"index": rng.randint(1, 30)})
        elif roll < 0.48:
            call = ToolCall.of("navigate", {"url": rng.choice(_URLS)})
        elif roll < 0.66:
            args = {"path": rng.choice(_FILES), "offset": rng.choice((1, 501, 1001)), "limit": 500}
            return ToolCall.of("read_file", args), ToolResult(text=rng.choice(self.file_texts))
        elif roll < 0.76:
            args = {"pattern": rng.choice(_PATTERNS), "path": ".", "offset": rng.choice((0, 50))}
            call = ToolCall.of("search_files", args)
        elif roll < 0.86:
            call = ToolCall.of("shell", {"command": rng.choice(_SHELL)})
        elif roll < 0.93:
            call = ToolCall.of("write_file", {"path": rng.choice(_FILES), "content": "x = 1\n"})
        else:
            call = ToolCall.of("browser_type", {"index": rng.randint(1, 30), "text": "cheap flights"})
        if rng.random() < 0.12:
            return call, ToolResult.failure(rng.choice(("Element not found", "Timeout after 30000 ms", "exit 1")))
        return call, ToolResult(text=f"ok {call.tool}")

    def step_time(self) -> int:
        self.t += self.rng.randint(20, 1500)
        return self.t


def synthetic_trace(name: str, rng: random.Random, steps: int = STEPS_PER_TRACE) -> Trace:
    """One synthetic trace of about `steps` steps, drawn from `rng`."""
    gen = _Generator(rng)
    out: list[Step] = []

    def add(kind: Any, **fields: Any) -> None:
        out.append(make_step(len(out), kind, t=gen.step_time(), **fields))

    while len(out) < steps:
        roll = rng.random()
        if roll < 0.02:
            add("llm", llm=LLMCall(error=_TRANSIENT))
        elif roll < 0.03:
            add("llm", llm=LLMCall(error=_OVERFLOW))
        elif roll < 0.04:
            add("phase", phase=rng.choice(("explore", "act", "verify", "recover")))
        elif roll < 0.05:
            add("message", message=Message("user", "Please keep going and report when done."))
        add("llm", llm=LLMCall(output_tokens=rng.randint(20, 300)))
        if rng.random() < 0.06:  # a burst of identical calls: what the loop guards are for
            call, result = gen.call()
            for _ in range(rng.randint(3, 9)):
                add("tool", call=call, result=result)
            continue
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            call, result = gen.call()
            add("tool", call=call, result=result)
    return Trace(
        name=name,
        steps=tuple(out),
        description="synthetic bench trace",
        source={"kind": "synthetic"},
        task=Task(objective="Find the cheapest flight and fix the failing test", phase="act"),
        context={"window_tokens": 16000},
    )


def run_bench(
    policies: Sequence[Policy], *, events: int = 20000, seed: int = 0, session: bool = False
) -> list[BenchRow]:
    """Replay synthetic traces under each policy until `events` steps were reached; time replay only.

    Every policy replays the same traces in the same order (generated from `seed` once, outside the timing);
    a run a policy ends early (stop, fail) reaches fewer steps, so more traces are replayed for it.
    `session=True` times a live `Session` fed each trace instead, recording it (redacted) to a temporary
    file: the cost a live agent pays per event.
    """
    with tempfile.TemporaryDirectory() as folder:
        return _measure(policies, events, seed, Path(folder) if session else None)


def _live(trace: Trace, policy: Policy, path: Path) -> tuple[StepResult, ...]:
    with Session(policy, record=path, task=trace.task, context=trace.context, now_ms=None, name=trace.name) as live:
        live.feed(trace.steps)
    return live.steps


def _measure(policies: Sequence[Policy], events: int, seed: int, folder: Path | None) -> list[BenchRow]:
    rng = random.Random(seed)
    pool: list[Trace] = []
    rows: list[BenchRow] = []
    for policy in progress(policies, "bench", min_items=1):  # each preset takes a while: a bar from the first
        reached = interventions = used = 0
        elapsed = 0.0
        while reached < events:
            if used == len(pool):
                pool.append(synthetic_trace(f"bench-{seed}-{used}", rng))
            trace = pool[used]
            used += 1
            start = time.perf_counter()
            if folder is None:
                steps = replay(trace, policy).steps
            else:
                steps = _live(trace, policy, folder / f"{policy.name}-{used}.jsonl")
            elapsed += time.perf_counter() - start
            for s in steps:
                if s.action != "not_reached":
                    reached += 1
                    if s.action != "allow":
                        interventions += 1
        rows.append(BenchRow(policy.name, reached, used, elapsed, interventions))
    return rows


def bench_table(rows: Sequence[BenchRow]) -> str:
    """The measurements as a table: events/s and µs/event per policy."""
    body = [
        [r.policy, r.events, r.traces, f"{r.seconds:.3f}", f"{r.events_per_second:,.0f}", f"{r.us_per_event:.1f}",
         r.interventions]
        for r in rows
    ]
    headers = ["policy", "events", "traces", "seconds", "events/s", "µs/event", "interventions"]
    return tabulate(body, headers=headers, tablefmt="simple", disable_numparse=True)
