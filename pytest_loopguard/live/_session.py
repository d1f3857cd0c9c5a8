"""A live agent's policy: the runtime Guard and a Recorder behind one object, fed in replay's order.

    with Session("hermes", record="runs/today.jsonl") as session:
        session.message("user", prompt)
        while True:
            session.before_llm()                       # may compact the prompt first
            reply = call_model(...)
            decision = session.llm_result(LLMCall(...), calls)
            if decision.action in ("retry", "compact_retry"):
                continue
            ...
            for call in calls:
                decision = session.before_call(call)   # allow / warn / block / stop
                result = run_tool(call) if decision.runs else None
                reply = session.after_call(call, result)
                send(reply.content)                    # the result with warnings, or the block as an error
                # or, when the person or a permission rule refused the call the policy allowed:
                # session.not_run(call, "denied", "the user refused", by="user")

The session feeds its events to the run protocol (`runtime._protocol.Run`), the one object that also
replays the steps it records, so the recording replays to the verdicts the live run was given. That needs
the events in replay's order: a model response announces its calls (`llm_result(llm, calls)`) and each is
then reported in turn, before and after. What is left here is the live API's own: checking the agent
reports events in that order, redaction, the time source and the recording.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, final

from ..core._model import (
    DENIED_BY,
    NOT_REACHED,
    NOT_RUN_HOWS,
    ORIGINS,
    PHASES,
    TRIGGERS,
    Action,
    Compaction,
    Done,
    LLMCall,
    Message,
    NotRun,
    Origin,
    Outcome,
    Rejected,
    Step,
    StepKind,
    StepResult,
    Task,
    ToolCall,
    ToolResult,
    ToolStep,
    Verdict,
    combine,
    make_step,
    plain,
)
from ..errors import SessionError
from ..runtime._guard import ALLOW, Clock, Decision, Guard
from ..runtime._policy import Policy, corpus_root, read_policy_file, resolve_policy
from ..runtime._protocol import ANSWER, ASK, Run, turn_plan
from ._recorder import Recorder
from ._redact import Redactor

__all__ = ["Session", "ToolReply", "monotonic_ms"]

_CHANGED = ToolResult(changed=True)


def recorded_policy(policy: Any, resolved: Policy, recording: Path) -> Any:
    """How the recording's header names the session's policy so that it resolves again wherever the recording
    is replayed from: a preset name or a mapping as given; a policy file by its path from the recording's
    folder when the file lies in the recording's project (the corpus root replay looks under), so that edits
    to the file apply to every later replay; else the file's policy itself, embedded under its own name."""
    if not isinstance(policy, str | Mapping):
        return resolved.name
    if not (isinstance(policy, str) and policy.endswith((".yaml", ".yml"))):
        return policy
    file = Path(policy).resolve()
    folder = recording.resolve().parent
    if file.is_relative_to(corpus_root(folder)):
        return Path(os.path.relpath(file, folder)).as_posix()
    return {**read_policy_file(file), "name": resolved.name}


def _blocked(verdicts: tuple[Verdict, ...]) -> NotRun:
    """How the recording marks a call the policy kept from running: `blocked`, with the deciding verdict's
    reason code."""
    action = combine(verdicts)
    return NotRun("blocked", next((v.reason for v in verdicts if v.action == action and v.reason), plain(action)))


def monotonic_ms() -> int:
    """Milliseconds on a monotonic clock: a session's default time source."""
    return time.monotonic_ns() // 1_000_000


@final
@dataclass(frozen=True, slots=True)
class ToolReply:
    """What to send the model for one call: `content` is the result with any warnings appended, or the
    block or stop message as an error (then `is_error`); `decision` holds every verdict on the call."""

    decision: Decision
    content: str
    is_error: bool

    @property
    def action(self) -> str:
        return self.decision.action

    @property
    def ran(self) -> bool:
        return self.decision.runs


@final
@dataclass(slots=True)
class _Pending:
    """A call between before_call and after_call (its verdicts so far are the run protocol's)."""

    call: ToolCall  # as the agent gave it
    guarded: ToolCall  # as the engines and the recording see it (redacted)
    t: int | None
    changed: bool


@final
class Session:
    """One live run under a policy; records it when `record` names a .jsonl file (or is a Recorder).

    `policy`: a preset name, a policy mapping, a YAML path or a Policy (name a preset, a mapping or a path
    for the recording to say which policy it ran under). `now_ms`: the time source for the run clock and
    the steps' `t` (default `monotonic_ms`; None keeps a virtual clock that only backoffs advance).
    `agent`: the acting agent's name on every recorded step (multi-agent runs; `session.agent` may change).
    The other keywords go to the recording's header (`name`, `description`, `tags`, `source`) and to the
    Recorder (`redactor`, `redact`, `overwrite`).
    """

    def __init__(
        self,
        policy: Any = "default",
        *,
        record: str | Path | Recorder | None = None,
        task: Task | None = None,
        context: Mapping[str, Any] | None = None,
        max_turns: int | None = None,
        plugins: Sequence[object] = (),
        now_ms: Callable[[], int] | None = monotonic_ms,
        agent: str | None = None,
        name: str | None = None,
        description: str = "",
        tags: Sequence[str] = (),
        source: Mapping[str, Any] | None = None,
        redactor: Redactor | None = None,
        redact: bool = True,
        overwrite: bool = False,
    ) -> None:
        resolved = resolve_policy(policy)
        self.policy = resolved
        self.max_turns = max_turns
        self.agent = agent  # the acting agent's name, written on every step (set it as agents take turns)
        if isinstance(record, Recorder) or record is None:
            self.recorder = record
        else:
            spec = recorded_policy(policy, resolved, Path(record))
            self.recorder = Recorder(
                record, name=name, policy=spec, task=task, context=context, description=description, tags=tags,
                source=source, max_turns=max_turns, redactor=redactor, redact=redact, overwrite=overwrite,
            )
        # with redaction on, the Guard is fed what the recording holds, so live and replayed verdicts
        # agree to the token; what the agent is told to send back keeps its own text
        self._redactor = self.recorder.redactor if self.recorder is not None else None
        if task is not None and self._redactor is not None:
            task = replace(task, objective=self._redactor.text(task.objective))  # as the header has it
        self.clock = Clock()
        self.guard = Guard(resolved, task=task, objective=task.objective if task else "", context=context,
                           clock=self.clock, plugins=plugins, name=name or "")
        self._now = now_ms
        self._t0 = now_ms() if now_ms is not None else 0
        self._steps: list[StepResult] = []
        self._run = Run(self.guard)  # the run protocol: the Guard's calls in order, and how the run ends
        self._mode: Literal["calls", "model"] | None = None  # how turns start, fixed by the first call event
        self._announced: list[ToolCall] = []  # calls of the current response not reported yet (as given)
        self._pending: _Pending | None = None
        self._llm: tuple[int | None, int | None, tuple[Verdict, ...]] | None = None  # t, prompt tokens, verdicts
        self._closed = False
        self._fed_t: int | None = None  # a fed step's recorded time stands in for the time source

    # ---- results --------------------------------------------------------------------------------------
    @property
    def steps(self) -> tuple[StepResult, ...]:
        """The verdicts of every step so far, as replay of the recording reports them."""
        return tuple(self._steps)

    @property
    def ended(self) -> bool:
        """Whether the run is over: stopped, failed or completed (nothing more may be reported)."""
        return self._run.outcome is not None

    @property
    def outcome(self) -> Outcome | None:
        """completed / stopped / failed / exhausted once the run ended; after `close`, also incomplete."""
        run = self._run
        return run.outcome if run.outcome is not None or not self._closed else run.final(self.max_turns)

    @property
    def stopped_at(self) -> int | None:
        """The step whose verdicts stopped or failed the run."""
        return self._run.stopped_at

    @property
    def stopped_by(self) -> str | None:
        """The engine whose verdict stopped or failed the run."""
        return self._run.stopped_by

    # ---- messages and phases --------------------------------------------------------------------------
    def message(
        self,
        role: Literal["user", "system", "assistant"] | Message,
        text: str = "",
        *,
        origin: Origin | None = None,
        name: str | None = None,
    ) -> Decision:
        """A message in the conversation. `origin` says who wrote it: `user` (a person; the default for role
        user), `harness` (automated feedback) or `agent` (another agent, named by `name`). Only a person's
        prompt resets what the policy resets per prompt."""
        msg = role if isinstance(role, Message) else Message(role, text, origin, name)
        _check_message(msg)
        self._check("message")
        msg = Message(msg.role, self._text(msg.text), msg.origin, msg.name)
        t = self._tick()
        if msg.from_user and not self.guard.run.objective:
            self.guard.run.objective = msg.text  # replay takes the first person's message as the objective
        verdicts = self._run.message(msg, len(self._steps))
        self._write(verdicts, "message", message=msg, t=t)
        return _decision(verdicts)

    def phase(self, phase: str) -> Decision:
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}; expected one of {', '.join(PHASES)}")
        self._check("phase")
        t = self._tick()
        verdicts = self._run.phase(phase, len(self._steps))
        self._write(verdicts, "phase", phase=phase, t=t)
        return _decision(verdicts)

    # ---- model calls ----------------------------------------------------------------------------------
    def before_llm(self, prompt_tokens: int | None = None) -> Decision:
        """Before a model call: the policy may compact the prompt view (`compact`).

        `prompt_tokens`: your count of the prompt about to be sent, if you have one; it is what the
        recording's `llm.input_tokens` will say (the provider's own count, when different, is kept as
        `x-input_tokens`), so that replay sees the figure the live decision saw.
        """
        if self._closed or self._pending is not None or self._run.outcome is not None:
            self._check("before_llm")
        if self._mode == "calls":
            raise SessionError("a model call after tool calls that no model call announced: report model calls "
                               "from the start (before_llm / llm_result) or never")
        if self._announced:
            raise SessionError(f"before_llm while calls of the last response were never reported: "
                               f"{', '.join(c.short() for c in self._announced)}")
        self._mode = "model"
        t = self._tick()
        verdicts = self._run.model(LLMCall(input_tokens=prompt_tokens), (), None, ASK)
        self._llm = (t, prompt_tokens, verdicts)
        return _decision(verdicts)

    def llm_result(self, llm: LLMCall, calls: Iterable[ToolCall] = ()) -> Decision:
        """The model's answer (usage, text, or the provider's error) and the calls it asks for.

        `retry` / `compact_retry`: call the model again; `fail`: give up (the run failed); a `stop` ends the
        run before any call runs. Without a `before_llm` first, it is done here with the provider's count.
        """
        if self._llm is None:
            self.before_llm(llm.input_tokens)
        assert self._llm is not None
        t, prompt_tokens, asked = self._llm
        self._llm = None
        redacts = self._redactor is not None
        recorded = LLMCall(prompt_tokens, llm.output_tokens, self._opt_text(llm.error), self._opt_text(llm.text)) \
            if redacts else LLMCall(prompt_tokens, llm.output_tokens, llm.error, llm.text)
        calls = tuple(calls)
        if recorded.failed and calls:
            raise SessionError("a failed model call asks for no tool calls")
        # calls a verdict on the call itself failed the run before are announced all the same: the recording's
        # turn has the calls the response asked for (none of them reached)
        self._announced = list(calls)
        verdicts = self._run.model(recorded, [self._guarded(c) for c in calls] if redacts else calls,
                                   len(self._steps), ANSWER, asked)
        extra = {"x-input_tokens": llm.input_tokens} if llm.input_tokens not in (None, prompt_tokens) else {}
        self._write(verdicts, "llm", llm=recorded, t=t, extensions=extra)
        return _decision(verdicts)

    def rejected(self, reason: str, text: str | None = None, llm: LLMCall | None = None) -> Decision:
        """A model response the harness refused (no usable call, or several where one is required): a turn
        with no accepted call. `text`: what the model said; `llm`: the response's usage (tokens only)."""
        if not reason:
            raise ValueError("a rejected turn needs a reason (e.g. 'no tool call')")
        if self._llm is not None:
            # before_llm already ran for this response: report its usage as the model call's result, so
            # the recording's `rejected.llm` replays through the same hooks in the same order
            t, prompt_tokens, asked = self._llm
            self._llm = None
            answered = LLMCall(prompt_tokens, llm.output_tokens if llm is not None else None)
            refused = Rejected(reason, self._opt_text(text), None)
            verdicts = self._run.model_refused(answered, refused, len(self._steps), asked)
            refused = Rejected(reason, refused.text, answered)
        else:
            self._check("rejected")
            if self._announced:
                raise SessionError(f"rejected while calls of the last response were never reported: "
                                   f"{', '.join(c.short() for c in self._announced)}")
            t = self._tick()
            usage = LLMCall(llm.input_tokens, llm.output_tokens) if llm is not None else None
            refused = Rejected(reason, self._opt_text(text), usage)
            verdicts = self._run.rejected(refused, len(self._steps))
        self._write(verdicts, "rejected", rejected=refused, t=t)
        return Decision(combine(verdicts), verdicts)

    # ---- tool calls -----------------------------------------------------------------------------------
    def before_call(self, call: ToolCall, *, changed: bool = False) -> Decision:
        """Before a call runs: run it when `decision.runs` (allow, warn); then report it with `after_call`
        either way. `changed`: the file it reads changed outside the agent since the last read."""
        if self._closed or self._pending is not None or self._run.outcome is not None:
            self._check("before_call")
        if self._mode is None:
            self._mode = "calls"  # no model calls reported: every call is a turn of its own, as in replay
        t = self._tick()
        guarded = self._guarded(call) if self._redactor is not None else call
        opens: tuple[ToolCall, ...] | None = None
        if self._mode == "calls":
            opens = (guarded,)  # every call a turn of its own
        elif not self._announced or self._announced[0] != call:
            expected = self._announced[0].short() if self._announced else "a model call first (before_llm)"
            raise SessionError(f"call {call.short()} was not announced by the model's response; expected {expected}")
        else:
            self._announced.pop(0)
        decision = self._run.before_call(guarded, changed, opens, len(self._steps))
        self._pending = _Pending(call, guarded, t, changed)
        return decision

    def after_call(self, call: ToolCall, result: ToolResult | str | None = None) -> ToolReply:
        """What the call gave (a ToolResult, its text, or None when it did not run), and what to send back."""
        pending = self._pending
        if pending is None or pending.call != call:
            raise SessionError(f"after_call for {call.short()} without its before_call")
        self._pending = None
        guarded = pending.guarded
        run = self._run
        before = run.before
        if before is None:  # the turn's start stopped the run: the call never reached the engines
            verdicts = run.after_call(guarded, None, len(self._steps))
            decision = Decision(combine(verdicts), verdicts)
            self._write(verdicts, "tool", call=guarded, t=pending.t, not_run=_blocked(verdicts))
            return ToolReply(decision, f"Error: {decision.message or decision.action}", True)
        ran = before.runs
        given = ToolResult(text=result) if isinstance(result, str) else result
        # a blocked call (or one that gave nothing) records only whether its file changed
        recorded: ToolResult | None = _CHANGED if pending.changed else None
        if ran and given is not None:
            recorded = given
            if self._redactor is not None or pending.changed:
                text, error, changed = self._opt_text(given.text), self._opt_text(given.error), pending.changed
                if text is not given.text or error is not given.error or (changed and not given.changed):
                    recorded = replace(given, text=text, error=error, changed=given.changed or changed)
        verdicts = run.after_call(guarded, recorded, len(self._steps))  # fed only if it ran
        # a call the policy blocked never ran: the recording marks its result unknown, so that a replay under a
        # looser policy does not take it for a success (it has nothing to feed the engines after it)
        self._write(verdicts, "tool", call=guarded, result=recorded, t=pending.t,
                    not_run=None if ran else _blocked(before.verdicts + verdicts))
        decision = _decision(verdicts)
        shown = self.guard.shown
        if given is not None and recorded is not None and ran:
            # the Guard's text is the (redacted) result with the warnings after it: send the agent's own
            body, redacted_body = given.result_text or "", recorded.result_text or ""
            if body != redacted_body and shown.startswith(redacted_body):
                shown = body + shown[len(redacted_body):]
        return ToolReply(decision, shown, not ran or (recorded is not None and not recorded.ok))

    def not_run(self, call: ToolCall, how: Literal["denied", "cancelled", "blocked"], reason: str, *,
                by: Literal["user", "rule"] | None = None) -> Decision:
        """Report, instead of `after_call`, a call that never ran although the policy did not block it: a person
        (`by="user"`) or a permission rule (`by="rule"`) `denied` it, or it was `cancelled` (another call of its
        batch failed first). The policy counted it before the call as any call the agent made; it is not a
        failure and has no result. Recorded as the call with `denied` / `cancelled`; the step's verdicts.
        (`blocked` is what `feed` reports for a recorded call another policy blocked: its result is unknown.)"""
        if how not in NOT_RUN_HOWS:
            raise ValueError(f"unknown way a call never ran {how!r}; expected one of {', '.join(NOT_RUN_HOWS)}")
        if by is not None and (how != "denied" or by not in DENIED_BY):
            raise ValueError(f"`by` names who denied a call: one of {', '.join(DENIED_BY)}, on a denied call only")
        if not reason:
            raise ValueError("a call that never ran needs a reason (e.g. 'the user refused')")
        pending = self._pending
        if pending is None or pending.call != call:
            raise SessionError(f"not_run for {call.short()} without its before_call")
        self._pending = None
        run = self._run
        # a call the policy blocked (or whose turn's start ended the run) is a blocked call, as in replay
        verdicts = run.not_run(pending.guarded, len(self._steps))
        self._write(verdicts, "tool", call=pending.guarded, not_run=NotRun(how, self._text(reason), by), t=pending.t)
        return Decision(combine(verdicts), verdicts)

    def compacted(self, trigger: Literal["auto", "manual"] | None = None, tokens_before: int | None = None,
                  text: str | None = None) -> None:
        """The agent compacted its own context here (`trigger` auto or manual; `tokens_before` the context's size
        before; `text` the summary): recorded for reports, heard by no engine, and no turn ends."""
        if trigger is not None and trigger not in TRIGGERS:
            raise ValueError(f"unknown trigger {trigger!r}; expected one of {', '.join(TRIGGERS)}")
        if tokens_before is not None and (isinstance(tokens_before, bool) or not isinstance(tokens_before, int)
                                          or tokens_before < 0):
            raise ValueError(f"tokens_before is a count of tokens (an integer ≥ 0), got {tokens_before!r}")
        self._check("compacted")
        t = self._tick()
        self._write((), "compacted", compacted=Compaction(trigger, tokens_before, self._opt_text(text)), t=t)

    # ---- a recorded run, fed live --------------------------------------------------------------------------
    def feed(self, steps: Sequence[Step]) -> None:
        """Report recorded steps as a live agent would, honouring each decision: a blocked call's result
        is not passed on, and feeding stops when the run ends. A step's `t` stands in for the time source.

        `loopguard bench --session` measures the session's own cost this way; it also re-records (and so
        redacts) an existing trace. Steps the session API cannot express in order (tool steps before the
        first `llm` step of a trace that has them) raise SessionError.
        """
        plan = turn_plan(steps)
        for step in steps:
            if self.ended:
                break
            self._fed_t = step.t
            try:
                self._feed_one(step, plan.get(step.index, ()))
            finally:
                self._fed_t = None

    def _feed_one(self, step: Step, calls: tuple[ToolCall, ...]) -> None:
        if step.call is not None:
            changed = step.result is not None and step.result.changed
            decision = self.before_call(step.call, changed=changed)
            if step.not_run is not None and (step.not_run.how != "blocked" or decision.runs):
                self.not_run(step.call, step.not_run.how, step.not_run.reason, by=step.not_run.by)
            else:
                self.after_call(step.call, step.result if decision.runs else None)
        elif step.llm is not None:
            self.before_llm(step.llm.input_tokens)
            self.llm_result(step.llm, () if step.llm.failed else calls)
        elif step.message is not None:
            self.message(step.message)
        elif step.phase is not None:
            self.phase(step.phase)
        elif step.rejected is not None:
            llm = step.rejected.llm
            self.rejected(step.rejected.reason, step.rejected.text, llm)
        elif step.done is not None:
            self.done(step.done.success, step.done.text)
        elif step.compacted is not None:
            c = step.compacted
            self.compacted(c.trigger, c.tokens_before, c.text)

    # ---- the end --------------------------------------------------------------------------------------
    def done(self, success: bool | None = None, text: str = "") -> Decision:
        """The agent's final answer: the run is completed (unless a verdict on it stops it)."""
        self._check("done")
        t = self._tick()
        done = Done(success, self._text(text))
        verdicts = self._run.done(done, len(self._steps))
        self._write(verdicts, "done", done=done, t=t)
        return _decision(verdicts)

    def close(self, error: BaseException | None = None) -> None:
        """End the run: a call left without its result is reported as failed; an `error` that ended the
        run early is recorded as an unsuccessful `done`; the recording is closed."""
        if self._closed:
            return
        try:
            pending = self._pending
            if pending is not None:
                before = self._run.before
                ran = before is not None and before.runs
                cause = f": {type(error).__name__}: {error}" if error is not None else ""
                self.after_call(pending.call, ToolResult.failure(f"the run ended before the call returned{cause}")
                                if ran else None)
            if error is not None and not self.ended:
                self.done(False, f"the agent ended with an error: {type(error).__name__}: {error}")
            self._run.close()
            self.guard.close()  # its objects go when the session does, not at the collector's next pass
        finally:
            self._closed = True
            if self.recorder is not None:
                self.recorder.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(exc)

    # ---- helpers --------------------------------------------------------------------------------------
    def _check(self, event: str) -> None:
        if self._closed:
            raise SessionError(f"{event} after the session was closed")
        outcome = self._run.outcome
        if outcome is not None:
            where = f" at step {self.stopped_at} by {self.stopped_by}" if self.stopped_by else ""
            raise SessionError(f"{event} after the run ended ({outcome}{where})")
        if self._pending is not None:
            raise SessionError(f"{event} before after_call reported {self._pending.call.short()}")

    def _text(self, text: str) -> str:
        return self._redactor.text(text) if self._redactor is not None else text

    def _opt_text(self, text: str | None) -> str | None:
        return self._redactor.text(text) if self._redactor is not None and text is not None else text

    def _guarded(self, call: ToolCall) -> ToolCall:
        if self._redactor is None:
            return call
        args = self._redactor.value(call.args)
        return call if args is call.args else ToolCall.of(call.tool, args)

    def _tick(self) -> int | None:
        if self._fed_t is not None:
            self.clock.set(self._fed_t)
            return self.clock.now_ms
        if self._now is None:
            return None
        self.clock.set(self._now() - self._t0)
        return self.clock.now_ms

    def _write(self, verdicts: tuple[Verdict, ...], kind: StepKind, **fields: Any) -> None:
        """Record a step and the verdicts the run protocol gave it."""
        index = len(self._steps)
        if self.recorder is not None:  # the step itself only for a recording: a live check needs its verdicts
            self.recorder.write(make_step(index, kind, agent=self.agent, **fields), redacted=True)
        call: ToolCall | None = fields.get("call")
        self._steps.append(StepResult(index, kind, call.tool if call is not None else None,
                                      combine(verdicts) if verdicts else Action.ALLOW,
                                      verdicts))
        if self._run.outcome is not None and self._announced:
            self._unreached()

    def _unreached(self) -> None:
        # calls the response asked for that never ran are recorded as such, so the recording's turn has
        # the calls the live turn had (replay reports them not reached)
        for call in self._announced:
            index = len(self._steps)
            if self.recorder is not None:
                self.recorder.write(ToolStep(index, self._guarded(call), agent=self.agent), redacted=True)
            self._steps.append(StepResult(index, "tool", call.tool, NOT_REACHED))
        self._announced = []


def _check_message(msg: Message) -> None:
    if msg.role not in ("user", "system", "assistant"):
        raise ValueError(f"unknown role {msg.role!r}; expected user, system or assistant")
    if msg.origin is not None:
        from ..io._spec import ORIGIN_ROLES  # the trace format's table, loaded on the first message with an origin

        if msg.origin not in ORIGINS:
            raise ValueError(f"unknown origin {msg.origin!r}; expected one of {', '.join(ORIGINS)}")
        if msg.role not in ORIGIN_ROLES[msg.origin]:
            raise ValueError(f"a message with origin {msg.origin!r} has role "
                             f"{' or '.join(ORIGIN_ROLES[msg.origin])}, got {msg.role!r}")
    if (msg.origin == "agent") != (msg.name is not None):
        raise ValueError("`name` names the other agent: it goes with origin 'agent', and only there")


def _decision(verdicts: tuple[Verdict, ...]) -> Decision:
    return Decision(combine(verdicts), verdicts) if verdicts else ALLOW
