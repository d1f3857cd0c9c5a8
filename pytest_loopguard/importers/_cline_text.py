"""What Cline (and Roo Code) write as text: tool-result blocks, XML tool tags, and the exact markers of failure.

Cline answers a tool call with user text, not a structured result: a header `[read_file for 'a.py'] Result:`
then the content. The content alone says how the call went; these are the markers recognised (each at the
start of the content, never anywhere in it — a file that mentions an error is not a failed read):

| marker (start of the result) | the call |
|---|---|
| `The tool execution failed with the following error:` | failed (Cline's `formatResponse.toolError`) |
| `[ERROR]` | failed |
| `Error:` + newline, on an MCP call (`use_mcp_tool`, `access_mcp_resource`) | failed (an MCP result with `isError`) |
| `The user denied this operation` | denied by the user (the person rejected it) |
| `Access to … is blocked by the .clineignore file settings` | denied by a rule (`.clineignore`) |

and two texts the harness writes in place of a call's answer (no header):

- `Tool [NAME] was not executed because a tool has already been used in this message.`: denied by a
  rule (one tool per message); the harness refused it and the model re-issues it later.
- `Skipping tool … due to user rejecting a previous tool.`: cancelled (an earlier call of its message
  was rejected).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "ALREADY_USED", "CLINEIGNORE", "ERROR_PREFIX", "MCP_ERROR", "MCP_TOOLS", "NO_TOOLS_USED", "SKIPPED",
    "TOOL_FAILED", "TOOL_NAMES", "USER_DENIED", "Outcome", "ResultBlock", "outcome", "result_blocks", "xml_calls",
]

TOOL_FAILED: Final = "The tool execution failed with the following error:"
ERROR_PREFIX: Final = "[ERROR]"
MCP_ERROR: Final = "Error:\n"
USER_DENIED: Final = "The user denied this operation"
CLINEIGNORE: Final = re.compile(r"Access to .{0,4096}? is blocked by the \.clineignore file settings", re.S)
ALREADY_USED: Final = re.compile(
    r"Tool \[(?P<tool>[^\]\n]{1,200})\] was not executed because a tool has already been used in this message")
SKIPPED: Final = re.compile(r"Skipping tool (?P<what>[^\n]{0,4096}?) due to user rejecting a previous tool")
# the harness's reply to a model turn that called no tool: not a call's result, a message of the harness
NO_TOOLS_USED: Final = "[ERROR] You did not use a tool in your previous response"
MCP_TOOLS: Final = frozenset({"use_mcp_tool", "access_mcp_resource"})

# Cline's and Roo Code's tool names: the XML tags a model writes in text before native tool calling
TOOL_NAMES: Final = frozenset({
    "execute_command", "read_file", "write_to_file", "replace_in_file", "search_files", "list_files",
    "list_code_definition_names", "browser_action", "use_mcp_tool", "access_mcp_resource",
    "ask_followup_question", "plan_mode_respond", "attempt_completion", "new_task", "load_mcp_documentation",
    "web_fetch", "web_search", "condense", "summarize_task", "report_bug", "new_rule", "apply_diff",
    "insert_content", "search_and_replace", "switch_mode", "codebase_search", "update_todo_list",
    "fetch_instructions", "generate_image", "run_slash_command", "apply_patch", "use_skill",
})
# where one call's answer starts in a user text: a result header, or a harness refusal in place of one
_SEGMENT: Final = re.compile(
    r"^(?:\[(?P<tool>[A-Za-z_][\w-]{0,100})(?: for [^\n]*?)?\] Result:[ \t]*\n?"
    r"|(?=Tool \[(?P<refused>[^\]\n]{1,200})\] was not executed because)"
    r"|(?=Skipping tool \[(?P<skipped>[A-Za-z_][\w-]{0,100}))"
    r")", re.M)
_XML_CALL: Final = re.compile(r"<(?P<tool>[a-z_]{3,40})>(?P<body>.*?)</(?P=tool)>", re.S)
_XML_PARAM: Final = re.compile(r"<(?P<name>[a-z_]{1,40})>(?P<value>.*?)</(?P=name)>", re.S)


@dataclass(frozen=True, slots=True)
class ResultBlock:
    """One call's answer in a user text: the tool it names and its content (after the header)."""

    tool: str
    text: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a call went, read from its answer: `how` is ok, failed, denied or cancelled."""

    how: str
    text: str
    by: str | None = None


def result_blocks(text: str) -> tuple[list[ResultBlock], str]:
    """The answers in a user text, split at each `[tool …] Result:` header and each harness refusal at a
    line start, and the text before the first of them."""
    found = list(_SEGMENT.finditer(text))
    if not found:
        return [], text
    blocks = []
    for n, m in enumerate(found):
        end = found[n + 1].start() if n + 1 < len(found) else len(text)
        tool = m.group("tool") or m.group("refused") or m.group("skipped") or ""
        blocks.append(ResultBlock(tool, text[m.end():end]))
    return blocks, text[: found[0].start()]


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def outcome(tool: str, content: str) -> Outcome:
    """The outcome an answer's content states by its markers (see the module's tables)."""
    body = content.lstrip()
    if ALREADY_USED.match(body):
        return Outcome("denied", _first_line(body), by="rule")
    if SKIPPED.match(body):
        return Outcome("cancelled", _first_line(body))
    if body.startswith(TOOL_FAILED) or body.startswith(ERROR_PREFIX):
        return Outcome("failed", content.strip())
    if tool in MCP_TOOLS and body.startswith(MCP_ERROR):
        return Outcome("failed", content.strip())
    if body.startswith(USER_DENIED):
        return Outcome("denied", _first_line(body), by="user")
    if body.startswith("Access to ") and CLINEIGNORE.match(body):
        return Outcome("denied", _first_line(body), by="rule")
    return Outcome("ok", content)


def xml_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a model wrote as XML tags in its text (Cline before native tool calling): each
    `<tool_name><param>value</param>…</tool_name>` whose tag is a known tool name."""
    calls = []
    for m in _XML_CALL.finditer(text):
        if m.group("tool") not in TOOL_NAMES:
            continue
        args: dict[str, Any] = {}
        for p in _XML_PARAM.finditer(m.group("body")):
            value = p.group("value")
            args[p.group("name")] = value[1:] if value.startswith("\n") else value
            if args[p.group("name")].endswith("\n"):
                args[p.group("name")] = args[p.group("name")][:-1]
        calls.append((m.group("tool"), args))
    return calls
