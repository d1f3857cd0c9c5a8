"""Cline's `ui_messages.json` (what the task's chat panel shows) as steps; the importer is `cline.py`.

Each entry is `{ts, type: say|ask, say|ask: KIND, text, conversationHistoryIndex, …}`. Alone, the file is
the whole run: `api_req_started` opens a model turn (its JSON `text` holds the usage and the request,
whose `[tool …] Result:` blocks answer the calls before it); the calls are the tool, command and MCP
entries and the tools the UI shows as their own kind. Beside `api_conversation_history.json` it adds only
what the API history lacks: failed model requests, the harness's limits, and context truncation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ._cline_text import MCP_TOOLS, ResultBlock, outcome, result_blocks
from .build import ImportedRunBuilder, parse_arguments, result, text_of

__all__ = ["UI_TOOLS", "Calls", "environment_free", "extra_step", "ui_steps"]

# the UI's names for tools (ClineSayTool.tool) -> the tool names of the API history, so a task's two files agree
UI_TOOLS: Final = {
    "readFile": "read_file", "editedExistingFile": "replace_in_file", "newFileCreated": "write_to_file",
    "searchFiles": "search_files", "listFilesTopLevel": "list_files", "listFilesRecursive": "list_files",
    "listCodeDefinitionNames": "list_code_definition_names", "webFetch": "web_fetch", "webSearch": "web_search",
    "appliedDiff": "apply_diff", "insertContent": "insert_content", "searchAndReplace": "search_and_replace",
    "codebaseSearch": "codebase_search", "fetchInstructions": "fetch_instructions", "switchMode": "switch_mode",
    "newTask": "new_task", "updateTodoList": "update_todo_list", "summarizeTask": "summarize_task",
}
# tools whose UI `content` is what the call wrote (kept as an argument); for the others it is the absolute
# path or the result, not an argument
_CONTENT_IS_ARGUMENT: Final = {"editedExistingFile": "diff", "newFileCreated": "content", "appliedDiff": "diff",
                               "insertContent": "content", "searchAndReplace": "content"}
# the model's tool uses the UI shows as an entry of their own (say or ask kind -> API tool name)
_OWN_ENTRY_TOOLS: Final = {("say", "completion_result"): "attempt_completion",
                           ("ask", "followup"): "ask_followup_question",
                           ("ask", "plan_mode_respond"): "plan_mode_respond",
                           ("say", "load_mcp_documentation"): "load_mcp_documentation"}
# entries that are not steps: bookkeeping, the model's hidden reasoning, prompts for a button
_NOT_STEPS: Final = frozenset({
    "checkpoint_created", "task_progress", "reasoning", "mcp_server_request_started", "api_req_retried",
    "resume_task", "resume_completed_task", "deleted_api_reqs", "api_req_finished", "new_task_with_context",
    "completion_result", "command_output", "mcp_server_response", "browser_action_launch",
})
# failed model requests, the harness's limits and errors: also imported beside an API history
_HARNESS_KINDS: Final = frozenset({"mistake_limit_reached", "auto_approval_max_req_reached", "error",
                                   "diff_error", "clineignore_error"})
_REQ_APP: Final = "REQ_APP"  # Cline appends it to a command that asked for approval
_ENVIRONMENT: Final = re.compile(r"<environment_details>.*?(?:</environment_details>|\Z)", re.S)


def environment_free(text: str) -> str:
    """`text` without its `<environment_details>` sections (the harness's editor state, sent every turn)."""
    return _ENVIRONMENT.sub("", text) if "<environment_details>" in text else text


def _kind(entry: Mapping[str, Any]) -> tuple[str, str]:
    how = entry.get("type")
    what = entry.get(how) if how in ("say", "ask") else None
    return (str(how), str(what) if what is not None else "")


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


# file edits the UI names by the file's state, not by the tool: an overwrite of an existing file with
# write_to_file shows as `editedExistingFile`; the answer's header names the tool the model called
_EDITS: Final = frozenset({"write_to_file", "replace_in_file", "apply_diff", "insert_content", "search_and_replace"})


class Calls:
    """The calls still waiting for their answer, answered by tool name in order (Cline writes answers as
    text, in the order of the calls, each naming its tool). With `ui_names`, a waiting file edit takes an
    edit's answer whatever edit tool the UI named, and is renamed to the tool the answer names."""

    def __init__(self, b: ImportedRunBuilder, *, ui_names: bool = False) -> None:
        self.b = b
        self.ui_names = ui_names
        self.waiting: list[dict[str, Any]] = []

    def _matches(self, step: dict[str, Any], tool: str) -> bool:
        return step["tool"] == tool or (self.ui_names and step["tool"] in _EDITS and tool in _EDITS)

    def add(self, step: dict[str, Any]) -> None:
        self.waiting.append(step)

    def answer(self, block: ResultBlock, where: Any) -> dict[str, Any] | None:
        """Give the oldest waiting call of `block.tool` its outcome; None when no call of that tool waits."""
        k = next((n for n, s in enumerate(self.waiting) if self._matches(s, block.tool)), None)
        if k is None:
            return None
        step = self.waiting.pop(k)
        step["tool"] = block.tool
        settle(self.b, step, block.tool, block.text)
        step["x-result-source"] = where
        return step

    def by_id(self, call_id: str) -> dict[str, Any] | None:
        k = next((n for n, s in enumerate(self.waiting) if s.get("x-call-id") == call_id), None)
        return self.waiting.pop(k) if k is not None else None


def settle(b: ImportedRunBuilder, step: dict[str, Any], tool: str, text: str) -> None:
    """Write a call's outcome from its answer's text and markers."""
    said = outcome(tool, text)
    if said.how == "ok":
        b.set_result(step, result(text.strip("\n")))
    elif said.how == "failed":
        b.set_result(step, result(error=said.text))
    elif said.how == "denied":
        b.not_run(step, "denied", said.text, by=said.by)
    else:
        b.not_run(step, "cancelled", said.text)


def _tool_call(b: ImportedRunBuilder, how: str, kind: str, text: str, k: int) -> dict[str, Any]:
    """The tool step of a tool, command, MCP or own-entry UI entry."""
    if kind == "tool":
        said = _json(text)
        ui_name = str(said.get("tool") or "")
        args = {key: v for key, v in said.items() if key not in ("tool", "content", "operationIsLocatedInWorkspace")}
        if ui_name in _CONTENT_IS_ARGUMENT and "content" in said:
            args[_CONTENT_IS_ARGUMENT[ui_name]] = said["content"]
        if ui_name == "listFilesRecursive":
            args["recursive"] = True
        return b.tool(UI_TOOLS.get(ui_name, ui_name or "unnamed"), args, index=k, x={"ui-tool": ui_name})
    if kind == "command":
        command = text[: -len(_REQ_APP)] if text.endswith(_REQ_APP) else text
        return b.tool("execute_command", {"command": command}, index=k)
    if kind == "use_mcp_server":
        said = _json(text)
        name = "access_mcp_resource" if said.get("type") == "access_mcp_resource" else "use_mcp_tool"
        args = {"server_name": said.get("serverName")}
        if name == "use_mcp_tool":
            parsed, extra = parse_arguments(said.get("arguments"))
            args |= {"tool_name": said.get("toolName"), "arguments": parsed or extra.get("x-arguments", {})}
        else:
            args["uri"] = said.get("uri")
        return b.tool(name, args, index=k)
    tool = _OWN_ENTRY_TOOLS[(how, kind)]
    said = _json(text)
    args = said if said else ({"result": text} if tool == "attempt_completion" else {"text": text} if text else {})
    return b.tool(tool, args, index=k)


def extra_step(b: ImportedRunBuilder, entry: Mapping[str, Any], k: int) -> bool:
    """The step of an entry the API history lacks (a failed request, a harness limit or error); False when
    the entry is not one."""
    _, kind = _kind(entry)
    text = text_of(entry.get("text"))
    if kind == "error_retry":
        said = _json(text)
        x = {"ui": "error_retry", "attempt": said.get("attempt"), "max-attempts": said.get("maxAttempts")}
        b.llm(index=k, error=text_of(said.get("errorMessage")) or "error_retry",
              x={key: v for key, v in x.items() if v is not None})
    elif kind == "api_req_failed":
        b.llm(index=k, error=text or "api_req_failed", x={"ui": "api_req_failed"})
    elif kind in _HARNESS_KINDS:
        b.message("system", text or kind, index=k, origin="harness", x={"ui": kind})
    else:
        return False
    return True


def truncated_range(entry: Mapping[str, Any]) -> list[int] | None:
    """The API history range Cline dropped from the context, as the entry records it."""
    value = entry.get("conversationHistoryDeletedRange")
    ok = isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)
    return value if ok else None


def ui_steps(b: ImportedRunBuilder, entries: Sequence[Any]) -> None:
    """Every step of a task from its ui_messages.json alone."""
    calls = Calls(b, ui_names=True)
    turn: dict[str, Any] | None = None
    command: dict[str, Any] | None = None  # the command whose output entries follow
    deleted: list[int] | None = None
    for k, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            b.skip(f"{b.file} item {k}: entry that is not an object")
            continue
        how, kind = _kind(entry)
        text = text_of(entry.get("text"))
        rng = truncated_range(entry)
        if rng is not None and rng != deleted:
            b.compacted(index=k, trigger="auto", x={"deleted-range": rng})
        deleted = rng if rng is not None else deleted
        if kind == "command_output" and command is not None:
            previous = command.get("result", {}).get("text", "")
            b.set_result(command, result((previous + "\n" + text).strip("\n") if previous else text))
            continue
        command = None
        if kind == "api_req_started":
            turn = _turn(b, calls, text, k)
        elif kind == "text" and how == "say":
            if turn is None:
                b.message("user", text, index=k, origin="user")
            elif text:
                turn["llm"]["text"] = (turn["llm"].get("text", "") + "\n" + text).strip("\n")
        elif kind in ("task", "user_feedback", "user_feedback_diff") and how == "say":
            b.message("user", text, index=k, origin="user")
        elif kind in ("tool", "command", "use_mcp_server") or (how, kind) in _OWN_ENTRY_TOOLS:
            step = _tool_call(b, how, kind, text, k)
            calls.add(step)
            if kind == "command":
                command = step
        elif kind == "mcp_server_response":
            mcp = next((s for s in reversed(calls.waiting) if s["tool"] in MCP_TOOLS), None)
            if mcp is not None:
                settle(b, mcp, mcp["tool"], text)
        elif extra_step(b, entry, k) or kind in _NOT_STEPS:
            continue
        else:
            b.skip(f"{b.file} item {k}: {how} {kind}")
    for step in calls.waiting:
        if "result" not in step and "denied" not in step and "cancelled" not in step and \
                step["tool"] != "attempt_completion":
            step["x-result-missing"] = True


def _turn(b: ImportedRunBuilder, calls: Calls, text: str, k: int) -> dict[str, Any]:
    """An `llm` step from an api_req_started entry; its request's result blocks answer the waiting calls."""
    said = _json(text)
    cached = sum(v for key in ("cacheReads", "cacheWrites")
                 if isinstance(v := said.get(key), int) and not isinstance(v, bool))
    uncached = said.get("tokensIn") if isinstance(said.get("tokensIn"), int) else None
    out = said.get("tokensOut") if isinstance(said.get("tokensOut"), int) else None
    x: dict[str, Any] = {}
    if uncached is not None and cached:
        x["uncached-input-tokens"] = uncached
    if isinstance(said.get("cost"), (int, float)):
        x["cost"] = said["cost"]
    cancel = said.get("cancelReason")
    error = None
    if isinstance(cancel, str):
        x["cancel-reason"] = cancel
        if cancel != "user_cancelled":  # the person stopping a request is not a failed request
            error = text_of(said.get("streamingFailedMessage")) or cancel
    step = b.llm(index=k, input_tokens=uncached + cached if uncached is not None else None,
                 output_tokens=out, error=error, x=x)
    blocks, _ = result_blocks(environment_free(text_of(said.get("request"))))
    for block in blocks:
        calls.answer(block, {"index": k})
    return step
