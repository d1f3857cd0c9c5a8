"""How the lines of one Claude Code transcript become steps: streamed messages, paired results, compaction.

A transcript is JSONL; each line has a `type`. `assistant` lines stream one model message over several lines
that share `message.id` (each repeats the usage): one `llm` step per message id, its tool calls in file order.
`user` lines carry a person's prompt, harness text, or `tool_result` blocks (which fill in the calls by id,
possibly between the lines of the message that made them). `system` lines with subtype `compact_boundary` and
the summary message after them (`isCompactSummary`) are the log's own compaction. `summary` lines are header
facts. Every other line (hook `progress`, `file-history-snapshot`, `queue-operation`, other `system` subtypes,
types this reader does not know) is listed as unmapped, grouped by type, and never an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..core._safeload import check_json_depth
from ..errors import TraceError
from .build import exit_code, result
from .run_builder import At, RunBuilder, parse_arguments

__all__ = [
    "CANCELLED_MARKERS", "DENIED_BY_RULE_MARKERS", "DENIED_BY_USER_MARKERS", "ERROR_MARKERS", "HARNESS_PREFIXES",
    "MAIN_AGENT", "Builder", "Transcript", "not_run_of", "read_rows", "text_failure",
]

MAIN_AGENT: Final = "main"  # the name a subagent's prompt gives the agent that started it

# ---- the text markers of calls that never ran (they all arrive with `is_error: true`) --------------------------
# A person refused the call at the permission prompt, or stopped it with Esc (Claude Code reports both with the
# same text, and the log does not say whether the call had started): denied by the user.
DENIED_BY_USER_MARKERS: Final = (
    "The user doesn't want to proceed with this tool use",
    "The user doesn't want to take this action right now",
    "[Request interrupted by user",
)
# A permission rule (settings `deny`, or a non-interactive run with no rule allowing the tool) refused it.
DENIED_BY_RULE_MARKERS: Final = (
    re.compile(r"Permission to use \S.* has been denied"),
    re.compile(r"Claude requested permissions to .+ but you haven't granted it yet"),
)
# Another call of the same parallel batch failed first, so Claude Code did not run this one.
CANCELLED_MARKERS: Final = (
    "<tool_use_error>Sibling tool call errored</tool_use_error>",
    re.compile(r"<tool_use_error>Cancelled: parallel tool call .* errored</tool_use_error>", re.DOTALL),
)
# ---- failure where a result has no `is_error` flag (older or hand-trimmed logs) -------------------------------
# `Exit code N` (N != 0) at the start of a result is a failed command even when `is_error` is false;
# `<tool_use_error>` wraps Claude Code's own tool errors; a `toolUseResult` string starting `Error: ` is the
# error Claude Code showed. Nothing else in a result's text is read as a failure ("0 errors" is output).
EXIT_CODE: Final = re.compile(r"Exit code (-?\d+)(?:\n|$)")
ERROR_MARKERS: Final = ("Exit code N (N != 0) at the start", "<tool_use_error> at the start",
                        "toolUseResult starting with 'Error: '")

# user text that the harness wrote, not a person (interrupt notes, local command output, background-task news)
HARNESS_PREFIXES: Final = (
    "[Request interrupted by user", "<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
    "<task-notification>", "<bash-stdout>", "<bash-stderr>", "<system-reminder>", "Caveat: The messages below",
)
TOOL_FACTS: Final = {  # toolUseResult keys kept on a call (as x-<name>): what the result text does not say
    "interrupted": "interrupted", "returnCodeInterpretation": "return-code-interpretation",
    "backgroundTaskId": "background-task", "agentId": "subagent", "status": "status",
    "totalToolUseCount": "subagent-calls", "totalTokens": "subagent-tokens",
}
SYNTHETIC_MODEL: Final = "<synthetic>"  # Claude Code's own messages written as the assistant's (API errors)


def read_rows(text: str, name: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """(line number, object) per non-blank line, and warnings.

    A last line cut short (the file does not end with a newline and that line is not JSON) is the session
    still being written or a copy cut off: it is skipped with a warning. Any other line that is not a JSON
    object fails the whole file (a `TraceError` naming the line): the file is damaged, not just unfinished.
    """
    # split at newlines only: JSON.stringify leaves U+2028 and other separators that splitlines() splits at raw
    lines = text.split("\n")
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=0)
    open_end = not text.endswith("\n")
    rows: list[tuple[int, dict[str, Any]]] = []
    warnings: list[str] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        check_json_depth(line, name, n)
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            if n == last and open_end:
                warnings.append(f"{name}:{n}: the last line is cut short ({exc.msg}); skipped")
                continue
            raise TraceError(f"invalid JSON on this line ({exc.msg}); expected one JSON object per line",
                             file=name, line=n) from None
        except ValueError as exc:  # an integer past Python's digit limit: refused as the safe reader refuses it
            raise TraceError(f"a number this line holds cannot be read ({str(exc)[:80]}); expected one JSON "
                             "object per line", file=name, line=n) from None
        if not isinstance(value, dict):
            raise TraceError(f"expected a JSON object (a Claude Code transcript line), got {type(value).__name__}",
                             file=name, line=n)
        rows.append((n, value))
    return rows, warnings


def _matches(text: str, markers: Sequence[str | re.Pattern[str]]) -> bool:
    return any(text.startswith(m) if isinstance(m, str) else m.match(text) is not None for m in markers)


def not_run_of(text: str) -> tuple[str, str | None] | None:
    """("denied", "user"|"rule") or ("cancelled", None) when a result's text says the call never ran."""
    if _matches(text, DENIED_BY_USER_MARKERS):
        return "denied", "user"
    if _matches(text, DENIED_BY_RULE_MARKERS):
        return "denied", "rule"
    if _matches(text, CANCELLED_MARKERS):
        return "cancelled", None
    return None


def text_failure(text: str, tool_use_result: Any, *, flagged: bool) -> tuple[bool, int | None]:
    """(failed, exit code) read from a result's text (ERROR_MARKERS): a non-zero `Exit code N` always; the
    other markers only where the log has no `is_error` flag (`flagged` false)."""
    code = EXIT_CODE.match(text)
    status = exit_code(code.group(1)) if code else None
    failed = bool(status) or (not flagged and (text.startswith("<tool_use_error>") or (
        isinstance(tool_use_result, str) and tool_use_result.startswith("Error: "))))
    return failed, status


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


class Builder(RunBuilder):
    """A `RunBuilder` that hands over a waiting call (to mark it denied or cancelled) and writes compaction steps."""

    def take(self, call_id: str) -> dict[str, Any] | None:
        """The oldest call of `call_id` still waiting for its result, no longer waiting; None if there is none."""
        queue = self._waiting.get(call_id)
        return queue.popleft() if queue else None

    def compaction(self, at: At, *, trigger: Any, tokens_before: Any, text: str | None,
                   agent: str | None) -> dict[str, Any]:
        trigger = trigger if trigger in ("auto", "manual") else None
        tokens = tokens_before if isinstance(tokens_before, int) and not isinstance(tokens_before, bool) else None
        return self.compacted(index=self._place(at), trigger=trigger, tokens_before=tokens, text=text, agent=agent)


@dataclass
class _Message:
    """One streamed assistant message: its `llm` step and the largest usage any of its lines reported."""

    step: dict[str, Any]
    usage: dict[str, int] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)


USAGE_KEYS: Final = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


@dataclass
class Transcript:
    """Reads one transcript file into `builder`; `agent` names the subagent when the file is one.

    After `read`: `task_calls` maps each Task call id to its step, `subagent_of` a Task call id to the agentId
    its result names, `times` a step's id() to the timestamp of its line (to place unlinked subagents).
    """

    builder: Builder
    agent: str | None = None
    prompt_origin: str = "user"  # a subagent's prompts come from the agent that started it
    task_calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    subagent_of: dict[str, str] = field(default_factory=dict)
    times: dict[int, str] = field(default_factory=dict)
    summaries: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    _messages: dict[str, _Message] = field(default_factory=dict)
    _compaction: dict[str, Any] | None = None

    def read(self, rows: Sequence[tuple[int, Mapping[str, Any]]]) -> None:
        for line, row in rows:
            kind = row.get("type")
            for key, fact in (("sessionId", "session-id"), ("version", "claude-code-version"), ("cwd", "cwd")):
                if isinstance(row.get(key), str) and fact not in self.facts:
                    self.facts[fact] = row[key]
            before = len(self.builder.steps)
            if kind == "assistant":
                self._assistant(line, row)
            elif kind == "user":
                self._user(line, row)
            elif kind == "system" and row.get("subtype") == "compact_boundary":
                meta = _obj(row.get("compactMetadata"))
                self._compaction = self.builder.compaction(
                    (line, self._uuid(row)), trigger=meta.get("trigger"), tokens_before=meta.get("preTokens"),
                    text=None, agent=self._agent(row))
            elif kind == "summary":
                if isinstance(row.get("summary"), str):
                    self.summaries.append(row["summary"])
            elif kind == "progress":
                self.builder.note(f"progress line ({_obj(row.get('data')).get('type')})", (line, self._uuid(row)))
            elif kind == "system":
                self.builder.note(f"system line ({row.get('subtype')})", (line, self._uuid(row)))
            elif isinstance(kind, str):
                self.builder.note(f"{kind} line", (line, self._uuid(row)))
            else:
                self.builder.note("line without a type", (line, None))
            stamp = row.get("timestamp")
            if isinstance(stamp, str):
                for step in self.builder.steps[before:]:
                    self.times[id(step)] = stamp

    # ---- helpers ------------------------------------------------------------------------------------------
    @staticmethod
    def _uuid(row: Mapping[str, Any]) -> str | None:
        return row["uuid"] if isinstance(row.get("uuid"), str) else None

    def _agent(self, row: Mapping[str, Any]) -> str | None:
        if self.agent:
            return self.agent
        if row.get("isSidechain") is True:  # 1.0.x kept a Task's subagent in the main file
            agent_id = row.get("agentId")
            return f"agent-{agent_id}" if isinstance(agent_id, str) and agent_id else "sidechain"
        return None

    # ---- assistant ----------------------------------------------------------------------------------------
    def _assistant(self, line: int, row: Mapping[str, Any]) -> None:
        b = self.builder
        m = _obj(row.get("message"))
        at: At = (line, self._uuid(row))
        if not m:
            b.note("assistant line without a message", at)
            return
        model = m.get("model")
        if isinstance(model, str) and model and model != SYNTHETIC_MODEL and model not in self.models:
            self.models.append(model)
        mid = m.get("id") if isinstance(m.get("id"), str) else None
        message = self._messages.get(mid) if mid else None
        blocks = _blocks(m.get("content"))
        if message is None:
            x: dict[str, Any] = {}
            if mid:
                x["x-message-id"] = mid
            if model == SYNTHETIC_MODEL:
                x["x-synthetic"] = True
            error = None
            if row.get("isApiErrorMessage") is True:
                error = "\n".join(str(bl.get("text", "")) for bl in blocks if bl.get("type") == "text") or "API error"
            message = _Message(b.turn(error=error, x=x, at=at, agent=self._agent(row)))
            if mid:
                self._messages[mid] = message
        self._usage(message, m.get("usage"))
        step = message.step
        if isinstance(m.get("stop_reason"), str):
            step["x-stop-reason"] = m["stop_reason"]
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and message.step["llm"].get("error") is None:
                text = block.get("text")
                if isinstance(text, str) and text.strip():
                    message.texts.append(text.strip())
                    step["llm"]["text"] = "\n".join(message.texts)
            elif kind == "tool_use":
                self._call(line, row, block)
            elif kind in ("thinking", "redacted_thinking"):
                step["x-thinking-blocks"] = step.get("x-thinking-blocks", 0) + 1
            elif kind != "text":
                b.note(f"{kind} block in an assistant message", at)

    def _usage(self, message: _Message, usage: Any) -> None:
        usage = _obj(usage)
        if not usage:
            return
        # every streamed line repeats the usage; the output count grows to its final value: the largest counts
        for key in USAGE_KEYS:
            message.usage[key] = max(message.usage.get(key, 0), _int(usage.get(key)))
        llm = message.step["llm"]
        u = message.usage
        # the context the model read is the uncached, cache-written and cache-read prompt tokens together
        llm["input_tokens"] = u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        llm["output_tokens"] = u["output_tokens"]
        message.step["x-uncached-input-tokens"] = u["input_tokens"]

    def _call(self, line: int, row: Mapping[str, Any], block: Mapping[str, Any]) -> None:
        call_id = block["id"] if isinstance(block.get("id"), str) and block["id"] else None
        args, extra = parse_arguments(block.get("input"))
        name = str(block.get("name") or "")
        step = self.builder.call(call_id, name, args, x=extra, at=(line, call_id or self._uuid(row)),
                                 agent=self._agent(row))
        if call_id and name in ("Task", "Agent"):
            self.task_calls[call_id] = step

    # ---- user ---------------------------------------------------------------------------------------------
    def _user(self, line: int, row: Mapping[str, Any]) -> None:
        b = self.builder
        at: At = (line, self._uuid(row))
        m = _obj(row.get("message"))
        blocks = _blocks(m.get("content"))
        if not m:
            b.note("user line without a message", at)
            return
        if row.get("isCompactSummary") is True:
            self._summary(at, row, b.text(m.get("content"), at, "a compaction summary"))
            return
        results = [bl for bl in blocks if bl.get("type") == "tool_result"]
        for block in results:
            self._result(line, row, block)
        texts = [str(bl.get("text", "")) for bl in blocks if bl.get("type") == "text"]
        for block in blocks:
            if block.get("type") not in ("text", "tool_result"):
                b.note(f"{block.get('type')} block in a user message", at)
        if texts:
            text = "\n".join(texts)
            origin = self._origin(row, text, bool(results))
            b.say("user", text, at=at, origin=origin, name=MAIN_AGENT if origin == "agent" else None,
                  agent=self._agent(row))

    def _origin(self, row: Mapping[str, Any], text: str, beside_results: bool) -> str:
        if beside_results or row.get("isMeta") is True or text.lstrip().startswith(HARNESS_PREFIXES):
            return "harness"
        if self.agent or row.get("isSidechain") is True:
            return self.prompt_origin if self.agent else "agent"
        return "user"

    def _summary(self, at: At, row: Mapping[str, Any], text: str) -> None:
        """The summary that replaced the context: the text of the compaction its boundary line began."""
        pending = self._compaction
        self._compaction = None
        if pending is not None and "text" not in pending["compacted"]:
            pending["compacted"]["text"] = text
            pending["x-summary-source"] = {k: v for k, v in zip(("row", "index"), at, strict=True) if v is not None}
        else:  # older versions wrote the summary alone, at the start of the continued session
            self.builder.compaction(at, trigger=None, tokens_before=None, text=text, agent=self._agent(row))

    def _result(self, line: int, row: Mapping[str, Any], block: Mapping[str, Any]) -> None:
        b = self.builder
        at: At = (line, self._uuid(row))
        call_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else None
        text = b.text(block.get("content"), at, "a tool result")
        details = row.get("toolUseResult")
        step = b.take(call_id) if call_id else None
        if step is None:
            b.result(call_id, {}, at=at)  # no call waits for it: the orphan warning
            return
        flagged = isinstance(block.get("is_error"), bool)
        never = not_run_of(text) if block.get("is_error") is not False else None
        if never is not None:
            how, by = never
            b.not_run(step, how, text, by=by)
        else:
            failed, exit_code = text_failure(text, details, flagged=flagged)
            if block.get("is_error") is True or failed:
                b.set_result(step, result(error=text or "tool_result is_error without text", exit_code=exit_code))
            else:
                b.set_result(step, result(text, exit_code=exit_code))
        step["x-result-source"] = {"row": line, **({"index": at[1]} if at[1] is not None else {})}
        for key, name in TOOL_FACTS.items():
            value = _obj(details).get(key)
            if value not in (None, False, ""):
                step[f"x-{name}"] = value
        agent_id = _obj(details).get("agentId")
        if call_id in self.task_calls and isinstance(agent_id, str) and agent_id:
            self.subagent_of[call_id] = agent_id
