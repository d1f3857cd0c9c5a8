"""Each coding agent's tool locators: which of its tools runs a shell line, and which file or URL a tool acts on.

A policy's `tools:` rules name the tools of the agents it was written for (`bash`, `read_file` ...); Claude
Code calls them `Bash`, `Read`, `Edit`, Codex `exec_command` with its line in `cmd`. Without these rules every
`Bash` call of a session is one target (`Bash`), so a command that keeps failing is forgotten whenever another
command succeeds, and an edit that keeps failing on one file is not seen as one. `scan` adds the agent's rules
after the policy's own (which win where both name a tool), as a policy file's `tools:` would.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from ..core._classify import ToolRule, parse_rules
from ..runtime._policy import Policy

__all__ = ["AGENT_TOOLS", "with_agent_tools"]


def _files(arg: str, *tools: str) -> list[dict[str, Any]]:
    return [{"tool": t, "target": arg} for t in tools]


# Locators only, no kinds: a kind would change how engines classify a call, and the read tracker's
# consecutive layer reads a read's region from `path`/`offset`/`limit` whatever the tool table says (Claude
# Code's `Read` has `file_path`: every read would look like the same region)
AGENT_TOOLS: Final[Mapping[str, list[dict[str, Any]]]] = {
    # Claude Code's built-in tools
    "claude-code": [
        {"tool": "Bash", "shell": "command"},
        *_files("file_path", "Read", "Edit", "MultiEdit", "Write"),
        *_files("notebook_path", "NotebookEdit"),
        *_files("path", "Grep", "Glob"),
        *_files("url", "WebFetch"),
    ],
    # Codex CLI: exec_command's line is `cmd`; the older `shell` tool passes an argv list, not a line
    "codex": [{"tool": "exec_command", "shell": "cmd"}],
    # Gemini CLI (packages/core/src/tools)
    "gemini-cli": [
        {"tool": "run_shell_command", "shell": "command"},
        *_files("file_path", "read_file", "write_file", "replace"),
        *_files("absolute_path", "read_file"),
        *_files("url", "web_fetch"),
    ],
    # Cline and Roo Code
    "cline": [
        {"tool": "execute_command", "shell": "command"},
        *_files("path", "read_file", "write_to_file", "replace_in_file", "apply_diff", "insert_content",
                "search_files", "list_files", "list_code_definition_names"),
    ],
}

_PARSED: dict[str, tuple[ToolRule, ...]] = {}


def with_agent_tools(policy: Policy, agent: str) -> Policy:
    """`policy` with the agent's tool rules after its own; the policy itself when the agent has none."""
    raw = AGENT_TOOLS.get(agent)
    if not raw:
        return policy
    rules = _PARSED.get(agent)
    if rules is None:
        rules = _PARSED[agent] = parse_rules(raw, source=f"scan: {agent}'s tools")
    return dataclasses.replace(policy, tools=policy.tools + rules)
