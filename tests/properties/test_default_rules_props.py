"""Properties of default's file- and progress-level rules, against small models written from their
descriptions (docs/engines.md): per-file read counts, and rejected-turn streaks that warn but never stop."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard import replay
from pytest_loopguard.io._format import trace_from_mapping

FILES = ("a.py", "pkg/b.py", "c.txt")
READS = st.sampled_from(FILES).flatmap(lambda f: st.sampled_from(
    [f"cat {f}", f"sed -n '1,9p' {f}", f"nl -ba {f} | sed -n '3,4p'", f"head -n 5 {f}"]))
OTHER = st.sampled_from(["ls", "python run.py", "git diff", "echo hi"])
ONLY_READS = {"loop_guard": False, "failure_tracker": False, "budget": False, "dedup": False, "context": False}


def run(policy: Any, steps: list[dict[str, Any]]) -> Any:
    return replay(trace_from_mapping({"loopguard": 1, "name": "p", "policy": policy, "steps": steps}))


@given(st.lists(st.one_of(READS, OTHER), max_size=40), st.integers(2, 6), st.integers(1, 4), st.integers(3, 12))
def test_file_read_warnings_and_blocks_follow_the_count(commands: list[str], warn_at: int, every: int,
                                                         block_at: int) -> None:
    policy = {"preset": "default", **ONLY_READS,
              "read_tracker": {"file_reads_warn_at": warn_at, "file_reads_warn_every": every,
                               "file_reads_block_at": block_at, "exact_reread_warn_at": None}}
    # distinct texts: only the per-file count can speak (no consecutive identical region: other args)
    steps = [{"tool": "bash", "args": {"command": c, "n": i}, "result": {"text": f"out {i}"}}
             for i, c in enumerate(commands)]
    result = run(policy, steps)
    counts: dict[str, int] = {}
    for command, step in zip(commands, result.steps, strict=True):
        expected = []
        path = next((f for f in FILES if command.endswith(f) or f" {f} " in f" {command} "), None)
        if path is not None:
            n = counts[path] = counts.get(path, 0) + 1
            if n >= block_at:
                expected = ["read_tracker.file_reads_block"]
            elif n >= warn_at and (n - warn_at) % every == 0:
                expected = ["read_tracker.file_reads"]
        assert [v.reason for v in step.verdicts] == expected, (command, counts)


@given(st.lists(st.booleans(), max_size=60), st.integers(1, 8))
def test_rejected_streaks_warn_every_as_many_and_never_stop(rejected: list[bool], warn_at: int) -> None:
    policy = {"preset": "default", "failure_tracker": {"rejected_warn_at": warn_at}, "loop_guard": False,
              "read_tracker": False, "budget": False, "dedup": False, "context": False}
    steps = [{"rejected": {"reason": "found 2 actions"}} if r else
             {"tool": "bash", "args": {"command": f"echo {i}"}, "result": {"text": "ok"}}
             for i, r in enumerate(rejected)]
    result = run(policy, steps)
    assert result.outcome == "incomplete"
    streak = 0
    for r, step in zip(rejected, result.steps, strict=True):
        streak = streak + 1 if r else 0
        warned = r and streak >= warn_at and (streak - warn_at) % warn_at == 0
        assert [v.reason for v in step.verdicts] == (["failure_tracker.rejected_streak"] if warned else [])
