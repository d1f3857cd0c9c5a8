"""The agent loop: model → guard → tools → results → dedup/compaction, on a virtual clock, recording a trace.

It feeds its events to the run protocol (`pytest_loopguard.runtime._protocol.Run`), the same object replay feeds
the recorded steps to, so that the recorded trace replays to the same verdicts and outcome:

    per model call: Run.model(ASK); model.respond(view); Run.model(llm, calls, ANSWER)
        retry / compact_retry -> call the model again (same turn); fail -> outcome failed
        success -> per call: Run.before_call; execute when it runs; Run.after_call

A blocked call is answered with the verdict's message as an error (the Guard puts it in the view); a stop
ends the run; a final answer is a `done` step. The run is cut off at `max_turns` (outcome exhausted). Time
passes between steps only (model and tool latency), so every step's `t` is the clock when it started.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, final

from pytest_loopguard.core._conversation import PromptView, Transcript
from pytest_loopguard.core._model import (
    NOT_REACHED,
    Action,
    Done,
    DoneStep,
    LLMCall,
    LLMStep,
    Message,
    MessageStep,
    Outcome,
    ReplayResult,
    RunExpect,
    Step,
    StepExpect,
    StepResult,
    Task,
    ToolCall,
    ToolResult,
    ToolStep,
    Trace,
    Verdict,
    combine,
)
from pytest_loopguard.runtime._guard import Clock, Guard
from pytest_loopguard.runtime._policy import Policy, resolve_policy
from pytest_loopguard.runtime._protocol import ANSWER, ASK, Run

from .protocols import Model, ProviderError, ToolExecutor

__all__ = ["AgentLoop", "Simulation"]


@final
@dataclass(frozen=True, slots=True)
class Simulation:
    """One simulated run: its result (verdicts, outcome; `.trace` is the recorded trace) and the record."""

    result: ReplayResult
    recorded: Trace
    view: PromptView  # the prompt view at the end (what the model last saw, after dedup/compaction)
    transcript: Transcript  # the lossless record of messages
    model_calls: int


@final
class AgentLoop:
    """Runs a model against tools under a policy's Guard, honouring its verdicts, and records the run."""

    def __init__(
        self,
        model: Model,
        tools: ToolExecutor,
        policy: Any = "default",
        *,
        clock: Clock | None = None,
        max_turns: int = 50,
        prompt: str = "",
        task: Task | None = None,
        context: Mapping[str, Any] | None = None,
        name: str = "simulation",
        description: str = "",
        expect: RunExpect | None = None,
        strict: bool = False,
        seed: int | None = None,
        origin: str | None = None,
        llm_latency_ms: int = 1000,
        tool_latency_ms: int = 200,
        plugins: Sequence[object] = (),
        recorded_policy: str | Mapping[str, Any] | None = None,
        policy_name: str | None = None,
        path: str | None = None,
        step_expects: Mapping[int, StepExpect] | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be ≥ 1")
        self.model = model
        self.tools = tools
        self.policy_spec = policy
        self.clock = clock or Clock()
        self.max_turns = max_turns
        self.prompt = prompt
        self.task = task
        self.context = dict(context or {})
        self.name = name
        self.description = description
        self.expect = expect
        self.strict = strict
        self.seed = seed
        self.origin = origin
        self.llm_latency_ms = llm_latency_ms
        self.tool_latency_ms = tool_latency_ms
        self.plugins = tuple(plugins)
        # what the recorded trace names as its policy, so that replaying it resolves the same one
        self.recorded_policy = recorded_policy
        self.policy_name = policy_name
        self.path = path
        self.step_expects = dict(step_expects or {})  # expectations on recorded steps, by index
        self._changed: Callable[[ToolCall], bool] | None = getattr(tools, "changed", None)

    def run(self) -> Simulation:
        policy = self.policy_spec if isinstance(self.policy_spec, Policy) else resolve_policy(self.policy_spec)
        policy_name = self.policy_name or (self.policy_spec if isinstance(self.policy_spec, str) else policy.name)
        objective = self.task.objective if self.task is not None and self.task.objective else self.prompt
        # the simulation hands back its transcript
        guard = Guard(policy, task=self.task, objective=objective, context=self.context, clock=self.clock,
                      plugins=self.plugins, keep_transcript=True, name=self.name)
        run = _Run(guard)
        protocol = run.protocol
        if self.prompt:
            message = Message("user", self.prompt)
            run.record(MessageStep(0, message, t=self.clock.now_ms), protocol.message(message, 0))
        while protocol.outcome is None and guard.run.turns < self.max_turns:  # else cut off: exhausted
            self._turn(run)
        recorded = self._recorded(run)
        outcome: Outcome = protocol.finish(self.max_turns)
        result = ReplayResult(recorded, policy_name, outcome, protocol.stopped_at, protocol.stopped_by,
                              tuple(run.results))
        # the view and transcript go into the Simulation whole; the Guard's other objects go with it, not at the
        # collector's next pass
        guard.close()
        return Simulation(result, recorded, guard.run.view, guard.run.transcript, run.model_calls)

    # ---- one turn: model call(s), then the calls -----------------------------------------------------------
    def _turn(self, run: _Run) -> None:
        guard, clock, protocol = run.guard, self.clock, run.protocol
        while True:
            t = clock.now_ms
            asked = protocol.model(LLMCall(), (), None, ASK)
            view = guard.run.view
            input_tokens = view.tokens()
            run.model_calls += 1
            try:
                reply = self.model.respond(view, guard.run.turns)
                llm = LLMCall(input_tokens, reply.output_tokens, None, reply.text)
            except ProviderError as exc:
                reply = None
                llm = LLMCall(input_tokens, None, exc.message)
            index = len(run.steps)
            verdicts = protocol.model(llm, reply.calls if reply is not None else (), index, ANSWER, asked)
            action = run.record(LLMStep(index, llm, t=t), verdicts)
            clock.advance(self.llm_latency_ms)
            if protocol.outcome is not None:
                if reply is not None:  # a stop at the turn's start: its calls were asked for but never run
                    for call in reply.calls:
                        run.unreached(ToolStep(len(run.steps), call, t=clock.now_ms))
                return
            if reply is not None:
                break
            if action not in _RETRIES:
                # nothing recovers this error: the runtime gives up and the record ends here (incomplete)
                protocol.give_up()
                return
        if reply.final:
            done = Done(reply.success, reply.text or "")
            index = len(run.steps)
            run.record(DoneStep(index, done, t=clock.now_ms), protocol.done(done, index))
            return
        ended = False  # the run is going on here (checked above); a call may end it
        for call in reply.calls:
            if ended:  # an earlier call of the turn stopped the run
                run.unreached(ToolStep(len(run.steps), call, t=clock.now_ms))
                continue
            ended = self._call(run, call)

    def _call(self, run: _Run, call: ToolCall) -> bool:
        """Run one call of the turn through the protocol, and record it; whether the run has ended."""
        guard, clock, protocol = run.guard, self.clock, run.protocol
        t = clock.now_ms
        index = len(run.steps)
        # whether a file changed outside the agent is a fact before the call: engines may read it first
        changed = self._changed is not None and self._changed(call)
        before = protocol.before_call(call, changed, None, index)
        result: ToolResult | None = _CHANGED if changed else None  # a blocked call records only that fact
        if before.runs:
            raw = self.tools.execute(call)
            body = raw.result_text
            # the tokens are part of the record, so replay feeds the view the very same counts
            result = raw if raw.tokens is not None or body is None else _with_tokens(raw, guard.run.view, body)
        verdicts = protocol.after_call(call, result, index)  # the result is fed only if the call ran
        run.record(ToolStep(index, call, result, t=t), verdicts)
        if before.runs:
            clock.advance(self.tool_latency_ms)
        return protocol.outcome is not None

    def _recorded(self, run: _Run) -> Trace:
        source: dict[str, Any] = {"kind": "simulated", "agent": "loopguard_simulators.AgentLoop"}
        if self.origin:
            source["origin"] = self.origin
        policy = self.recorded_policy
        if policy is None:
            policy = self.policy_spec if isinstance(self.policy_spec, (str, Mapping)) else self.policy_spec.name
        steps = tuple(run.steps)
        if self.step_expects:
            steps = tuple(replace(s, expect=self.step_expects[s.index]) if s.index in self.step_expects else s
                          for s in steps)
        return Trace(
            name=self.name,
            steps=steps,
            description=self.description,
            source=source,
            policy=policy,
            task=self.task,
            context=self.context,
            strict=self.strict,
            expect=self.expect,
            seed=self.seed,
            max_turns=self.max_turns,
            path=self.path,
        )


_CHANGED = ToolResult(changed=True)
_RETRIES = frozenset((Action.RETRY, Action.COMPACT_RETRY))  # the model is called again, in the same turn


def _with_tokens(result: ToolResult, view: PromptView, body: str) -> ToolResult:
    return ToolResult(result.ok, result.text, result.error, view.count_tokens(body), result.bytes, result.changed)


@final
class _Run:
    """One simulated run: its protocol (the Guard's calls, how the run ends) and the steps it recorded."""

    __slots__ = ("guard", "model_calls", "protocol", "results", "steps")

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.protocol = Run(guard)
        self.steps: list[Step] = []
        self.results: list[StepResult] = []
        self.model_calls = 0

    def record(self, step: Step, verdicts: tuple[Verdict, ...]) -> Action:
        """Record a step and the verdicts the run protocol gave it; their combined action."""
        action = combine(verdicts)
        tool = step.call.tool if step.call is not None else None
        self.steps.append(step)
        self.results.append(StepResult(step.index, step.kind, tool, action, verdicts))
        return action

    def unreached(self, step: ToolStep) -> None:
        self.steps.append(step)
        self.results.append(StepResult(step.index, step.kind, step.call.tool, NOT_REACHED))
