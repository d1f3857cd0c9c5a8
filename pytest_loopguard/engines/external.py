"""external: a guard written in any language, run as a process and fed the run's events over the guard protocol.

    engines:
      external:
        command: [node, examples/guards/roo_guard.js]   # or one string, split as a shell would
        timeout_s: 5                                      # per reply
        start_timeout_s: null                             # for the reply to hello (default: 10, or timeout_s if longer)
        cwd: null                                         # where it runs (default: the working folder)
        instead: false                                    # true: the guard's verdicts alone

Its verdicts are the Guard's own from then on: replay, expectations, `matrix`, `diff`, `eval`, reports and the
pytest plugin see them as any engine's (the reason codes are the guard's). Beside other engines it runs last;
alone (`extends` nothing) it is the whole policy. It hears each event in the order the built-in engines do —
the engine hooks are the protocol's requests one for one (docs/protocol.md) — so a guard that wraps our own
Guard (`loopguard serve`) gives the built-in verdicts exactly. A model call's usage that a `rejected` turn
reports reaches it as `before_llm` and `llm_result` first, as it reaches every engine; its `rejected`
request then carries no `llm`. `compacted` is not sent: a guard compacts nothing of ours.

One process per command, reused run after run (see `_pipe`); a run leases it at its first event and gives it
back when it ends. Any failure of the process is a `GuardProcessError` naming the guard, the run and the step.
"""

from __future__ import annotations

import shlex
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, final

from ..core._model import Done, LLMCall, Message, Rejected, ToolCall, ToolResult, Verdict
from ..core._wire import (
    call_mapping,
    done_mapping,
    llm_mapping,
    message_mapping,
    rejected_mapping,
    result_mapping,
    verdicts_from_reply,
)
from ..core.hookspecs import hookimpl
from ..errors import GuardProcessError
from .base import Engine, EngineSettings, SettingError

if TYPE_CHECKING:
    from ..core._conversation import PromptView
    from ..core._runcontext import RunContext, Turn
    from ._pipe import GuardProcess

# `_pipe` (subprocess, select) loads with the first guard process, not with the engine registry: every command
# reads the registry, few start a guard

__all__ = ["ENGINE", "External", "ExternalSettings", "Settings", "command_of"]

MAX_TIMEOUT_S: Final = 3600.0


@dataclass(frozen=True, slots=True)
class Settings(EngineSettings):
    command: tuple[str, ...] | str = ()
    timeout_s: float = 5.0
    start_timeout_s: float | None = None  # its start and reply to hello (default: _pipe.START_TIMEOUT_S)
    cwd: str | None = None
    instead: bool = False  # the guard replaces the built-in engines (its verdicts alone); else it runs beside them
    # what run_start tells the guard to follow: a preset name, or a whole policy as `Policy.to_dict` writes it
    # (default: this policy's name)
    policy: str | Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:
            raise SettingError("timeout_s", f"expected seconds above 0 and at most {MAX_TIMEOUT_S:g}, "
                                            f"got {self.timeout_s!r}")
        if self.start_timeout_s is not None and not 0 < self.start_timeout_s <= MAX_TIMEOUT_S:
            raise SettingError("start_timeout_s", f"expected seconds above 0 and at most {MAX_TIMEOUT_S:g}, "
                                                  f"got {self.start_timeout_s!r}")
        if isinstance(self.command, str) and self.command.strip():
            try:
                shlex.split(self.command)
            except ValueError as exc:
                raise SettingError("command", f"cannot split the command line: {exc}") from None


ExternalSettings = Settings  # the class attribute `Settings` below shadows the name inside the class


def command_of(settings: Settings) -> tuple[str, ...]:
    """The guard's argv; a string command is split as a POSIX shell would (without running one)."""
    command = tuple(shlex.split(settings.command)) if isinstance(settings.command, str) else settings.command
    if not command:
        raise GuardProcessError("external guard: no command given (engines.external.command, e.g. [node, guard.js])")
    return command


def _start(settings: Settings, run_name: str) -> GuardProcess:
    from ._pipe import GuardProcess

    return GuardProcess(command_of(settings), timeout_s=settings.timeout_s, cwd=settings.cwd, run_name=run_name,
                        start_timeout_s=settings.start_timeout_s)


def _let_go(proc: GuardProcess, key: tuple[Any, ...]) -> None:
    """A run dropped without its end (an abandoned Guard): its process serves the next run, which ends it first."""
    from ._pipe import release

    release(proc, key)


@final
class External(Engine[ExternalSettings]):
    name = "external"
    Settings = Settings
    REASONS = ()  # the guard's own codes: not known before it runs

    def __init__(self, settings: ExternalSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        self._proc: GuardProcess | None = None
        self._key = (command_of(settings), settings.timeout_s, settings.cwd)
        self._ids: dict[int, str] = {}  # id(call) -> its id on the wire, for the calls of the current turn
        self._next_id = 0
        self._finalizer: weakref.finalize[Any, Any] | None = None

    # ---- the process -------------------------------------------------------------------------------------
    def _process(self) -> GuardProcess:
        proc = self._proc
        if proc is not None:
            return proc
        from ._pipe import lease

        run = self.run
        proc = lease(self._key, lambda: _start(self.settings, run.name))
        if proc.open_run:  # the last run on it was abandoned without its end
            proc.request({"op": "run_end", "index": None}, "the end of an earlier run")
        proc.run_name = run.name
        task: dict[str, Any] = {"objective": run.objective}
        if run.task is not None:
            task["phase"] = run.task.phase
            if run.task.budget:
                task["budget"] = dict(run.task.budget)
        told = self.settings.policy
        info: dict[str, Any] = {"name": run.name, "task": task,
                                "policy": run.policy.name if told is None else told}
        if run.trace_context:
            info["context"] = dict(run.trace_context)
        self._send(proc, {"op": "run_start", "run": info}, "run_start")
        proc.open_run = True
        self._proc = proc
        self._finalizer = weakref.finalize(self, _let_go, proc, self._key)
        return proc

    def _send(self, proc: GuardProcess, message: dict[str, Any], where: str) -> tuple[Verdict, ...]:
        reply = proc.request(message, where)
        try:
            return verdicts_from_reply(reply, self.name)
        except ValueError as exc:
            raise proc._error(where, str(exc)) from None

    def _event(self, op: str, fields: dict[str, Any], tool: str | None = None) -> list[Verdict] | None:
        proc = self._process()
        step = self.run.step
        message = {"op": op, "index": step, "t": self.run.clock.now_ms, **fields}
        where = f"step {step if step is not None else '(live)'} ({op}{' ' + tool if tool else ''})"
        verdicts = self._send(proc, message, where)
        return list(verdicts) if verdicts else None

    def _call_id(self, call: ToolCall) -> str:
        known = self._ids.get(id(call))
        if known is not None:
            return known
        self._next_id += 1
        self._ids[id(call)] = call_id = f"c{self._next_id}"
        return call_id

    # ---- the events, one request each ----------------------------------------------------------------------
    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> list[Verdict] | None:
        self._ids = {}
        calls = []
        for call in turn.calls:
            self._next_id += 1
            self._ids[id(call)] = call_id = f"c{self._next_id}"
            calls.append(call_mapping(call, call_id))
        fields: dict[str, Any] = {"calls": calls}
        if turn.llm is not None:
            fields["llm"] = llm_mapping(turn.llm)
        return self._event("turn_start", fields)

    @hookimpl
    def loopguard_before_call(self, call: ToolCall, result: ToolResult | None) -> list[Verdict] | None:
        fields: dict[str, Any] = {"call": call_mapping(call, self._call_id(call))}
        if result is not None and result.changed:
            fields["changed"] = True
        return self._event("before_call", fields, call.tool)

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> list[Verdict] | None:
        fields = {"call": call_mapping(call, self._call_id(call)),
                  "result": result_mapping(result) if result is not None else None, "blocked": blocked}
        return self._event("after_call", fields, call.tool)

    @hookimpl
    def loopguard_not_run(self, call: ToolCall) -> None:
        self._event("not_run", {"call": call_mapping(call, self._call_id(call))}, call.tool)

    @hookimpl
    def loopguard_turn_end(self, turn: Turn) -> None:
        self._event("turn_end", {})  # verdicts here are ignored, as every engine's are

    @hookimpl
    def loopguard_before_llm(self, llm: LLMCall, view: PromptView) -> list[Verdict] | None:
        return self._event("before_llm", {"llm": llm_mapping(llm)})

    @hookimpl
    def loopguard_llm_result(self, llm: LLMCall, view: PromptView) -> list[Verdict] | None:
        return self._event("llm_result", {"llm": llm_mapping(llm)})

    @hookimpl
    def loopguard_phase(self, phase: str) -> list[Verdict] | None:
        return self._event("phase", {"phase": phase})

    @hookimpl
    def loopguard_message(self, message: Message) -> list[Verdict] | None:
        return self._event("message", {"message": message_mapping(message)})

    @hookimpl
    def loopguard_rejected(self, rejected: Rejected) -> list[Verdict] | None:
        # its usage went before, as before_llm / llm_result (see the module's docstring)
        return self._event("rejected", {"rejected": rejected_mapping(rejected, with_usage=False)})

    @hookimpl
    def loopguard_done(self, done: Done) -> list[Verdict] | None:
        return self._event("done", {"done": done_mapping(done)})

    @hookimpl
    def loopguard_run_end(self, outcome: str | None) -> None:
        proc = self._proc
        if proc is None:
            return  # no event reached it: no run was started on a process
        self._proc = None
        if self._finalizer is not None:
            self._finalizer.detach()
        if proc.alive:
            self._send(proc, {"op": "run_end", "index": None, "outcome": outcome}, "run_end")
            proc.open_run = False
        _let_go(proc, self._key)


ENGINE = External
