"""The Guard inside agent frameworks: one module per framework, imported by name and never by this package.

Each module (`pytest_loopguard.integrations.langchain`, `.openai_agents`, `.pydantic_ai`, `.google_adk`,
`.claude_agent_sdk`) drives a live `Session` from its framework's own hook points and needs that framework's
extra (`pip install 'pytest-loopguard[langchain]'`, ...); importing this package imports none of them.
"""

from __future__ import annotations

__all__: list[str] = []
