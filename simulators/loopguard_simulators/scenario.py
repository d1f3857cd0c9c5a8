"""Scenarios: a trace with `mode: simulate` describes an environment and an agent; `simulate` runs it.

    result = simulate(load("traces/scenarios/poll-spacebot.yaml")).result   # a ReplayResult
    expect.check(result)                                                     # the scenario's expectations

The environment (`env.files`, `env.browser`), the agent (`agent.behaviour` with its parameters, or
`agent.script`), `seed`, `max_turns`, `policy`, `context`, `task`, the run `expect` and expectations on
recorded steps (`x-expect-steps`) come from the trace; malformed ones raise ScenarioError naming the file
and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pytest_loopguard.core._limits import MAX_GENERATED_CHARS, MAX_SCENARIO_COUNT, MAX_SETTING, MAX_TURNS
from pytest_loopguard.core._model import StepExpect, ToolCall, Trace
from pytest_loopguard.errors import ScenarioError, TraceError, brief
from pytest_loopguard.io._format import parse_step_expect
from pytest_loopguard.runtime._guard import Clock
from pytest_loopguard.runtime._replay import policy_for

from .browser import FakeBrowser, Page, parse_pages
from .files import FakeFiles
from .llm import BEHAVIOURS, PROVIDERS, FakeLLM, ForgetfulReader, PingPong, Poller, Retrier, parse_faults, parse_script
from .loop import AgentLoop, Simulation
from .protocols import is_count
from .toolbox import Toolbox

__all__ = ["DEFAULT_MAX_TURNS", "build", "simulate"]

DEFAULT_MAX_TURNS: Final = 50
ENV_KEYS: Final = ("files", "browser")
BROWSER_KEYS: Final = ("pages", "start")
AGENT_KEYS: Final = ("behaviour", "script", "window_tokens", "provider", "errors", "prompt", "final_answer",
                     "llm_latency_ms", "tool_latency_ms")
DEFAULT_PROMPT: Final = "Complete the task using the tools available, then give your final answer."


def simulate(trace: Trace, policy: Any = None) -> Simulation:
    """Run the scenario `trace` (under `policy`, default: the scenario's own) and record it."""
    try:
        loop = build(trace, policy)
    except ScenarioError as exc:
        raise exc.located(file=trace.path) from None
    return loop.run()


def build(trace: Trace, policy: Any = None) -> AgentLoop:
    """The agent loop a scenario describes (nothing runs yet)."""
    if trace.mode != "simulate":
        raise ScenarioError("not a scenario: expected `mode: simulate`", field="mode")
    resolved, name = policy_for(trace, policy)
    spec = policy if policy is not None else trace.policy
    clock = Clock()
    files, pages, start = _env(trace.env)
    browser = FakeBrowser(pages, start=start, seed=trace.seed or 0)
    fake_files = FakeFiles(files, clock=clock)
    agent = dict(trace.agent)
    model = _model(agent, trace, pages, files)
    prompt = agent.get("prompt", DEFAULT_PROMPT)
    if not isinstance(prompt, str):
        raise ScenarioError("expected the user's prompt as a string", field="agent.prompt")
    llm_latency = _count(agent.get("llm_latency_ms", 1000), "agent.llm_latency_ms", 0, MAX_SETTING)
    tool_latency = _count(agent.get("tool_latency_ms", 200), "agent.tool_latency_ms", 0, MAX_SETTING)
    return AgentLoop(
        model,
        Toolbox(browser=browser, files=fake_files),
        resolved,
        clock=clock,
        max_turns=_count(trace.max_turns or DEFAULT_MAX_TURNS, "max_turns", 1, MAX_TURNS),
        prompt=prompt,
        task=trace.task,
        context=trace.context,
        name=trace.name,
        description=trace.description,
        expect=trace.expect,
        strict=trace.strict,
        seed=trace.seed,
        origin=trace.path,
        recorded_policy=spec if isinstance(spec, (str, Mapping)) else name,
        policy_name=name,
        path=trace.path,
        step_expects=_step_expects(trace.extensions.get("x-expect-steps")),
        llm_latency_ms=llm_latency,
        tool_latency_ms=tool_latency,
    )


def _step_expects(raw: Any) -> dict[int, StepExpect]:
    """`x-expect-steps: {INDEX: ACTION | {action, engine, reason, message, data}}`: expectations on the
    recorded steps (a scenario has no steps of its own to carry them)."""
    if raw is None:
        return {}
    field = "x-expect-steps"
    if not isinstance(raw, Mapping):
        raise ScenarioError("expected a mapping {step index: expectation}", field=field)
    out: dict[int, StepExpect] = {}
    for index, value in raw.items():
        if not is_count(index):
            raise ScenarioError(f"expected a step index from 0 to {MAX_SCENARIO_COUNT}, got {brief(index)}",
                                field=field)
        try:
            expect = parse_step_expect(value)
        except TraceError as exc:
            raise ScenarioError(exc.problem, field=f"{field}.{index}") from None
        out[index] = expect
    return out


def _count(value: Any, field: str, minimum: int = 1, maximum: int = MAX_SCENARIO_COUNT) -> int:
    if not is_count(value, minimum, maximum):
        raise ScenarioError(f"expected an integer ≥ {minimum} and ≤ {maximum}, got {brief(value)}", field=field)
    return int(value)


def _env(env: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Page], str | None]:
    unknown = set(env) - set(ENV_KEYS)
    if unknown:
        raise ScenarioError(f"unknown key(s) {sorted(unknown)}; expected {', '.join(ENV_KEYS)}", field="env")
    files_raw = env.get("files") or {}
    if not isinstance(files_raw, Mapping):
        raise ScenarioError("expected a mapping {path: text | {lines: N, width: W}}", field="env.files")
    files = {}
    for path, spec in files_raw.items():
        if not isinstance(path, str) or not path:
            raise ScenarioError("a file is keyed by its path", field="env.files")
        files[path] = _file_text(path, spec, f"env.files.{path}")
    browser = env.get("browser") or {}
    if not isinstance(browser, Mapping):
        raise ScenarioError("expected a mapping {pages, start}", field="env.browser")
    unknown = set(browser) - set(BROWSER_KEYS)
    if unknown:
        raise ScenarioError(f"unknown key(s) {sorted(unknown)}; expected {', '.join(BROWSER_KEYS)}",
                            field="env.browser")
    pages = parse_pages(browser.get("pages") or {})
    start = browser.get("start")
    if start is not None and (not isinstance(start, str) or start not in pages):
        raise ScenarioError(f"start page {brief(start)} is not a defined page", field="env.browser.start")
    return files, pages, start


def _file_text(path: str, spec: Any, field: str) -> str:
    """A file's text as written, or `{lines: N, width: W}`: N generated lines of W characters."""
    if isinstance(spec, str):
        return spec
    if not isinstance(spec, Mapping) or set(spec) - {"lines", "width"} or "lines" not in spec:
        raise ScenarioError("expected the file's text or {lines: N, width: W}", field=field)
    lines = _count(spec["lines"], f"{field}.lines")
    width = _count(spec.get("width", 40), f"{field}.width")
    if lines * width > MAX_GENERATED_CHARS:
        raise ScenarioError(f"{lines} lines of {width} characters is over {MAX_GENERATED_CHARS} characters",
                            field=field)
    return "\n".join(f"# {path} line {n}: ".ljust(width, "x")[:width] for n in range(1, lines + 1)) + "\n"


def _model(agent: Mapping[str, Any], trace: Trace, pages: Mapping[str, Page], files: Mapping[str, str]) -> FakeLLM:
    kinds = [k for k in ("behaviour", "script") if k in agent]
    if len(kinds) != 1:
        raise ScenarioError("an agent needs exactly one of behaviour, script", field="agent")
    window = agent.get("window_tokens", trace.context.get("window_tokens"))
    if window is not None:
        window = _count(window, "agent.window_tokens")
    provider = agent.get("provider", "openai")
    if provider not in PROVIDERS:
        raise ScenarioError(f"unknown provider {brief(provider)}; expected one of {', '.join(PROVIDERS)}",
                            field="agent.provider")
    faults = parse_faults(agent["errors"]) if agent.get("errors") is not None else ()
    if "script" in agent:
        extra = set(agent) - set(AGENT_KEYS)
        if extra:
            raise ScenarioError(f"unknown key(s) {sorted(extra)} for a scripted agent; expected "
                                f"{', '.join(AGENT_KEYS)}", field="agent")
        script = parse_script(agent["script"])
        for i, turn in enumerate(script):
            for call in turn.calls:
                _check_refs(call, f"agent.script (turn {i + 1})", pages, files)
        return FakeLLM(script, window_tokens=window, provider=provider, faults=faults,
                       final_answer=str(agent.get("final_answer", "Script finished.")))
    name = agent["behaviour"]
    cls = BEHAVIOURS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ScenarioError(f"unknown behaviour {brief(name)}; expected one of {', '.join(BEHAVIOURS)}",
                            field="agent.behaviour")
    params = {k: v for k, v in agent.items() if k not in AGENT_KEYS}
    behaviour = cls.from_params(params, "agent")
    if isinstance(behaviour, ForgetfulReader):
        for i, path in enumerate(behaviour.files):
            if path not in files:
                raise ScenarioError(f"file {brief(path)} is not defined in env.files", field=f"agent.files[{i}]")
    elif isinstance(behaviour, Poller):
        if behaviour.url is not None and behaviour.url not in pages:
            raise ScenarioError(f"page {brief(behaviour.url)} is not defined in env.browser.pages", field="agent.url")
    elif isinstance(behaviour, Retrier):
        _check_refs(behaviour.call, "agent.call", pages, files)
    elif isinstance(behaviour, PingPong):
        _check_refs(behaviour.a, "agent.a", pages, files)
        _check_refs(behaviour.b, "agent.b", pages, files)
    return FakeLLM(behaviour=behaviour, window_tokens=window, provider=provider, faults=faults)


def _check_refs(call: ToolCall, field: str, pages: Mapping[str, Page], files: Mapping[str, str]) -> None:
    """A call the scenario writes may only name pages and files the environment defines."""
    if call.tool in ("browser_navigate", "browser_tab_new"):
        url = call.args.get("url")
        if url is not None and (not isinstance(url, str) or url not in pages):
            raise ScenarioError(f"page {brief(url)} is not defined in env.browser.pages", field=field)
    elif call.tool in ("read_file", "patch"):
        path = call.args.get("path")
        if not isinstance(path, str) or path not in files:
            raise ScenarioError(f"file {brief(path)} is not defined in env.files", field=field)
