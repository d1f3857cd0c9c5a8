"""The `loopguard bench` suite: every speed figure issue 11 promises, measured side by side in one process.

Each row is timed `repeat` times (min and median kept). A replay row's cost is per event its replay processed
(a run a policy stops at step k processed k + 1 steps, not the whole trace), and its ratio is to a bare loop
that only fingerprints each tool call of exactly those events (canonical JSON of tool + arguments, hashed)
and counts consecutive repeats in a dict, timed in turns with it. Other rows show their ratio to that bare loop
over every synthetic event. A goal in µs or events/s is judged in this machine's µs, as written (a loaded
machine misses it: state the load beside the figures); a goal in × is judged as the ratio. Heavy rows (a
streamed 1M-event run, a 1,000-file corpus) run `loopguard run` in a subprocess, and the corpus also through
pytest (`bench_pytest`); they are only measured when asked for, so a plain `loopguard bench` stays quick.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import yaml
from tabulate import tabulate

from ..core._model import NOT_REACHED, Task, ToolCall, ToolResult, Trace
from ..io._format import dumps, load_file, loads
from ..runtime._guard import Guard
from ..runtime._policy import Policy, resolve_policy
from ..runtime._replay import replay
from ._replay import synthetic_trace
from ._rows import SuiteRow

__all__ = ["bare_loop", "run_suite", "suite_json", "suite_table", "write_corpus"]

T = TypeVar("T")
_LIVE_CALLS: Final = 2000  # calls per live-check repeat
_CONSTRUCTIONS: Final = 200  # Guards built per construction repeat
_CORPUS_STEPS: Final = 40  # steps per file of the corpus row: about a real recorded run's length


def _repeat(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Wall seconds of `repeat` calls of `fn`."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def _repeat_fresh(make: Callable[[], T], fn: Callable[[T], Any], repeat: int) -> list[float]:
    """Wall seconds of `repeat` calls of `fn`, each on a fresh `make()` made before its clock starts."""
    out = []
    for _ in range(repeat):
        data = make()
        start = time.perf_counter()
        fn(data)
        out.append(time.perf_counter() - start)
    return out


def fresh_traces(texts: Sequence[str]) -> list[Trace]:
    """The traces of these JSONL texts as the loader makes them: every string its own object, whose hash no
    replay has worked out yet. Replaying the same objects again would time that work away (a string keeps
    its hash), which a real run, reading each trace once, always pays."""
    return [loads(text, fmt="jsonl")[0] for text in texts]


def _row(item: str, unit: str, units: int, seconds: list[float], **kw: Any) -> SuiteRow:
    per = [s * 1e6 / units for s in seconds]
    return SuiteRow(item, unit, units, min(per), statistics.median(per), **kw)


def bare_loop(traces: Sequence[Trace]) -> int:
    """The baseline: fingerprint each tool call from its raw arguments and count consecutive repeats.

    Returns the longest streak seen (so the work cannot be optimised away, and a test can check it).
    """
    dumps_ = json.dumps
    sha = hashlib.sha1
    longest = 0
    for trace in traces:
        counts: dict[str, int] = {}
        last = ""
        for step in trace.steps:
            call = step.call
            if call is None:
                continue
            fp = sha(dumps_([call.tool, call.args], sort_keys=True, separators=(",", ":")).encode()).hexdigest()
            n = counts.get(fp, 0) + 1 if fp == last else 1
            counts[fp] = n
            last = fp
            longest = max(longest, n)
    return longest


def _events(traces: Sequence[Trace]) -> int:
    return sum(len(t.steps) for t in traces)


def reached_prefixes(traces: Sequence[Trace], policy: Policy) -> list[Trace]:
    """Each trace cut to the steps `policy`'s replay reaches (a run it stops at step k keeps steps 0..k): the
    events the replay really processes, which the bare loop of its row runs over."""
    out = []
    for trace in traces:
        reached = sum(1 for s in replay(trace, policy).steps if s.action != NOT_REACHED)
        out.append(trace if reached == len(trace.steps) else dataclasses.replace(trace, steps=trace.steps[:reached]))
    return out


def realistic_calls(seed: int, count: int = _LIVE_CALLS) -> list[tuple[ToolCall, ToolResult]]:
    """What a coding agent's calls look like (the live-check row's realistic mix): reads of files with line
    ranges, searches with a path, shell commands (tests, git, builds), edits, listings; about one in seven
    fails, and results are a few KB of text. Drawn from `seed`, before any clock starts."""
    rng = random.Random(seed)
    files = [f"src/pkg/{d}/{n}.py" for d in ("core", "io", "cli", "engines") for n in ("model", "read", "main", "util")]
    words = ("def", "return", "self", "import", "class", "value", "path", "error", "result", "None")
    bodies = [" ".join(rng.choice(words) for _ in range(rng.randint(200, 700))) for _ in range(12)]
    commands = ("pytest -x tests/test_model.py", "pytest -q", "git diff", "git status", "python -m build",
                "ruff check src", "mypy src", "ls -la src/pkg")
    out = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.35:
            start = rng.choice((1, 1, 120, 240, 480))
            call = ToolCall.of("read_file", {"path": rng.choice(files), "start_line": start, "end_line": start + 199})
        elif roll < 0.50:
            call = ToolCall.of("grep", {"pattern": rng.choice(("TODO", "def load", "raise ", "import yaml")),
                                        "path": rng.choice(("src", "src/pkg/core", "tests"))})
        elif roll < 0.75:
            call = ToolCall.of("bash", {"command": rng.choice(commands)})
        elif roll < 0.92:
            call = ToolCall.of("edit_file", {"path": rng.choice(files), "old": "return None",
                                             "new": f"return {rng.choice(words)}"})
        else:
            call = ToolCall.of("list_dir", {"path": rng.choice(("src", "src/pkg", "tests"))})
        # each result its own string, as an agent's are (a string shared by several would have its hash worked
        # out once for all of them)
        if rng.random() < 0.15:
            out.append((call, ToolResult(ok=False, text=_own(rng.choice(bodies)[:600]), error="exit status 1")))
        else:
            out.append((call, ToolResult(text=_own(rng.choice(bodies)))))
    return out


# the task the realistic mix's agent works on (its objective is what the context engine keeps in view)
REALISTIC_TASK: Final = Task(objective="Fix the failing test in tests/test_model.py", phase="act")


def _own(text: str) -> str:
    """A copy of `text` that is a string object of its own (slicing a whole string returns the same one)."""
    return (" " + text)[1:]


def _replay_all(traces: Sequence[Trace], policy: Policy) -> None:
    for trace in traces:
        replay(trace, policy)


def _live_loop(policy: Policy, calls: Sequence[tuple[ToolCall, ToolResult]], *, build: bool,
               task: Task | None = None) -> None:
    """What an agent does around each tool call: one call per turn, checked before and after."""
    guard = Guard(policy, task=task)
    for call, result in calls:
        if build:
            call = ToolCall.of(call.tool, call.args)
        guard.start_turn((call,))
        before = guard.before_call(call)
        guard.after_call(call, result if before.runs else None, before)
        guard.end_turn()


def _live_calls(traces: Sequence[Trace]) -> list[tuple[ToolCall, ToolResult]]:
    out = []
    for trace in traces:
        for step in trace.steps:
            if step.call is not None:
                out.append((step.call, step.outcome))
                if len(out) == _LIVE_CALLS:
                    return out
    return out


def _raw_parse(text: str, fmt: str) -> Any:
    if fmt == "yaml":
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if fmt == "json":
        return json.loads(text)
    return [json.loads(line) for line in text.split("\n") if line]


def _subprocess_run(args: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) and exit status of `loopguard run ARGS` in a fresh interpreter.

    Peak RSS is that one child's `ru_maxrss`, from `os.wait4` (RUSAGE_CHILDREN would give the largest child
    this process ever waited for, e.g. a pytest row's).
    """
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "pytest_loopguard.cli._main", "run", *args],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    return seconds, usage.ru_maxrss / 1024, child.returncode


def _stream_file(folder: Path, events: int, seed: int) -> Path:
    """A one-trace JSONL file of `events` steps: a synthetic trace's step lines, repeated with fresh indexes."""
    trace = synthetic_trace("bench-stream", random.Random(seed), steps=2000)
    header, *lines = dumps(trace, "jsonl").rstrip("\n").split("\n")
    path = folder / "stream.jsonl"
    with path.open("w", encoding="utf-8") as out:
        out.write(header + "\n")
        written = 0
        while written < events:
            for line in lines[: events - written]:
                out.write(line + "\n")
            written += min(len(lines), events - written)
    return path


def write_corpus(folder: Path, files: int, seed: int) -> Path:
    """`folder/corpus` holding `files` seeded synthetic JSONL traces of 40 steps each; returns that folder."""
    rng = random.Random(seed)
    root = folder / "corpus"
    root.mkdir()
    for i in range(files):
        trace = synthetic_trace(f"corpus-{i}", rng, steps=_CORPUS_STEPS)
        (root / f"t{i:04d}.jsonl").write_text(dumps(trace, "jsonl"), encoding="utf-8")
    return root


def run_suite(
    policies: Sequence[Policy],
    *,
    events: int = 5000,
    repeat: int = 3,
    seed: int = 0,
    stream: int = 0,
    corpus: int = 0,
) -> list[SuiteRow]:
    """Measure every row. `stream` (events) and `corpus` (files), when non-zero, add the subprocess rows."""
    rng = random.Random(seed)
    traces: list[Trace] = []
    while _events(traces) < events:
        traces.append(synthetic_trace(f"bench-{seed}-{len(traces)}", rng))
    n = _events(traces)
    texts = [dumps(trace, "jsonl") for trace in traces]  # each replay and live row runs on fresh copies of these
    # the baseline over every synthetic event: the floor of the rows that are not replays (live checks, loading)
    base_seconds = _repeat(lambda: bare_loop(traces), repeat)
    replays: list[tuple[str, int, list[float], list[float], str]] = []
    for policy in policies:
        # each replay row is over the events its replay reaches (a run stopped at step k processed k + 1 steps,
        # not the whole trace), and its bare loop runs over exactly those events, timed in turns with it
        prefixes = reached_prefixes(traces, policy)
        seconds: list[float] = []
        bare_runs: list[float] = []
        for _ in range(repeat):
            bare_runs += _repeat(functools.partial(bare_loop, prefixes), 1)
            seconds += _repeat_fresh(functools.partial(fresh_traces, texts),
                                     functools.partial(_replay_all, policy=policy), 1)
        goal = "≤ 3× bare loop on the same events" + (", ≥ 250k events/s" if policy.name == "default" else "")
        replays.append((f"replay {policy.name}", _events(prefixes), seconds, bare_runs, goal))
    base_seconds += _repeat(lambda: bare_loop(traces), repeat)
    base = _row("baseline: bare fingerprint loop", "event", n, base_seconds)
    rows = [dataclasses.replace(base, ratio=1.0)]
    floor = base.min_us

    def ratio_row(item: str, unit: str, units: int, seconds: list[float], goal: str, goal_us: float | None,
                  **extra: Any) -> SuiteRow:
        """A row judged against an absolute goal in µs per unit (this machine's µs, as the goal says)."""
        row = _row(item, unit, units, seconds, extra=extra)
        met = None if goal_us is None else row.min_us <= goal_us
        return dataclasses.replace(row, goal=goal, met=met, ratio=row.min_us / floor)

    for item, reached, seconds, bare_seconds, goal in replays:
        row = _row(item, "event", reached, seconds)
        bare_us = min(bare_seconds) * 1e6 / reached
        ratio = row.min_us / bare_us
        met = ratio <= 3.0 and (not goal.endswith("events/s") or 1e6 / row.min_us >= 250_000)
        rows.append(dataclasses.replace(row, goal=goal, met=met, ratio=ratio, extra={
            "events_reached": reached, "events_in_traces": n, "bare_loop_us": round(bare_us, 3)}))
    bare = dataclasses.replace(resolve_policy("default"), engines={}, name="no-engines")
    rows.append(ratio_row("replay, no engine at all", "event", n,
                          _repeat_fresh(lambda: fresh_traces(texts), lambda t: _replay_all(t, bare), repeat),
                          "≤ 1 µs", 1.0))

    default = resolve_policy("default")
    calls = _live_calls(traces)
    rows.append(ratio_row("live check, default, synthetic calls", "check", len(calls),
                          _repeat_fresh(lambda: _live_calls(fresh_traces(texts)),
                                        lambda c: _live_loop(default, c, build=False), repeat), "≤ 5 µs", 5.0))
    mix, task = realistic_calls(seed), REALISTIC_TASK
    rows.append(ratio_row("live check, default, realistic mix", "check", len(mix),
                          _repeat_fresh(lambda: realistic_calls(seed),
                                        lambda m: _live_loop(default, m, build=False, task=task), repeat),
                          "≤ 5 µs", 5.0))
    rows.append(ratio_row("live check, default, realistic mix + ToolCall.of", "check", len(mix),
                          _repeat_fresh(lambda: realistic_calls(seed),
                                        lambda m: _live_loop(default, m, build=True, task=task), repeat),
                          "—", None))
    raw_args = [(c.tool, dict(c.args)) for c, _ in calls]
    rows.append(ratio_row("ToolCall.of", "call", len(raw_args),
                          _repeat(lambda: [ToolCall.of(t, a) for t, a in raw_args], repeat), "≤ 2 µs", 2.0))
    rows.append(ratio_row("Guard construction, default", "guard", _CONSTRUCTIONS,
                          _repeat(lambda: [Guard(default) for _ in range(_CONSTRUCTIONS)], repeat),
                          "≤ 100 µs", 100.0))

    sample = traces[0]
    for fmt in ("yaml", "json", "jsonl"):
        text = dumps(sample, fmt)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"t.{fmt}"
            path.write_text(text, encoding="utf-8")
            loaded = _repeat(lambda p=path: load_file(p), repeat)  # type: ignore[misc]
        raw = _row("raw", "event", len(sample.steps), _repeat(lambda t=text, f=fmt: _raw_parse(t, f), repeat))  # type: ignore[misc]
        rows.append(ratio_row(f"load {fmt}", "event", len(sample.steps), loaded, "—", None,
                              raw_parser_us=round(raw.min_us, 3)))

    from ._pipe import pipe_rows  # processes of its own: started only here

    for row in pipe_rows(traces, repeat):
        rows.append(dataclasses.replace(row, ratio=row.min_us / floor))

    if stream or corpus:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            if corpus:
                root = write_corpus(folder, corpus, seed)
                # about a second each: run up to 3 times, as the pytest rows are, and judged on the fastest
                runs = [_subprocess_run([str(root)]) for _ in range(max(1, min(repeat, 3)))]
                wall, median = min(r[0] for r in runs), statistics.median(r[0] for r in runs)
                peak, status = max(r[1] for r in runs), max(r[2] for r in runs)
                rows.append(SuiteRow(f"loopguard run, {corpus} files", "run", 1, wall * 1e6, median * 1e6,
                                     goal="≤ 1 s for 1,000 files",
                                     met=wall <= 1.0 if corpus == 1000 else None,
                                     extra={"seconds": round(wall, 3), "median_seconds": round(median, 3),
                                            "peak_rss_mb": round(peak, 1), "exit": status}))
                from ._pytest import pytest_rows  # pytest and its subprocesses only for this row

                rows += pytest_rows(folder, root, repeat)
            if stream:
                path = _stream_file(folder, stream, seed)
                # the file names no policy, so `default` replays it and stops it early (step 72 at seed 0): that
                # row measures reading and checking; the `roo` row replays every step (nothing stops it)
                for label, args in (("", []), (", every step replayed (roo)", ["--policy", "roo"])):
                    wall, peak, status = _subprocess_run([*args, str(path)])
                    rows.append(SuiteRow(f"loopguard run, {stream} events in one JSONL file{label}", "run", 1,
                                         wall * 1e6, wall * 1e6, goal="< 200 MB peak, ≤ 10 s for 1M events",
                                         met=peak < 200 and wall <= 10 if stream == 1_000_000 else None,
                                         extra={"seconds": round(wall, 3), "peak_rss_mb": round(peak, 1),
                                                "exit": status,
                                                "file_mb": round(path.stat().st_size / 2**20, 1)}))
    return rows


def suite_table(rows: Sequence[SuiteRow]) -> str:
    """The rows as a table: min and median cost per unit, per-second rate, ratio to baseline, goal, met."""
    body = []
    for r in rows:
        if r.unit == "run":
            cost, median, rate = f"{r.extra['seconds']:.2f} s", f"{r.extra['peak_rss_mb']:.0f} MB peak", "—"
        elif r.unit == "pytest":  # rate: files per second of the cost over pytest's own start-up
            over = r.extra.get("over_startup_s")
            rate = f"{r.units / over:,.0f} files/s" if over is not None and over > 0 else "—"
            cost, median = f"{r.extra['seconds']:.2f} s", f"{r.extra['median_seconds']:.2f} s"
        elif "skipped" in r.extra:  # not measured (a framework that is not installed)
            cost, median, rate = "—", "—", "—"
        else:
            cost, median, rate = f"{r.min_us:.2f}", f"{r.median_us:.2f}", f"{1e6 / r.min_us:,.0f}"
        ratio = "—" if r.ratio is None else f"{r.ratio:.2f}×"
        met = "—" if r.met is None else ("yes" if r.met else "no")
        body.append([r.item, r.unit, cost, median, rate, ratio, r.goal or "—", met])
    headers = ["item", "per", "min µs", "median µs", "per second", "× baseline", "goal", "met"]
    return tabulate(body, headers=headers, tablefmt="simple", disable_numparse=True)


def suite_json(rows: Sequence[SuiteRow], **meta: Any) -> dict[str, Any]:
    """The rows and how they were measured, for CI artifacts."""
    return {**meta, "python": sys.version.split()[0], "rows": [r.to_dict() for r in rows]}
