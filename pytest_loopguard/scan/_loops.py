"""The loops in one session: its trace replayed under a policy, and the loop engines' verdicts grouped by what repeats.

A loop (docs/scan.md):
- a *flag* is a warn, block, stop or fail verdict of a loop engine (`loop_guard`, `failure_tracker`,
  `read_tracker`, `stuck_detector`) or of one of `budget`'s streak rules; a flag on a step that is not a
  call (a model turn, a message) counts at the next call, as `eval` counts it;
- each flagged call has a *subject*, what repeats: the call itself (tool and arguments; a shell command by its
  command line), the file a `read_tracker` flag names, or the tool cycle of a ping-pong;
- a loop is the flagged calls of one subject from the first until the subject is met again unflagged, a
  person's prompt comes, or the session ends; other calls in between (the agent's attempts to fix what
  failed) belong to the loop and are counted in its calls and tokens. A call that `failure_tracker.failing_key`
  alone flags with the same key as an open loop (`git commit --no-verify` after `git commit` kept failing)
  joins that loop as a variant of its subject.
The call index is the labels' (0-based over tool steps and rejected turns); `repeats` is how many calls of the
loop's subjects the agent made since the person's last prompt, up to the loop's last call.

A replay ends at a stop (or a `done`); the real agent went on, so the rest of the session is replayed again
from the next step under a fresh guard and its loops are found too (`Loop.stopped` marks the loop whose
verdict ended a replay).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, final

from ..core._model import SEVERITY, Step, Trace, Verdict
from ..runtime._policy import Policy
from ..runtime._replay import replay

__all__ = ["LOOP_ENGINES", "Loop", "call_subject", "find_loops", "loop_summary", "loops_of", "session_verdicts"]

LOOP_ENGINES: Final = frozenset({"loop_guard", "failure_tracker", "read_tracker", "stuck_detector"})
BUDGET_LOOP_REASONS: Final = frozenset({
    "budget.consecutive_same_tool", "budget.observation_streak", "budget.failure_streak",
    "budget.same_url_navigations",
})
FLAGS: Final = frozenset({"warn", "block", "stop", "fail"})
CALL_KINDS: Final = frozenset({"tool", "rejected"})
_SHELL_ARGS: Final = ("command", "cmd", "script")
_FILE_KEYS: Final = ("path", "file")


@final
@dataclass(frozen=True, slots=True)
class Loop:
    """One loop of a session: where it is, what repeats, what it cost, and the verdicts that found it."""

    call: int  # the labels' call index of the first flagged call
    step: int  # its position in the trace's steps
    end_call: int  # the last flagged call
    what: str  # the subject, as it reads: `Bash: git commit …`, `file src/a.py`, `cycle: Read ↔ Edit`
    kind: str  # call | command | file | cycle
    repeats: int  # calls of the subject since the last prompt, up to the end of the loop
    failed: int  # of those, how many failed
    calls: int  # calls from the first flagged one to the last, inclusive
    tokens: int  # model tokens (input + output) of the turns that made those calls
    action: str  # the strongest action among the flags
    reasons: tuple[str, ...]  # the flags' reason codes, first seen first
    t: int | None = None  # the first flagged step's `t` (milliseconds), when the trace has one
    stopped: bool = False  # a verdict in it ended the policy's replay
    flags: int = 0  # flagged calls in the loop

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
                for f in dataclasses.fields(self)}


@dataclass(slots=True)
class _Open:
    subjects: list[tuple[str, str, str]]  # what repeats: the first, then the variants a failing key joined
    first: int  # position in `calls`
    last: int
    failing_key: tuple[Any, ...] | None = None  # failure_tracker's (tool, verb, target) of its failures
    flags: int = 1
    action: str = "warn"
    reasons: list[str] = field(default_factory=list)
    stopped: bool = False


def session_verdicts(trace: Trace, policy: Policy | str) -> tuple[list[tuple[Verdict, ...]], set[int]]:
    """Every step's verdicts (by position) with the replay restarted after each early end, and the positions
    where a replay ended (a stop, a fail or a done before the last step)."""
    steps = trace.steps
    verdicts: list[tuple[Verdict, ...]] = []
    ends: set[int] = set()
    start = 0
    while start < len(steps):
        part = trace if start == 0 else dataclasses.replace(trace, steps=steps[start:])
        result = replay(part, policy)
        reached = 0
        for got in result.steps:
            if got.action == "not_reached":
                break
            verdicts.append(got.verdicts)
            reached += 1
        if reached == len(part.steps):
            break
        ends.add(start + reached - 1)
        start += reached
    return verdicts, ends


def _is_flag(v: Verdict) -> bool:
    return v.action in FLAGS and (v.engine in LOOP_ENGINES or v.reason in BUDGET_LOOP_REASONS)


def _shell(step: Step) -> str | None:
    call = step.call
    if call is None:
        return None
    for key in _SHELL_ARGS:
        value = call.args.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return " ".join(" ".join(value).split())  # Codex's old shell tool: ["bash", "-lc", "..."]
    return None


def call_subject(step: Step) -> tuple[str, str, str]:
    """(kind, key, how it reads) of what a call is, when nothing more specific repeats."""
    if step.kind == "rejected":
        assert step.rejected is not None
        reason = " ".join(step.rejected.reason.split())
        return "call", f"rejected\x1f{reason}", f"rejected turn: {reason}"
    call = step.call
    assert call is not None
    command = _shell(step)
    if command is not None:
        return "command", f"{call.tool}\x1f{command}", f"{call.tool}: {command}"
    return "call", call.fingerprint, call.short(10_000)


def _subject(step: Step, flags: Sequence[Verdict]) -> tuple[str, str, str]:
    for v in flags:
        if v.reason.startswith("loop_guard.ping_pong"):
            tools = v.data.get("tools")
            if isinstance(tools, list) and tools:
                cycle = " ↔ ".join(str(t) for t in tools)
                return "cycle", f"cycle\x1f{cycle}", f"cycle: {cycle}"
    if not any(v.engine == "loop_guard" for v in flags):
        for v in flags:
            if v.engine == "read_tracker":
                path = next((v.data.get(k) for k in _FILE_KEYS if isinstance(v.data.get(k), str) and v.data.get(k)),
                            None)
                if path is not None:
                    return "file", f"file\x1f{path}", f"file {path}"
    return call_subject(step)


def _tokens(step: Step) -> int:
    usage = step.llm if step.llm is not None else (step.rejected.llm if step.rejected is not None else None)
    if usage is None:
        return 0
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)


def _failed(step: Step) -> bool:
    return step.kind == "rejected" or (step.result is not None and not step.result.ok)


def find_loops(trace: Trace, policy: Policy | str = "default") -> list[Loop]:
    """The session's loops under `policy`, in the order they start."""
    verdicts, ends = session_verdicts(trace, policy)
    return loops_of(trace.steps[: len(verdicts)], verdicts, ends)


def _path_args(step: Step) -> list[str]:
    call = step.call
    if call is None:
        return []
    return [v for k, v in call.args.items() if isinstance(v, str) and v and ("path" in k or "file" in k)]


def _same_path(a: str, b: str) -> bool:
    a, b = a.rstrip("/"), b.rstrip("/")
    return a == b or a.endswith("/" + b.lstrip("./")) or b.endswith("/" + a.lstrip("./"))


def _matches(subject: tuple[str, str, str], step: Step, own: tuple[str, str, str]) -> bool:
    """Whether a call is of `subject` (`own`: the call's own subject)."""
    kind, key, _ = subject
    if kind == "file":
        return any(_same_path(p, key.split("\x1f", 1)[1]) for p in _path_args(step))
    if kind == "cycle":
        call = step.call
        return call is not None and call.tool in key.split("\x1f", 1)[1].split(" ↔ ")
    return own[1] == key


def _failing_key(flags: Sequence[Verdict]) -> tuple[Any, ...] | None:
    for v in flags:
        if v.reason == "failure_tracker.failing_key":
            return (v.data.get("tool"), v.data.get("verb"), v.data.get("target"))
    return None


def loops_of(steps: Sequence[Step], verdicts: Sequence[tuple[Verdict, ...]], ends: set[int]) -> list[Loop]:
    """The loops of steps with these verdicts (`ends`: the positions where a replay ended)."""
    calls: list[int] = []  # positions of the calls
    owns: list[tuple[str, str, str]] = []  # each call's own subject
    prompt_before: list[int] = []  # for each call, the number of person's prompts before it
    open_loops: list[_Open] = []
    done: list[_Open] = []
    pending: list[Verdict] = []
    pending_stop = False
    prompts = 0
    for pos, step in enumerate(steps):
        flags = [v for v in verdicts[pos] if _is_flag(v)]
        stop_here = pos in ends and bool(flags)
        message = step.message
        if message is not None and message.from_user:
            prompts += 1
            done += open_loops
            open_loops = []
            pending, pending_stop = [], False
            continue
        if step.kind not in CALL_KINDS:
            pending += flags
            pending_stop = pending_stop or stop_here
            continue
        flags = pending + flags
        stop_here = stop_here or pending_stop
        pending, pending_stop = [], False
        index = len(calls)
        calls.append(pos)
        prompt_before.append(prompts)
        own = call_subject(step)
        owns.append(own)
        if not flags:
            for ended in [lp for lp in open_loops if any(_matches(sj, step, own) for sj in lp.subjects)]:
                open_loops.remove(ended)  # met again unflagged: that loop is over
                done.append(ended)
            continue
        subject = _subject(step, flags)
        fkey = _failing_key(flags)
        loop: _Open | None = next((lp for lp in open_loops if any(sj[1] == subject[1] for sj in lp.subjects)), None)
        if loop is None and fkey is not None and not any(v.engine == "loop_guard" for v in flags):
            # the same command with other flags (`--no-verify`) failing on: the failing key's loop goes on
            loop = next((lp for lp in open_loops if lp.failing_key == fkey), None)
            if loop is not None:
                loop.subjects.append(subject)
        if loop is None:
            loop = _Open([subject], index, index, fkey)
            open_loops.append(loop)
        else:
            loop.last = index
            loop.flags += 1
            loop.failing_key = loop.failing_key or fkey
        for v in flags:
            if v.reason not in loop.reasons:
                loop.reasons.append(v.reason)
            if SEVERITY.get(v.action, 0) > SEVERITY.get(loop.action, 0):
                loop.action = v.action
        loop.stopped = loop.stopped or stop_here
    done += open_loops
    loops = [_loop(o, steps, calls, owns, prompt_before) for o in done]
    return sorted(loops, key=lambda lp: (lp.call, lp.what))


def _loop(o: _Open, steps: Sequence[Step], calls: list[int], owns: list[tuple[str, str, str]],
          prompt_before: list[int]) -> Loop:
    first_pos, last_pos = calls[o.first], calls[o.last]
    # the model turns that made the loop's calls: from the step after the call before the first one
    start = calls[o.first - 1] + 1 if o.first > 0 else 0
    tokens = sum(_tokens(steps[p]) for p in range(start, last_pos + 1))
    same = [i for i in range(o.last + 1) if prompt_before[i] == prompt_before[o.first]
            and any(_matches(sj, steps[calls[i]], owns[i]) for sj in o.subjects)]
    kind, _, what = o.subjects[0]
    if len(o.subjects) > 1:
        what += f" (+{len(o.subjects) - 1} variant{'s' if len(o.subjects) > 2 else ''})"
    return Loop(
        call=o.first, step=first_pos, end_call=o.last, what=what, kind=kind, repeats=len(same),
        failed=sum(1 for i in same if _failed(steps[calls[i]])), calls=o.last - o.first + 1, tokens=tokens,
        action=o.action, reasons=tuple(o.reasons), t=steps[first_pos].t, stopped=o.stopped, flags=o.flags,
    )


def loop_summary(loops: Sequence[Loop]) -> Mapping[str, int]:
    """Loops, calls and tokens spent inside them."""
    return {"loops": len(loops), "calls": sum(lp.calls for lp in loops), "tokens": sum(lp.tokens for lp in loops)}
