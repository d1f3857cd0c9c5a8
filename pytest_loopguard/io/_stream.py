"""Streaming replay of JSONL traces: steps are read line by line, replayed as they come, and checked and
counted as they go, so memory stays flat however long the trace (`loopguard run` uses it for .jsonl).

A turn's calls are known only when its last call is read, so the stream holds one stretch of steps (from
one `llm` step to the next) at a time; tool steps before the first `llm` step are held until an `llm`
step says how they group (see `_protocol.turn_plan`), or until a first read of the file finds it holds none
(`_planned`). A trace whose objective is not in its header (the first user message) is read twice: once
to find that message, once to replay.

Every line gets the loader's checks (`faststep`: a direct construction for the common well-formed line,
the loader's own reader for anything else). The loader's bounds on a whole file (`MAX_FILE_BYTES`,
`MAX_STEPS`) exist because it holds the file and every step's result in memory; a stream holds neither,
so it bounds a line instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..core._expect import HEEDABLE, Mismatch, check_reached, check_run
from ..core._model import Action, ReplayResult, Step, StepResult, ToolCall
from ..errors import TraceError
from ..runtime._policy import Policy
from ..runtime._protocol import Run, turn_plan
from ..runtime._replay import Replayer, policy_for
from . import _jsonl

__all__ = ["StreamedRun", "replay_jsonl"]

_RAN = frozenset((Action.ALLOW, Action.WARN))  # the actions under which a call goes ahead


class StreamedRun:
    """What a streamed replay keeps: the header trace, the result without its step timeline (counts
    instead), and the mismatches found as the steps went by."""

    __slots__ = ("mismatches", "result")

    def __init__(self, result: ReplayResult, mismatches: list[Mismatch]) -> None:
        self.result = result
        self.mismatches = mismatches


_HOLD = 4096  # steps held before the first llm step, at most, unless the file holds an llm step after them


class _Tally:
    """What a streamed replay counts and finds as its steps go by, and the record of a step whose result
    something reads (`on_step`, its expectation) or that comes after the run's end. (A class, not a closure:
    a compiled closure and its environment hold each other, which kept every streamed run's Guard for the
    cyclic collector.)"""

    __slots__ = ("counts", "heeding", "mismatches", "on_step", "replayer", "strict", "unknown")

    def __init__(self, replayer: Replayer, on_step: Callable[[Step, StepResult], object] | None,
                 strict: bool) -> None:
        self.replayer = replayer
        self.on_step = on_step
        self.strict = strict
        self.counts: dict[str, int] = {}
        self.mismatches: list[Mismatch] = []
        self.unknown: list[int] = []  # calls blocked live that run here: `ReplayResult.unknown_results`
        # `heeded_within` expectations still open: [step index, the call's fingerprint, calls left]
        self.heeding: list[list[Any]] = []

    def record(self, step: Step, calls: tuple[ToolCall, ...] | None) -> None:
        got = self.replayer.step(step, calls)
        if self.on_step is not None:
            self.on_step(step, got)
        counts, mismatches, heeding = self.counts, self.mismatches, self.heeding
        counts[got.action] = counts.get(got.action, 0) + 1
        if step.not_run is not None and step.not_run.how == "blocked" and got.action in _RAN:
            self.unknown.append(step.index)
        m = check_reached(step, got, self.strict)
        if m is not None:
            mismatches.append(m)
        if heeding and step.kind == "tool" and got.action != "not_reached":
            for open_ in list(heeding):  # as core/_expect.repeated_within, one step at a time
                if step.call.fingerprint == open_[1]:
                    mismatches.append(Mismatch(open_[0], "heeded_within", open_[3], f"repeated at step {step.index}",
                                               "the agent made the same call again"))
                    heeding.remove(open_)
                else:
                    open_[2] -= 1
                    if open_[2] <= 0:
                        heeding.remove(open_)
        within = step.expect.heeded_within if step.expect is not None and m is None else None
        if within is not None:
            if step.kind != "tool" or got.action not in HEEDABLE:
                mismatches.append(Mismatch(step.index, "heeded_within", within, str(got.action),
                                           "no warning or block on a call to heed"))
            else:
                heeding.append([step.index, step.call.fingerprint, within, within])


def _planned(steps: Iterator[Step], run: Run, path: str) -> Iterator[tuple[Step, tuple[ToolCall, ...] | None]]:
    """Each step with the calls of the turn it starts, holding one stretch (llm step to llm step) at a time.
    Stops once the run has ended: no later step needs its turn's calls (each is `not_reached`), and the
    caller reads the rest of `steps` itself.

    Tool steps before the first llm step form one turn if an llm step comes later, else one turn each: once
    _HOLD of them are held, a first read of the file (`_jsonl.has_llm`) says which, so a file with no llm step
    at all is replayed in stretches of _HOLD steps instead of being held whole."""
    held: list[Step] = []
    has_llm = False  # until the first llm step, or the end of the file
    llm_ahead: bool | None = None  # whether the file holds an llm step: asked once, when _HOLD steps are held
    for step in steps:
        if step.kind != "llm":
            held.append(step)
            if has_llm or len(held) < _HOLD:
                continue
            if llm_ahead is None:
                llm_ahead = _jsonl.has_llm(path)
            if llm_ahead:
                continue  # the held steps start a turn the llm step's stretch ends
            plan = turn_plan(held, has_llm=False).get
            for done in held:
                yield done, plan(done.index)
            held = []
            if run.outcome is not None:
                return
            continue
        if held:
            plan = turn_plan(held, has_llm=True).get  # an llm step follows, so the trace has one
            for done in held:
                yield done, plan(done.index)
            if run.outcome is not None:
                yield step, None
                return
        has_llm = True
        held = [step]
    plan = turn_plan(held, has_llm=has_llm).get
    for done in held:
        yield done, plan(done.index)


def replay_jsonl(
    path: str | Path, policy: Policy | str | Mapping[str, Any] | None = None,
    on_step: Callable[[Step, StepResult], object] | None = None,
) -> StreamedRun | None:
    """Replay a JSONL trace file as it is read and check its expectations as the steps go by.

    The result has no step timeline (`steps` is empty) but the run's counts (`step_counts`), outcome and
    where it stopped; mismatches are the same as `expect.check` finds on a full replay. `on_step` is
    given each step and its result as they go by (`loopguard replay` prints them). None for a scenario
    (`mode: simulate`), which is simulated, not replayed.
    """
    name = str(path)
    try:
        with _jsonl.open_regular(name) as handle:
            torn: list[str] = []
            rows = _jsonl.rows(handle, name)
            header = _jsonl.header(rows, name)
            if header.mode == "simulate":
                return None
            resolved, policy_name = policy_for(header, policy)
            replayer = Replayer(header, resolved, _jsonl.objective(header, name))
            tally = _Tally(replayer, on_step, header.strict)
            counts, mismatches, unknown, heeding = tally.counts, tally.mismatches, tally.unknown, tally.heeding
            record = tally.record
            strict = header.strict
            steps = _jsonl.steps(rows, name, torn)

            run = replayer.run  # the run protocol: the Guard's calls and the outcome
            advance = run.feed
            for step, calls in _planned(steps, run, name):
                if on_step is None and step.expect is None and run.outcome is None and not heeding:
                    # nothing reads this step's result (most steps of a long run): its action is counted as
                    # the full replay does, a StepResult built only for a step that is not allowed (strict
                    # checks those)
                    verdicts = advance(step, calls)
                    if not verdicts:
                        counts["allow"] = counts.get("allow", 0) + 1
                        if step.not_run is not None and step.not_run.how == "blocked":
                            unknown.append(step.index)
                        continue
                    got = replayer.result_of(step, verdicts)
                    counts[got.action] = counts.get(got.action, 0) + 1
                    if step.not_run is not None and step.not_run.how == "blocked" and got.action in _RAN:
                        unknown.append(step.index)
                    if (m := check_reached(step, got, strict)) is not None:
                        mismatches.append(m)
                else:
                    record(step, calls)
            # the run has ended (or the file has): each step left is still read and checked, so a bad line
            # after a stop is reported, and is `not_reached`; a result is made only where something reads it
            for step in steps:
                if on_step is None and step.expect is None:
                    counts["not_reached"] = counts.get("not_reached", 0) + 1
                else:
                    record(step, None)
            outcome = replayer.finish()
            replayer.guard.close(build=False)  # its objects go with it, not at the collector's next pass
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror}", file=name) from None
    if torn:
        header = dataclasses.replace(header, warnings=tuple(torn))
    result = ReplayResult(header, policy_name, outcome, run.stopped_at, run.stopped_by, (),
                          step_counts=counts, unknown_results=tuple(unknown))
    if header.expect is not None:
        mismatches.extend(check_run(header.expect, result))
    return StreamedRun(result, mismatches)

