"""Simulators: a scriptable fake LLM, fake browser and fake file system, and the agent loop that runs them."""

from __future__ import annotations

from .browser import Element, FakeBrowser, Page
from .files import FakeFiles
from .llm import FakeLLM, ForgetfulReader, PingPong, Poller, Retrier
from .loop import AgentLoop, Simulation
from .protocols import Model, ModelReply, ProviderError, ToolExecutor
from .scenario import simulate
from .toolbox import TodoStore, Toolbox

__all__ = [
    "AgentLoop",
    "Element",
    "FakeBrowser",
    "FakeFiles",
    "FakeLLM",
    "ForgetfulReader",
    "Model",
    "ModelReply",
    "Page",
    "PingPong",
    "Poller",
    "ProviderError",
    "Retrier",
    "Simulation",
    "TodoStore",
    "ToolExecutor",
    "Toolbox",
    "simulate",
]
