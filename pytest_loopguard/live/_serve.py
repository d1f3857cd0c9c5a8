"""`loopguard serve`'s server: the Guard behind the guard protocol, one JSON request in, one JSON reply out.

Each request is one of the Guard's methods (docs/protocol.md has the table): `run_start` builds a Guard for
the policy, the events call it in the order the agent sends them, and the reply is the verdicts that event
drew. Requests are read with the trace format's own step reader, so a call, result, model call or message
means here exactly what it means in a trace, and a malformed one is an `{"error": ...}` naming the field.
With a recording folder or file, each run is written as the recorder's crash-safe JSONL trace (redacted:
the Guard is fed the redacted values, so the recording replays to the verdicts the agent was given).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, Final

from .. import __version__
from ..core._model import Action, LLMCall, Rejected, Task, ToolCall, ToolResult, Verdict, combine, make_step
from ..core._safeload import check_json_depth, one_line
from ..core._wire import PROTOCOL_VERSION, verdict_mapping
from ..errors import LoopguardError
from ..io._read import read_step
from ..runtime._guard import Clock, Decision, Guard
from ..runtime._policy import Policy, policy_from_dict, resolve_policy
from ._recorder import Recorder
from ._redact import Redactor
from ._session import monotonic_ms

__all__ = ["GuardServer", "serve"]

MAX_REQUEST_BYTES: Final = 64 * 1024 * 1024
_CHANGED: Final = ToolResult(changed=True)
_ENDS: Final = frozenset((Action.STOP, Action.FAIL))
_SAFE_NAME: Final = re.compile(r"[^A-Za-z0-9._-]+")


class RequestError(Exception):
    """A request the server cannot act on: its message is the one line of the `error` reply."""


class _Run:
    """One run in progress: its Guard, the call in flight per id, a model call not yet written, its recording."""

    def __init__(self, guard: Guard, recorder: Recorder | None, redactor: Redactor | None,
                 now_ms: Callable[[], int] | None) -> None:
        self.guard = guard
        self.recorder = recorder
        self.redactor = redactor
        self.pending: dict[str, tuple[ToolCall, Decision, bool, int | None]] = {}
        self.llm: tuple[LLMCall, int | None] | None = None  # an answered model call not yet written
        self.asked_t: int | None = None
        self.outcome: str | None = None
        self.steps = 0
        self._now = now_ms
        self._t0 = now_ms() if now_ms is not None else 0

    def tick(self, t: Any) -> int | None:
        """The run's clock at this event: the request's `t` (ms) when given, else the time since the run began."""
        clock = self.guard.run.clock
        if t is not None:
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= 2**53:
                raise RequestError(f"t: expected milliseconds (an integer >= 0), got {_brief(t)}")
            clock.set(t)
        elif self._now is not None:
            clock.set(self._now() - self._t0)
        return clock.now_ms

    def write(self, kind: str, t: int | None, **fields: Any) -> None:
        if self.recorder is not None:
            self.recorder.write(make_step(self.steps, kind, t=t, **fields), redacted=True)
        self.steps += 1

    def flush_llm(self) -> None:
        if self.llm is not None:
            llm, t = self.llm
            self.llm = None
            self.write("llm", t, llm=llm)

    def judged(self, verdicts: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
        if verdicts and self.outcome is None and combine(verdicts) in _ENDS:
            self.outcome = "failed" if combine(verdicts) == Action.FAIL else "stopped"
        return verdicts


class GuardServer:
    """The protocol's server side: `handle(line)` is the reply line to one request line."""

    def __init__(self, policy: str | Mapping[str, Any] | Policy | None = None, *, record: str | Path | None = None,
                 redact: bool = True, now_ms: Callable[[], int] | None = monotonic_ms) -> None:
        self.policy = resolve_policy(policy) if policy is not None else None
        self.record = Path(record) if record is not None else None
        self.redact = redact
        self.now_ms = now_ms
        self.run: _Run | None = None
        self.recorded: list[Path] = []
        self.greeted = False

    # ---- a line in, a line out ---------------------------------------------------------------------------
    def handle(self, line: str) -> str:
        seq: Any = None
        try:
            if len(line) > MAX_REQUEST_BYTES:
                raise RequestError(f"a request of {len(line)} characters; at most {MAX_REQUEST_BYTES}")
            check_json_depth(line)
            request = json.loads(line)
            if not isinstance(request, dict):
                raise RequestError("expected a JSON object with `op`")
            seq = request.pop("seq", None)  # the caller's number for this request, echoed
            reply: Any = self._dispatch(request)
        except RequestError as exc:
            reply = {"error": one_line(str(exc))}
        except LoopguardError as exc:  # a malformed call, result or message (the trace reader's line)
            reply = {"error": one_line(str(exc))}
        except (ValueError, RecursionError) as exc:
            reply = {"error": one_line(f"not a JSON request: {exc}")}
        if type(seq) is int:
            reply["seq"] = seq
        return json.dumps(reply, ensure_ascii=True, separators=(",", ":"), allow_nan=False)

    def close(self) -> None:
        """End of input: an open run ends (its recording closed)."""
        if self.run is not None:
            self._end(None)

    def _dispatch(self, r: dict[str, Any]) -> Any:
        op = r.get("op")
        if op == "hello":
            if r.get("protocol") != PROTOCOL_VERSION:
                raise RequestError(f"protocol: this server speaks version {PROTOCOL_VERSION}, "
                                   f"got {_brief(r.get('protocol'))}")
            self.greeted = True
            name = self.policy.name if self.policy is not None else None
            return {"protocol": PROTOCOL_VERSION,
                    "guard": {"name": "loopguard", "version": __version__, "policy": name}}
        if op == "run_start":
            return self._start(r)
        handler = _EVENTS.get(op) if isinstance(op, str) else None
        if handler is None:
            raise RequestError(f"op: expected one of hello, run_start, run_end, {', '.join(_EVENTS)}; got {_brief(op)}")
        run = self.run
        if run is None:
            raise RequestError(f"{op} before run_start: start a run first")
        if op == "run_end":
            return self._end(r.get("outcome"))
        t = run.tick(r.get("t"))
        if op not in ("turn_start", "rejected"):
            run.flush_llm()
        verdicts = handler(self, run, r, t)
        return {"verdicts": [verdict_mapping(v) for v in run.judged(verdicts)]}

    # ---- runs --------------------------------------------------------------------------------------------
    def _start(self, r: dict[str, Any]) -> Any:
        if self.run is not None:
            self._end(None)  # a run left open ends when the next begins
        info = r.get("run", {})
        if not isinstance(info, dict):
            raise RequestError("run: expected an object {name, task?, policy?, context?}")
        name = info.get("name") or "run"
        if not isinstance(name, str):
            raise RequestError(f"run.name: expected a string, got {_brief(name)}")
        policy = self.policy
        if policy is None:
            spec = info.get("policy") or "default"
            if not isinstance(spec, (str, dict)):
                raise RequestError(f"run.policy: expected a preset name or a policy mapping, got {_brief(spec)}")
            # a whole policy (`Policy.to_dict`'s form, with `engines`) or a policy mapping / preset name
            policy = policy_from_dict(spec) if isinstance(spec, dict) and "engines" in spec else resolve_policy(spec)
        task_raw = info.get("task") or {}
        if not isinstance(task_raw, dict):
            raise RequestError("run.task: expected an object {objective?, phase?, budget?}")
        context = info.get("context") or {}
        if not isinstance(context, dict):
            raise RequestError("run.context: expected an object (e.g. {window_tokens: 200000})")
        objective = task_raw.get("objective") or ""
        if not isinstance(objective, str):
            raise RequestError("run.task.objective: expected a string")
        task: Task | None = None
        if "phase" in task_raw or "budget" in task_raw:
            phase, budget = task_raw.get("phase", "explore"), task_raw.get("budget") or {}
            if not isinstance(phase, str) or not isinstance(budget, dict):
                raise RequestError("run.task: expected phase a string and budget an object")
            task = Task(objective=objective, phase=phase, budget=budget)
        recorder = self._recorder(name, policy, task, context)
        redactor = recorder.redactor if recorder is not None else None
        if redactor is not None:
            objective = redactor.text(objective)
            if task is not None:
                task = replace(task, objective=objective)
        guard = Guard(policy, task=task, objective=objective, context=context, clock=Clock(), name=name)
        self.run = _Run(guard, recorder, redactor, self.now_ms)
        return {"verdicts": []}

    def _recorder(self, name: str, policy: Policy, task: Task | None, context: Mapping[str, Any]) -> Recorder | None:
        if self.record is None:
            return None
        if self.record.suffix.lower() == ".jsonl":
            path = self.record if not self.recorded else self.record.with_name(
                f"{self.record.stem}-{len(self.recorded) + 1}.jsonl")
        else:
            self.record.mkdir(parents=True, exist_ok=True)
            stem = _SAFE_NAME.sub("-", name).strip(".-")[:80] or "run"
            path, n = self.record / f"{stem}.jsonl", 1
            while path.exists() or path in self.recorded:
                n += 1
                path = self.record / f"{stem}-{n}.jsonl"
        recorder = Recorder(path, name=name, policy=policy.name, task=task, context=context, redact=self.redact,
                            source={"x-recorder": "loopguard serve"})
        self.recorded.append(path)
        return recorder

    def _end(self, outcome: Any) -> Any:
        run = self.run
        assert run is not None
        self.run = None
        if outcome is not None and not isinstance(outcome, str):
            raise RequestError(f"outcome: expected a string, got {_brief(outcome)}")
        run.flush_llm()
        guard = run.guard
        if run.outcome is None:
            guard.end_turn()
        guard.end_run(run.outcome or outcome)
        guard.close(build=False)  # the run is over and nothing reads its view: its objects go now
        if run.recorder is not None:
            run.recorder.close()
        return {"verdicts": []}


# ---- the events ------------------------------------------------------------------------------------------
def _call(run: _Run, raw: Any, where: str) -> tuple[str, ToolCall]:
    if not isinstance(raw, dict):
        raise RequestError(f"{where}: expected an object {{id, tool, args}}")
    call_id = raw.get("id")
    if call_id is not None and not isinstance(call_id, (str, int)):
        raise RequestError(f"{where}.id: expected a string, got {_brief(call_id)}")
    step = read_step({"tool": raw.get("tool"), "args": raw.get("args")}, run.steps)
    call = step.call
    assert call is not None
    if run.redactor is not None:
        args = run.redactor.value(call.args)
        if args is not call.args:
            call = ToolCall.of(call.tool, args)
    return str(call_id) if call_id is not None else call.fingerprint, call


def _llm(run: _Run, raw: Any) -> LLMCall:
    step = read_step({"llm": raw if raw is not None else {}}, run.steps)
    llm = step.llm
    assert llm is not None
    red = run.redactor
    if red is not None and (llm.text is not None or llm.error is not None):
        llm = LLMCall(llm.input_tokens, llm.output_tokens, red.text(llm.error) if llm.error else llm.error,
                      red.text(llm.text) if llm.text else llm.text)
    return llm


def _turn_start(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    calls_raw = r.get("calls", [])
    if not isinstance(calls_raw, list):
        raise RequestError("calls: expected a list of {id, tool, args}")
    calls = [_call(run, c, f"calls[{i}]")[1] for i, c in enumerate(calls_raw)]
    llm = _llm(run, r["llm"]) if r.get("llm") is not None else None
    run.flush_llm()
    return run.guard.start_turn(calls, llm).verdicts


def _before_call(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    call_id, call = _call(run, r.get("call"), "call")
    changed = r.get("changed", False)
    if not isinstance(changed, bool):
        raise RequestError(f"changed: expected true or false, got {_brief(changed)}")
    decision = run.guard.before_call(call, _CHANGED if changed else None)
    run.pending[call_id] = (call, decision, changed, t)
    return decision.verdicts


def _after_call(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    call_id, _ = _call(run, r.get("call"), "call")
    pending = run.pending.pop(call_id, None)
    if pending is None:
        raise RequestError(f"after_call for call {call_id!r} without its before_call")
    call, before, changed, started = pending
    raw = r.get("result")
    if isinstance(raw, dict) and ("denied" in raw or "cancelled" in raw):
        return _not_run_of(run, call, before, raw, started)
    blocked = r.get("blocked", False)
    if not isinstance(blocked, bool):
        raise RequestError(f"blocked: expected true or false, got {_brief(blocked)}")
    result: ToolResult | None = None
    if raw is not None and not blocked:
        step = read_step({"tool": call.tool, "result": raw}, run.steps)
        result = step.result
        red = run.redactor
        if result is not None and red is not None:
            result = replace(result, text=red.text(result.text) if result.text else result.text,
                             error=red.text(result.error) if result.error else result.error)
    ran = before.runs and not blocked
    if ran and result is None:
        result = ToolResult()
    if result is not None and changed and not result.changed:
        result = replace(result, changed=True)
    decision = run.guard.after_call(call, result if ran else None, before)
    run.write("tool", started, call=call, result=result if ran else (_CHANGED if changed else None))
    return decision.verdicts[len(before.verdicts):]


def _not_run_of(run: _Run, call: ToolCall, before: Decision, raw: dict[str, Any], t: int | None
                ) -> tuple[Verdict, ...]:
    step = read_step({"tool": call.tool, **raw}, run.steps)
    if before.runs:
        run.guard.not_run(call)
    else:  # the policy blocked it: a blocked call, as in replay
        run.guard.after_call(call, None, before)
    run.write("tool", t, call=call, not_run=step.not_run)
    return ()


def _not_run(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    call_id, _ = _call(run, r.get("call"), "call")
    pending = run.pending.pop(call_id, None)
    if pending is None:
        raise RequestError(f"not_run for call {call_id!r} without its before_call")
    call, before, _changed, started = pending
    how = r.get("not_run") or {"denied": {"reason": "not run"}}
    if not isinstance(how, dict):
        raise RequestError("not_run: expected {denied: {reason, by?}} or {cancelled: {reason}}")
    return _not_run_of(run, call, before, how, started)


def _turn_end(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    run.guard.end_turn()
    return ()


def _before_llm(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    run.asked_t = t
    return run.guard.before_llm(_llm(run, r.get("llm"))).verdicts


def _llm_result(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    llm = _llm(run, r.get("llm"))
    verdicts = run.guard.llm_result(llm).verdicts
    run.llm = (llm, run.asked_t if run.asked_t is not None else t)  # written with the turn it starts, or alone
    run.asked_t = None
    return verdicts


def _rejected(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    step = read_step({"rejected": r.get("rejected")}, run.steps)
    refused = step.rejected
    assert refused is not None
    red = run.redactor
    if red is not None and refused.text:
        refused = Rejected(refused.reason, red.text(refused.text), refused.llm)
    answered = run.llm
    run.llm = None
    if answered is not None and answered[0].error is not None:  # a failed model call, then a refusal
        run.llm = answered
        run.flush_llm()
        answered = None
    verdicts = run.guard.rejected(refused).verdicts
    if answered is not None and refused.llm is None:  # its usage came before, as before_llm / llm_result
        usage, t = LLMCall(answered[0].input_tokens, answered[0].output_tokens), answered[1]
        refused = Rejected(refused.reason, refused.text, usage)
    run.write("rejected", t, rejected=refused)
    return verdicts


def _message(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    step = read_step({"message": r.get("message")}, run.steps)
    msg = step.message
    assert msg is not None
    if run.redactor is not None:
        msg = replace(msg, text=run.redactor.text(msg.text))
    guard = run.guard
    if msg.from_user and not guard.run.objective:
        guard.run.objective = msg.text  # replay takes the first person's message as the objective
    verdicts = guard.message(msg).verdicts
    run.write("message", t, message=msg)
    return verdicts


def _phase(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    step = read_step({"phase": r.get("phase")}, run.steps)
    assert step.phase is not None
    verdicts = run.guard.phase(step.phase).verdicts
    run.write("phase", t, phase=step.phase)
    return verdicts


def _done(server: GuardServer, run: _Run, r: dict[str, Any], t: int | None) -> tuple[Verdict, ...]:
    step = read_step({"done": r.get("done") or {}}, run.steps)
    done = step.done
    assert done is not None
    if run.redactor is not None and done.text:
        done = replace(done, text=run.redactor.text(done.text))
    verdicts = run.guard.done(done).verdicts
    run.write("done", t, done=done)
    if run.outcome is None and not (verdicts and combine(verdicts) in _ENDS):
        run.outcome = "completed"
    return verdicts


_EVENTS: Final[dict[str, Callable[[GuardServer, _Run, dict[str, Any], int | None], tuple[Verdict, ...]]]] = {
    "turn_start": _turn_start, "before_call": _before_call, "after_call": _after_call, "not_run": _not_run,
    "turn_end": _turn_end, "before_llm": _before_llm, "llm_result": _llm_result, "rejected": _rejected,
    "message": _message, "phase": _phase, "done": _done, "run_end": _turn_end,
}


def serve(stdin: IO[str], stdout: IO[str], server: GuardServer) -> int:
    """Answer each line of `stdin` on `stdout` until end of input; 0."""
    try:
        for line in stdin:
            if not line.strip():
                continue
            stdout.write(server.handle(line) + "\n")
            stdout.flush()
    finally:
        server.close()
    return 0


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"

