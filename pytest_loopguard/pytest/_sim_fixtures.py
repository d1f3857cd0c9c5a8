"""pytest fixtures for the simulators: `fake_llm`, `fake_browser`, `fake_files` and `agent_loop` factories.

Each fixture is a factory bound to one test's `Simulation kit`: the fakes it makes share the test's virtual
clock, and `agent_loop` wires the latest of them together under the test's active policy (the
`@pytest.mark.loopguard(policy=..., **overrides)` marker, else `--loopguard-policy`, else `default`).

    def test_poller(fake_llm, fake_browser, agent_loop):
        fake_browser({"https://x.example": {"ready_after": 3, "elements": [{"index": 1, "name": "Go"}]}})
        fake_llm(behaviour="poller", url="https://x.example", target=1)
        assert agent_loop(max_turns=10).run().result.outcome == "completed"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, final

import pytest

if TYPE_CHECKING:
    from loopguard_simulators import AgentLoop, FakeBrowser, FakeFiles, FakeLLM

__all__ = ["SimulationKit", "agent_loop", "fake_browser", "fake_files", "fake_llm", "loopguard_simulation"]


@final
class SimulationKit:
    """One test's simulated environment: a shared clock and the fakes made so far (the latest of each)."""

    def __init__(self, policy: Any = None) -> None:
        from ..runtime._guard import Clock  # the replay core loads when a test asks for a fake, not with the plugin

        self.clock = Clock()
        self.policy = policy
        self.llm: FakeLLM | None = None
        self.browser: FakeBrowser | None = None
        self.files: FakeFiles | None = None

    def make_llm(self, script: Sequence[Any] | None = None, *, behaviour: Any = None,
                 window_tokens: int | None = None, provider: str = "openai", **params: Any) -> FakeLLM:
        """A FakeLLM from a script, a behaviour object, or a behaviour name with its parameters."""
        from loopguard_simulators.llm import BEHAVIOURS, FakeLLM

        if isinstance(behaviour, str):
            cls = BEHAVIOURS.get(behaviour)
            if cls is None:
                raise ValueError(f"unknown behaviour {behaviour!r}; expected one of {', '.join(BEHAVIOURS)}")
            behaviour = cls.from_params(params, "behaviour")
        elif params:
            raise TypeError(f"behaviour parameters {sorted(params)} need a behaviour name")
        self.llm = FakeLLM(script, behaviour=behaviour, window_tokens=window_tokens, provider=provider)
        return self.llm

    def make_browser(self, pages: Mapping[str, Any] | None = None, *, start: str | None = None,
                     seed: int = 0) -> FakeBrowser:
        from loopguard_simulators.browser import FakeBrowser

        self.browser = FakeBrowser(pages or {}, start=start, seed=seed)
        return self.browser

    def make_files(self, files: Mapping[str, str] | None = None) -> FakeFiles:
        from loopguard_simulators.files import FakeFiles

        self.files = FakeFiles(files, clock=self.clock)
        return self.files

    def make_loop(self, model: Any = None, *, tools: Any = None, policy: Any = None, **options: Any) -> AgentLoop:
        """An AgentLoop over the given model/tools, else the latest fakes of this test."""
        from loopguard_simulators.loop import AgentLoop
        from loopguard_simulators.toolbox import Toolbox

        model = model if model is not None else self.llm
        if model is None:
            raise ValueError("no model: call fake_llm(...) first or pass one")
        if tools is None:
            tools = Toolbox(browser=self.browser, files=self.files)
        spec = policy if policy is not None else (self.policy if self.policy is not None else "default")
        return AgentLoop(model, tools, spec, clock=self.clock, **options)


def _active_policy(request: pytest.FixtureRequest) -> Any:
    marker = request.node.get_closest_marker("loopguard")
    option = request.config.getoption("loopguard_policy", None)
    if marker is None:
        return option
    overrides = dict(marker.kwargs)
    policy = overrides.pop("policy", marker.args[0] if marker.args else None)
    if not overrides:
        return policy if policy is not None else option
    preset = policy if policy is not None else (option or "default")
    return {"preset": preset, **overrides} if isinstance(preset, str) else preset.with_overrides(overrides)


@pytest.fixture
def loopguard_simulation(request: pytest.FixtureRequest) -> SimulationKit:
    """The test's simulation kit (shared by the factory fixtures below)."""
    return SimulationKit(_active_policy(request))


@pytest.fixture
def fake_llm(loopguard_simulation: SimulationKit) -> Any:
    """Factory: `fake_llm(script=[...])`, `fake_llm(behaviour="poller", target=2, url=...)`."""
    return loopguard_simulation.make_llm


@pytest.fixture
def fake_browser(loopguard_simulation: SimulationKit) -> Any:
    """Factory: `fake_browser({url: {title, ready_after, elements}}, start=url, seed=0)`."""
    return loopguard_simulation.make_browser


@pytest.fixture
def fake_files(loopguard_simulation: SimulationKit) -> Any:
    """Factory: `fake_files({path: text})`, on the test's virtual clock."""
    return loopguard_simulation.make_files


@pytest.fixture
def agent_loop(loopguard_simulation: SimulationKit) -> Any:
    """Factory: `agent_loop(model=None, tools=None, policy=None, max_turns=50, ...)` -> AgentLoop."""
    return loopguard_simulation.make_loop
