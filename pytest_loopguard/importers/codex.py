"""OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): one `{timestamp, type, payload}` a line.

Mapping (docs/import.md, "Codex CLI"): `session_meta` is the header; each model request — the items between
two `turn_context` lines — is one `llm` step, its usage the `last_token_usage` of the first `token_count`
event whose running total moved (Codex writes each count twice); `function_call`, `custom_tool_call`,
`local_shell_call` and `web_search_call` items are tool steps, paired with their `…_output` by `call_id`;
`exec_command_end` / `patch_apply_end` events, where a log has them, give the exit code and status. A user
message the person typed is the one Codex also wrote as a `user_message` event; the others (environment
context, AGENTS.md) are the harness's. `compacted` lines and `context_compacted` events are compaction steps.
The outputs' failure markers are in `_codex_read`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from ..core._limits import MAX_INT
from ..errors import TraceError
from ._codex_read import (
    LINE_TYPES,
    MODEL_ITEMS,
    Outcome,
    call_args,
    exit_code,
    is_rollout_line,
    read_output,
    type_name,
    user_origins,
)
from .base import ImportedRun, Importer, Source
from .build import number_in_text, result, seq
from .run_builder import ANONYMOUS, At, RunBuilder, content_text, mapping_at

__all__ = ["CodexImporter"]

OUTPUT_ITEMS: Final = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
# events whose content is in the trace already (a response item's copy, usage) or that only mark time
QUIET_EVENTS: Final = frozenset({
    "agent_message", "agent_reasoning", "agent_reasoning_raw_content", "agent_reasoning_section_break",
    "task_started", "task_complete", "turn_started", "turn_complete",
})
POLL_TOOL: Final = "write_stdin"


class CodexImporter(Importer):
    """Codex CLI session rollouts (codex_cli_rs 0.58, codex-tui / Codex Desktop 0.104)."""

    name = "codex"
    title = "a Codex CLI rollout"
    description = "Codex CLI rollout JSONL: {timestamp, type, payload} lines (session_meta, response_item, event_msg)"

    def sniff(self, source: Source) -> bool:
        return not source.is_dir and source.head.startswith("{") and is_rollout_line(source.first_row)

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        # a rollout of one line (its session_meta alone) is one JSON document
        rows = [(row.line, row.value) for row in source.rows] if source.is_jsonl else [(1, source.document)]
        if not rows or not is_rollout_line(rows[0][1]):
            raise TraceError(f"line 1 is not {self.expected}", file=source.name)
        yield _Rollout(source.name, source.stem, rows).convert()

    @property
    def expected(self) -> str:
        return "a Codex rollout line (expected a {timestamp, type, payload} object)"


class _Builder(RunBuilder):
    """A `RunBuilder` that can look at the call waiting for a result, settle one from an event, and take back
    the calls of an aborted turn."""

    def waiting(self, call_id: str | None) -> dict[str, Any] | None:
        queue = self._waiting.get(call_id or ANONYMOUS)
        return queue[0] if queue else None

    def settled(self, step: dict[str, Any]) -> None:
        """`step` has its outcome from elsewhere (an end event): it waits for no output any more."""
        for queue in self._waiting.values():
            for n, waiting in enumerate(queue):
                if waiting is step:
                    del queue[n]
                    return

    def take_waiting(self) -> list[dict[str, Any]]:
        steps = [step for queue in self._waiting.values() for step in queue]
        self._waiting.clear()
        return steps


class _Request:
    """One model request: its `llm` step (made when its first item arrives), its reasoning items and texts."""

    __slots__ = ("llm", "reasoning", "texts")

    def __init__(self, llm: dict[str, Any]) -> None:
        self.llm = llm
        self.reasoning = 0
        self.texts: list[str] = []


class _Rollout:
    """The conversion of one rollout file (one run)."""

    def __init__(self, file: str, stem: str, rows: Sequence[tuple[int, Any]]) -> None:
        self.rows = rows
        meta = mapping_at(rows[0][1], "payload") if rows[0][1].get("type") == "session_meta" else {}
        run_id = meta.get("id") if isinstance(meta.get("id"), str) and meta.get("id") else stem
        self.b = _Builder(file, str(run_id), fmt="codex")
        self.b.source["agent"] = "codex"
        self.start = _time(rows[0][1].get("timestamp"))
        self.user_origin = user_origins(rows)
        self.request: _Request | None = None  # the open request: its items become its llm step's
        self.usage: dict[str, int] | None = None  # a count that came before its request's items (0.58)
        self.last_total: Any = None
        self.context_tokens: int | None = None  # the last request's size: the context before a compaction
        self.calls: dict[str, dict[str, Any]] = {}  # call id -> its step (events name calls by id)
        self.sessions: dict[int, str] = {}  # unified exec session id -> the exec_command call that opened it
        self.polls: list[tuple[dict[str, Any], int]] = []  # write_stdin polls that saw a process exit
        self.ends: list[tuple[int, Mapping[str, Any]]] = []  # exec_command_end / patch_apply_end events
        self.aborted: dict[str, dict[str, Any]] = {}  # calls of an aborted turn, should their output come
        self.models: list[str] = []
        self.have_meta = False
        self.contexts = any(isinstance(row, Mapping) and row.get("type") == "turn_context" for _, row in rows)

    # ---- the pass ------------------------------------------------------------------------------------
    def convert(self) -> ImportedRun:
        for line, row in self.rows:
            if not isinstance(row, Mapping):
                self.b.note(f"{type(row).__name__} line (expected an object)", (line, line))
                continue
            kind, payload, ts = type_name(row.get("type")), row.get("payload"), row.get("timestamp")
            if kind not in LINE_TYPES or not isinstance(payload, Mapping):
                self.b.note(f"{kind or 'untyped'} line", (line, line))
                continue
            before = len(self.b.steps)
            getattr(self, f"_{kind}")(line, payload)
            if (t := _time(ts)) is not None and self.start is not None:
                for step in self.b.steps[before:]:
                    step["t"] = max(0, int((t - self.start).total_seconds() * 1000))
        self._close()
        self._settle_ends()
        self._settle_polls()
        self._finish()
        if self.models:
            self.b.source["model"] = self.models[0]
            if len(self.models) > 1:
                self.b.header_x["models"] = self.models
        return self.b.build()

    def _session_meta(self, line: int, meta: Mapping[str, Any]) -> None:
        if self.have_meta:
            self.b.note("session_meta line (a second session header)", (line, line))
            return
        self.have_meta = True
        x = self.b.header_x
        for key, name in (("id", "session-id"), ("cli_version", "cli-version"), ("originator", "originator"),
                          ("model_provider", "model-provider"), ("cwd", "cwd"), ("source", "session-source")):
            if isinstance(meta.get(key), str) and meta[key]:
                x[name] = meta[key]
        instructions = meta.get("instructions")
        if not isinstance(instructions, str):
            instructions = mapping_at(meta, "base_instructions").get("text")
        if isinstance(instructions, str) and instructions:
            self.b.say("system", instructions, at=(line, line))

    def _turn_context(self, line: int, payload: Mapping[str, Any]) -> None:
        self._close()  # each model request starts with one
        model = payload.get("model")
        if isinstance(model, str) and model and model not in self.models:
            self.models.append(model)

    def _compacted(self, line: int, payload: Mapping[str, Any]) -> None:
        text = payload.get("message")
        if not isinstance(text, str) or not text:
            # newer Codex keeps the summary as the last user message of the history that replaced the old one
            history = [i for i in seq(payload.get("replacement_history")) if isinstance(i, Mapping)]
            users = [i for i in history if i.get("type") == "message" and i.get("role") == "user"]
            text = content_text(users[-1].get("content")) if users else None
        self._compaction(line, "compacted", text or None)

    def _compaction(self, line: int, what: str, text: str | None) -> None:
        """One compaction: a `compacted` line and the `context_compacted` event beside it are one step."""
        self._close()
        last = self.b.steps[-1] if self.b.steps else None
        if last is not None and "compacted" in last and what not in last["x-compaction-lines"]:
            last["x-compaction-lines"][what] = line
            if text and "text" not in last["compacted"]:
                last["compacted"]["text"] = text
            return
        x: dict[str, Any] = {"compaction-lines": {what: line}}
        if self.usage is not None:  # the summarising request's count: it is no model turn of the agent's
            x["summary-usage"] = {k: v for k, v in self.usage.items() if k in ("input_tokens", "output_tokens")}
            self.usage = None
        self.b.row = line
        self.b.compacted(index=line, tokens_before=self.context_tokens, text=text, x=x)

    # ---- response items ------------------------------------------------------------------------------
    def _response_item(self, line: int, item: Mapping[str, Any]) -> None:
        kind = type_name(item.get("type"))
        at: At = (line, line)
        if kind == "message":
            self._message(line, item)
        elif kind in MODEL_ITEMS:
            request = self._open(at)
            if kind == "reasoning":
                request.reasoning += 1
            else:
                self._call(line, str(kind), item)
        elif kind in OUTPUT_ITEMS:
            self._output(line, item)
        elif kind == "compaction":
            self._compaction(line, "compaction", None)
        else:
            self.b.note(f"{kind or 'untyped'} item", at)

    def _message(self, line: int, item: Mapping[str, Any]) -> None:
        at: At = (line, line)
        role = item.get("role")
        if role == "assistant":
            text = self.b.text(item.get("content"), at, "an assistant message")
            if text:
                self._open(at).texts.append(text)
            return
        self._close()
        text = self.b.text(item.get("content"), at, f"a {role} message")
        if role == "user":
            self.b.say("user", text, at=at, origin=self.user_origin.get(line, "user"))
        else:  # developer and system: the harness's instructions to the model
            self.b.say("system", text, at=at)

    def _open(self, at: At) -> _Request:
        """The request a model item belongs to: the open one, or a new `llm` step here."""
        if self.request is None or (self.usage is not None and "input_tokens" in self.request.llm["llm"]):
            self._close()
            llm = self.b.turn(at=at)
            self.request = _Request(llm)
            if self.usage is not None:
                self._give_usage(self.usage)
                self.usage = None
        return self.request

    def _close(self) -> None:
        request, self.request = self.request, None
        if request is None:
            return
        body = request.llm["llm"]
        if request.texts:
            body["text"] = "\n".join(request.texts)
        if request.reasoning:
            request.llm["x-reasoning-items"] = request.reasoning

    def _call(self, line: int, kind: str, item: Mapping[str, Any]) -> None:
        tool, args, x = call_args(kind, item)
        call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
        if kind == "local_shell_call" and call_id is None and isinstance(item.get("id"), str):
            call_id = item["id"]  # its output names it by `id` when the call has no call_id
        if kind == "web_search_call":  # the server ran it: the item carries its own outcome
            item_id = item.get("id") if isinstance(item.get("id"), str) else None
            status = item.get("status")
            outcome = {"error": f"status: {status}"} if status in ("failed", "incomplete") else {}
            self.b.call(item_id, tool, args, x={"x-tool-type": "server", **x}, result=outcome,
                        at=(line, item_id or line))
            return
        step = self.b.call(call_id, tool, args, x=x, at=(line, call_id or line))
        if call_id:
            self.calls[call_id] = step

    def _output(self, line: int, item: Mapping[str, Any]) -> None:
        call_id = item.get("call_id", item.get("id"))  # a local_shell_call_output may name its call by `id`
        call_id = call_id if isinstance(call_id, str) else None
        at: At = (line, line)
        if not self.contexts:
            self._close()  # without turn_context lines, an output is what ends a request
        text = self.b.text(item.get("output"), at, "a tool output")
        step = self.b.waiting(call_id)
        if step is not None:
            self.b.result(call_id, {}, at=at)  # paired (and placed); `_settle` fills it in
        elif call_id in self.aborted:
            step = self.aborted.pop(str(call_id))  # the turn was aborted, yet this call did return
            step["x-result-source"] = {"row": line, "index": line}
        else:
            self.b.result(call_id, {}, at=at)  # an orphan: RunBuilder warns
            return
        self._settle(step, read_output(text))

    def _settle(self, step: dict[str, Any], outcome: Outcome) -> None:
        """Fill in a call's result from what its output says (the markers of `_codex_read`)."""
        if outcome.denied_by is not None:
            self.b.not_run(step, "denied", outcome.text.strip(), by=outcome.denied_by)
            return
        if outcome.aborted:
            self.b.not_run(step, "cancelled", "aborted: the turn was interrupted before the call returned")
            return
        code = outcome.exit_code
        if outcome.session is not None:
            step["x-session-id"] = outcome.session
            if step["tool"] != POLL_TOOL and isinstance(step.get("x-call-id"), str):
                self.sessions[outcome.session] = step["x-call-id"]
        if outcome.process_exit is not None:
            if step["tool"] == POLL_TOOL:
                step["x-process-exit-code"] = outcome.process_exit
                self.polls.append((step, outcome.process_exit))
            else:
                code = outcome.process_exit
        if outcome.error is not None:
            self.b.set_result(step, result(error=outcome.error))
        else:
            self.b.set_result(step, result(outcome.text, exit_code=code))

    # ---- events --------------------------------------------------------------------------------------
    def _event_msg(self, line: int, event: Mapping[str, Any]) -> None:
        kind = type_name(event.get("type"))
        at: At = (line, line)
        if kind == "token_count":
            self._token_count(event)
        elif kind == "user_message":
            if line in self.user_origin:  # the typed prompt Codex also wrote as a response item
                return
            self._close()
            text = event.get("message")
            self.b.say("user", text if isinstance(text, str) else "", at=at, origin="user")
        elif kind in ("exec_command_end", "patch_apply_end"):
            self.ends.append((line, event))
        elif kind == "context_compacted":
            self._compaction(line, "context_compacted", None)
        elif kind == "turn_aborted":
            self._turn_aborted(line, event)
        elif kind not in QUIET_EVENTS:
            self.b.note(f"{kind or 'untyped'} event", at)

    def _token_count(self, event: Mapping[str, Any]) -> None:
        info = mapping_at(event, "info")
        total = info.get("total_token_usage")
        if not isinstance(total, Mapping) or total == self.last_total:
            return  # a rate-limit update, or the repeat Codex writes as the next request starts
        last = info.get("last_token_usage")
        if not isinstance(last, Mapping):  # only the running total: this request's share is what it grew by
            before = self.last_total if isinstance(self.last_total, Mapping) else {}
            last = {k: _int(v) - _int(before.get(k)) for k, v in total.items()}
        self.last_total = total
        usage = {key: value for key, value in last.items()
                 if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT}
        if isinstance(usage.get("total_tokens"), int):
            self.context_tokens = usage["total_tokens"]
        if self.request is not None and "input_tokens" not in self.request.llm["llm"]:
            self._give_usage(usage)
        else:
            self.usage = usage  # its request's items are still to come (codex_cli_rs 0.58 writes it first)

    def _give_usage(self, usage: Mapping[str, int]) -> None:
        assert self.request is not None
        llm = self.request.llm
        for key in ("input_tokens", "output_tokens"):
            if isinstance(usage.get(key), int) and usage[key] >= 0:
                llm["llm"][key] = usage[key]
        for key, name in (("cached_input_tokens", "x-cached-input-tokens"),
                          ("reasoning_output_tokens", "x-reasoning-tokens")):
            if usage.get(key):
                llm[name] = usage[key]

    def _turn_aborted(self, line: int, event: Mapping[str, Any]) -> None:
        """The person stopped the turn: the calls still waiting never returned (cancelled, no outcome)."""
        self._close()
        reason = event.get("reason") if isinstance(event.get("reason"), str) else "interrupted"
        for step in self.b.take_waiting():
            self.b.not_run(step, "cancelled", f"turn aborted ({reason})")
            if isinstance(step.get("x-call-id"), str):
                self.aborted[step["x-call-id"]] = step
        last = next((s for s in reversed(self.b.steps) if "llm" in s or "tool" in s), None)
        if last is not None:
            last["x-turn-aborted"] = {"reason": reason, "row": line}
        else:
            self.b.note("turn_aborted event", (line, line))

    # ---- after the pass ------------------------------------------------------------------------------
    def _settle_ends(self) -> None:
        """`exec_command_end` / `patch_apply_end`: the exit code and status of the call they name."""
        for line, event in self.ends:
            call_id = event.get("call_id")
            step = self.calls.get(call_id) if isinstance(call_id, str) else None
            if step is None or not isinstance(call_id, str):
                self.b.note(f"{event.get('type')} event without its call", (line, line))
                continue
            self.b.settled(step)  # an end event is an outcome, even when the output never came
            status = event.get("status")
            if status == "declined":
                if "denied" not in step:
                    self.b.not_run(step, "denied", _event_text(event, "declined"), by="user")
                continue
            if "denied" in step or "cancelled" in step:
                continue
            r = dict(step.get("result") or {})
            if event.get("type") == "exec_command_end":
                code = exit_code(event.get("exit_code"))
                if code is not None:
                    r["exit_code"] = code
                process = event.get("process_id")
                if isinstance(process, str) and (session := number_in_text(process)) is not None:
                    self.sessions.setdefault(session, call_id)
            elif event.get("success") is False or status == "failed":
                r["error"] = _event_text(event, "patch failed")
            step["x-end-event-row"] = line
            self.b.set_result(step, r)

    def _settle_polls(self) -> None:
        """A poll that reports a process's exit: the failure is the command's (the call that started it),
        counted once; the poll itself read output and succeeded. Only when the log does not say which call
        started the session is the exit the poll's own."""
        for poll, code in self.polls:
            if "result" not in poll:
                continue  # an end event said the poll itself never ran
            session = _int_or_none(poll["args"].get("session_id"))
            starter = self.calls.get(self.sessions.get(session, "")) if session is not None else None
            if starter is None:
                poll["result"]["exit_code"] = code
                continue
            poll["x-process-call"] = starter.get("x-call-id")
            r = starter.get("result")
            if r is not None and "exit_code" not in r and "error" not in r:
                r["exit_code"] = code
                starter["x-exit-reported-by"] = poll.get("x-call-id")

    def _finish(self) -> None:
        """A log whose last step is a model request that asked for nothing ends with that answer: `done`."""
        last = self.b.steps[-1] if self.b.steps else None
        if last is None or "llm" not in last or "x-turn-aborted" in last:
            return
        text = last["llm"].pop("text", None)
        if text is None:
            return
        self.b.row = last["source"]["row"]
        done = self.b.done(index=last["source"]["index"], text=text)
        if "t" in last:
            done["t"] = last["t"]


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    # a digit string: bounded before int() (a 5,000-digit one raises), and "¹" is a digit int() refuses
    return number_in_text(value) if isinstance(value, str) else None


def _event_text(event: Mapping[str, Any], default: str) -> str:
    """What an end event says went wrong: its stderr, else its output, else `default`."""
    for key in ("stderr", "aggregated_output", "stdout", "formatted_output"):
        text = event.get(key)
        if isinstance(text, str) and text.strip():
            return text.strip()
    return default
