"""Hypothesis strategies that generate the library's own values: calls, runs, interleavings, traces, policies.

Every strategy is built from lists and small pools, so a failing example shrinks to a short trace of few
distinct calls; `save_trace` writes it to the corpus, where it runs as a test from then on.

    from hypothesis import given
    from pytest_loopguard import replay, strategies as lgst

    @given(lgst.interleaved_traces())
    def test_interleaved_never_consecutive(trace):
        assert not any(v.reason.startswith("loop_guard.consecutive_")
                       for s in replay(trace).steps for v in s.verdicts)
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy

from ..core._model import (
    OUTCOMES,
    PHASES,
    CompactedStep,
    Compaction,
    Done,
    DoneStep,
    LLMCall,
    LLMStep,
    Message,
    MessageStep,
    NotRun,
    PhaseStep,
    Rejected,
    RejectedStep,
    RunExpect,
    Step,
    StepExpect,
    StepSource,
    Task,
    ToolCall,
    ToolResult,
    ToolStep,
    Trace,
)
from ..io._format import STEP_ACTIONS, dump
from ..runtime._policy import Policy, preset_names
from ._policy_strategies import policies, policy_overrides

__all__ = [
    "ACTION_TOOLS",
    "FAILURE_ERRORS",
    "OBSERVATION_TOOLS",
    "OVERFLOW_ERRORS",
    "REJECT_REASONS",
    "TRANSIENT_ERRORS",
    "argument_values",
    "arguments",
    "build_trace",
    "failure_streaks",
    "identical_runs",
    "interleaved_traces",
    "overflow_sessions",
    "policies",
    "policy_overrides",
    "save_trace",
    "steps",
    "tool_calls",
    "tool_results",
    "traces",
]

# Tools no preset reads, searches or treats as a poll command: only the loop rules apply to them.
ACTION_TOOLS: Final = ("browser_click", "browser_type", "http_get", "send_email", "run_tests")
# Observation tools in every preset's table (their thresholds are multiplied, dedup keeps the latest).
OBSERVATION_TOOLS: Final = ("browser_snapshot", "browser_tab_list")

# Context-window errors as providers word them; each contains a marker of every preset's overflow list.
OVERFLOW_ERRORS: Final = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. "
    "Please reduce the length of the messages.",
    "prompt is too long: 215000 tokens > 200000 maximum",
    "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
)
# Transient provider errors (5xx, rate limit) as providers word them; each is transient in every preset
# (claw-code's list has no 529 or "overloaded": Anthropic's overload error fails at once there).
TRANSIENT_ERRORS: Final = (
    "Error code: 503 - Service Unavailable",
    "Error code: 429 - Rate limit reached for requests",
    "The server had an error while processing your request. Sorry about that! (500)",
)
# Tool failures as browsers, shells and HTTP clients word them.
FAILURE_ERRORS: Final = (
    "Element not found",
    "TimeoutError: page.click: Timeout 30000ms exceeded.",
    "HTTP 500 Internal Server Error",
    "No such file or directory",
    "Permission denied",
)

# Why harnesses refuse a model turn (SWE-agent, mini-swe-agent, browser-use wordings, shortened).
REJECT_REASONS: Final = ("no tool call", "several tool calls", "format error", "unparsable output")
_AGENTS: Final = ("Orchestrator", "WebSurfer", "Coder")

_ARG_KEYS: Final = ("index", "text", "url", "query", "selector", "direction")
_WORDS: Final = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 -_./", max_size=12)
# Any code point but a surrogate, drawn without hypothesis's character table: building that table takes seconds
# on a machine that has not cached it yet, which fails the too_slow health check of a user's first run.
_CHARS: Final = st.one_of(st.integers(min_value=0, max_value=0xD7FF),
                          st.integers(min_value=0xE000, max_value=0x10FFFF)).map(chr)


def _text(max_size: int) -> SearchStrategy[str]:
    return st.text(alphabet=_CHARS, max_size=max_size)


# ---- values --------------------------------------------------------------------------------------------
def argument_values(*, unicode: bool = True) -> SearchStrategy[Any]:
    """JSON/YAML argument values: null, booleans, integers, finite floats, text, and small lists/mappings."""
    text = _text(12) if unicode else _WORDS
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**53), max_value=2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        text,
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(_ARG_KEYS), inner, max_size=3),
        ),
        max_leaves=6,
    )


def arguments(*, unicode: bool = False, max_size: int = 3) -> SearchStrategy[dict[str, Any]]:
    """Argument mappings of a call; the default keeps to small integers and short ASCII text."""
    values = argument_values() if unicode else st.one_of(st.integers(min_value=0, max_value=50), _WORDS)
    return st.dictionaries(st.sampled_from(_ARG_KEYS), values, max_size=max_size)


def tool_calls(
    tools: Sequence[str] | SearchStrategy[str] | None = None,
    args: Mapping[str, Any] | SearchStrategy[Mapping[str, Any]] | None = None,
) -> SearchStrategy[ToolCall]:
    """A single ToolCall. `tools`: names to pick from or a strategy of names (default: action and
    observation tools); `args`: fixed arguments or a strategy of argument mappings (default: `arguments()`)."""
    if tools is None:
        names: SearchStrategy[str] = st.sampled_from((*ACTION_TOOLS, *OBSERVATION_TOOLS))
    elif isinstance(tools, SearchStrategy):
        names = tools
    else:
        names = st.sampled_from(tuple(tools))
    if args is None:
        arg_maps: SearchStrategy[Mapping[str, Any]] = arguments()
    elif isinstance(args, SearchStrategy):
        arg_maps = args
    else:
        arg_maps = st.just(dict(args))
    return st.builds(ToolCall.of, names, arg_maps)


def tool_results(*, failures: bool = True, text: bool = True) -> SearchStrategy[ToolResult | None]:
    """A recorded result: none (a plain success), ok with optional text/tokens, or a failure."""
    oks = st.builds(
        ToolResult,
        ok=st.just(True),
        text=st.none() | (_text(20) if text else st.none()),
        tokens=st.none() | st.integers(min_value=0, max_value=5000),
    )
    options: list[SearchStrategy[ToolResult | None]] = [st.none(), oks]
    if failures:
        options.append(st.builds(ToolResult.failure, st.sampled_from(FAILURE_ERRORS)))
    return st.one_of(*options)


# ---- building traces -------------------------------------------------------------------------------------
StepLike = ToolCall | tuple[ToolCall, ToolResult | None] | Step | LLMCall | Message | Done | Rejected | str


def _to_step(item: StepLike, index: int) -> Step:
    if isinstance(item, ToolCall):
        return ToolStep(index, item)
    if isinstance(item, tuple):
        call, result = item
        return ToolStep(index, call, result)
    if isinstance(item, Step):
        return dataclasses.replace(item, index=index)
    if isinstance(item, LLMCall):
        return LLMStep(index, item)
    if isinstance(item, Message):
        return MessageStep(index, item)
    if isinstance(item, Done):
        return DoneStep(index, item)
    if isinstance(item, Rejected):
        return RejectedStep(index, item)
    if isinstance(item, str) and item in PHASES:
        return PhaseStep(index, item)
    raise TypeError(f"cannot make a step of {item!r}")


def build_trace(
    calls: Iterable[StepLike],
    policy: str | Mapping[str, Any] | Policy | None = None,
    name: str = "generated",
    **header: Any,
) -> Trace:
    """A Trace from calls and steps, numbered in order.

    Items may be a ToolCall, a `(call, result)` pair, a Step, an LLMCall, a Message, a Done, or a phase
    name. A trace names its policy: a Policy is kept as its name when that is a preset (for drawn
    thresholds pass the mapping `policy_overrides()` gives); `header` sets other Trace fields
    (`context`, `task`, `description`, ...).
    """
    steps = tuple(_to_step(item, i) for i, item in enumerate(calls))
    spec: str | Mapping[str, Any] | None
    if isinstance(policy, Policy):
        if policy.name not in preset_names():
            raise ValueError(
                f"policy {policy.name!r} is not a preset: a trace needs a preset name or a policy mapping "
                "(policy_overrides() draws one)"
            )
        spec = policy.name
    else:
        spec = policy
    header.setdefault("description", "Generated by pytest_loopguard.pytest._strategies.")
    header.setdefault("source", {"kind": "synthetic"})
    return Trace(name=name, steps=steps, policy=spec, **header)


def save_trace(trace: Trace, path: str | Path, *, name: str | None = None, description: str | None = None) -> Path:
    """Write a (shrunk) trace to the corpus in the format the suffix names; returns the path.

    Give it a corpus `name` and a `description` of what it proves, then add its `expect`s by hand or with
    `pytest --loopguard-update`.
    """
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = name
    if description is not None:
        changes["description"] = description
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    dump(dataclasses.replace(trace, **changes) if changes else trace, p)
    return p


# ---- runs of calls -----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _any_call() -> SearchStrategy[ToolCall]:
    return tool_calls()


@st.composite
def identical_runs(
    draw: DrawFn,
    call: ToolCall | SearchStrategy[ToolCall] | None = None,
    *,
    min_size: int = 1,
    max_size: int = 20,
    policy: str | Mapping[str, Any] | Policy | None = None,
    name: str = "identical-run",
) -> Trace:
    """A run of n identical calls (n drawn). Results carry no text, so outcome rules stay quiet."""
    the_call = draw(_any_call()) if call is None else call if isinstance(call, ToolCall) else draw(call)
    n = draw(st.integers(min_value=min_size, max_value=max_size))
    return build_trace([the_call] * n, policy=policy, name=name)


@functools.lru_cache(maxsize=64)
def _distinct_calls(
    calls: tuple[str, ...] | SearchStrategy[ToolCall] | None, min_size: int, max_size: int
) -> SearchStrategy[list[ToolCall]]:
    # cached: building a strategy inside every draw costs more than the draw itself
    source = calls if isinstance(calls, SearchStrategy) else tool_calls(calls)
    return st.lists(source, min_size=min_size, max_size=max_size, unique_by=lambda c: c.fingerprint)


@st.composite
def interleaved_traces(
    draw: DrawFn,
    policy: str | Mapping[str, Any] | Policy | None = None,
    *,
    tools: Sequence[str] | None = None,
    calls: SearchStrategy[ToolCall] | None = None,
    min_size: int = 2,
    max_size: int = 30,
    distinct: int = 4,
    name: str = "interleaved",
) -> Trace:
    """Calls from a pool of distinct calls where identical calls are always separated by a different call.

    Each next call is the pool entry a drawn non-zero offset away from the previous one, so no two
    neighbours are equal (canonically, hence also as written); it shrinks towards A, B, A, B... The
    length is drawn first, as one integer: that shrinks straight to the shortest failing length.
    The pool is drawn from `calls` when given (a strategy of calls), else from `tool_calls(tools)`.
    """
    n = draw(st.integers(min_value=min_size, max_value=max_size))
    pool = draw(_distinct_calls(calls if calls is not None else tuple(tools) if tools else None, 2, max(2, distinct)))
    k = len(pool)
    offsets = st.integers(min_value=1, max_value=k - 1)
    position = draw(st.integers(min_value=0, max_value=k - 1))
    sequence = [pool[position]]
    for _ in range(n - 1):
        position = (position + draw(offsets)) % k
        sequence.append(pool[position])
    return build_trace(sequence, policy=policy, name=name)


@st.composite
def failure_streaks(
    draw: DrawFn,
    policy: str | Mapping[str, Any] | Policy | None = None,
    *,
    tools: Sequence[str] = ACTION_TOOLS,
    max_streak: int = 6,
    max_streaks: int = 3,
    name: str = "failure-streaks",
) -> Trace:
    """Streaks of failed single-call turns, each streak ended by one successful call.

    Every call has its own `index` argument, so no loop rule (consecutive, ping-pong, outcome) can
    fire: only the failure rules apply. `trace.extensions["x-streaks"]` holds the streak lengths.
    """
    lengths = draw(st.lists(st.integers(min_value=1, max_value=max_streak), min_size=1, max_size=max_streaks))
    items: list[StepLike] = []
    for length in lengths:
        for _ in range(length):
            tool = draw(st.sampled_from(tuple(tools)))
            error = draw(st.sampled_from(FAILURE_ERRORS))
            items.append((ToolCall.of(tool, {"index": len(items)}), ToolResult.failure(error)))
        items.append((ToolCall.of(tools[0], {"index": len(items)}), ToolResult(ok=True)))
    return build_trace(items, policy=policy, name=name, extensions={"x-streaks": list(lengths)})


# ---- context sessions ---------------------------------------------------------------------------------
@st.composite
def overflow_sessions(
    draw: DrawFn,
    policy: str | Mapping[str, Any] | Policy | None = None,
    *,
    window_tokens: int = 8000,
    max_turns: int = 8,
    max_overflows: int = 5,
    min_result_tokens: int = 50,
    max_result_tokens: int | None = None,
    name: str = "overflow-session",
) -> Trace:
    """An agent session for the context engine: LLM turns, tool calls with large results (snapshots that
    dedup replaces, file reads), and runs of context-window errors worded as providers word them, some
    longer than any retry bound; sometimes a transient error too. The window is `context.window_tokens`;
    each tool result is `min_result_tokens`..`max_result_tokens` tokens (default: half the window)."""
    top = max(min_result_tokens, max_result_tokens if max_result_tokens is not None else window_tokens // 2)
    items: list[StepLike] = [Message("user", draw(st.sampled_from(("Book the cheapest flight", "Fix the tests"))))]
    turns = draw(st.integers(min_value=1, max_value=max_turns))
    for turn in range(turns):
        overflows = draw(st.integers(min_value=0, max_value=max_overflows))
        items.extend(LLMCall(error=draw(st.sampled_from(OVERFLOW_ERRORS))) for _ in range(overflows))
        if draw(st.booleans()) and draw(st.booleans()):
            items.append(LLMCall(error=draw(st.sampled_from(TRANSIENT_ERRORS))))
        items.append(LLMCall(output_tokens=draw(st.integers(min_value=10, max_value=400))))
        for position in range(draw(st.integers(min_value=0, max_value=3))):
            tool = draw(st.sampled_from(("browser_snapshot", "browser_tab_list", "read_file", "browser_click")))
            args: dict[str, Any] = {"path": f"src/mod{turn}.py"} if tool == "read_file" else {}
            if tool == "browser_click":
                args = {"index": turn * 10 + position}
            tokens = draw(st.integers(min_value=min_result_tokens, max_value=top))
            items.append((ToolCall.of(tool, args), ToolResult(ok=True, text=f"{tool} result {turn}.{position}",
                                                                tokens=tokens)))
    return build_trace(items, policy=policy, name=name, context={"window_tokens": window_tokens})


# ---- general traces ----------------------------------------------------------------------------------
def _step_expects() -> SearchStrategy[StepExpect | None]:
    actions = st.sampled_from(STEP_ACTIONS)
    long = st.builds(
        StepExpect,
        action=actions,
        engine=st.none() | st.sampled_from(("loop_guard", "read_tracker", "context")),
        reason=st.none() | st.sampled_from(("loop_guard.consecutive_block", "context.overflow")),
        message=st.none() | _text(10),
        data=st.none() | st.dictionaries(st.sampled_from(("count", "threshold")), st.integers(0, 9), max_size=2),
        short=st.just(False),
    )
    return st.one_of(st.none(), st.builds(StepExpect, action=actions), long)


def _exit_code_results() -> SearchStrategy[ToolResult]:
    """Results carrying an exit code as the loader reads them: a non-zero code alone is a failure, and an
    explicit `ok: true` or an error keeps its say."""
    codes = st.integers(min_value=-9, max_value=255)
    return st.one_of(
        st.builds(lambda c: ToolResult(ok=c == 0, exit_code=c), codes),
        st.builds(lambda c, t: ToolResult(ok=True, text=t, exit_code=c), codes, st.none() | _WORDS),
        st.builds(lambda c, e: ToolResult(ok=False, error=e, exit_code=c), codes, st.sampled_from(FAILURE_ERRORS)),
    )


def _messages(text: SearchStrategy[str], additions: bool) -> SearchStrategy[Message]:
    plain = st.builds(Message, st.sampled_from(("user", "system", "assistant")), text)
    if not additions:
        return plain
    return st.one_of(
        plain,
        st.builds(Message, st.sampled_from(("user", "system")), text, st.just("harness")),
        st.builds(Message, st.sampled_from(("user", "assistant")), text, st.just("agent"), st.sampled_from(_AGENTS)),
        st.builds(Message, st.just("user"), text, st.just("user")),
    )


def _with_step_additions(step: SearchStrategy[Step]) -> SearchStrategy[Step]:
    """`agent` and `source` on any step, as a multi-agent import writes them."""
    sources = st.none() | st.builds(
        StepSource,
        st.sampled_from(("run.jsonl", "logs/trajectory.json")),
        st.none() | st.integers(0, 500),
        st.none() | st.integers(0, 500) | st.sampled_from(("evt-1", "span-7f")),
    )
    return st.builds(
        lambda s, agent, source: dataclasses.replace(s, agent=agent, source=source),
        step, st.none() | st.sampled_from(_AGENTS), sources,
    )


def _not_runs(text: SearchStrategy[str]) -> SearchStrategy[NotRun]:
    """Why a call never ran: denied (by a person, a rule, or no one named) or cancelled."""
    reasons = text.filter(bool)
    return (st.builds(NotRun, st.just("denied"), reasons, st.none() | st.sampled_from(("user", "rule")))
            | st.builds(NotRun, st.just("cancelled"), reasons))


def steps(
    *,
    kinds: Sequence[str] = ("tool", "llm", "phase", "message", "done"),
    unicode: bool = True,
    expectations: bool = True,
    additions: bool = False,
) -> SearchStrategy[Step]:
    """One step of any of `kinds` (index 0: `build_trace` numbers them), optionally with an `expect`.

    `kinds` may include `rejected` and `compacted`. `additions=True` also draws the fields real runs carry:
    exit codes, message origins, calls that never ran (denied, cancelled), and each step's `agent` and
    `source`; without it the draws are those of before.
    """
    text = _text(20) if unicode else _WORDS
    expects = _step_expects() if expectations else st.none()
    times = st.none() | st.integers(min_value=0, max_value=10**7)
    results = tool_results() | _exit_code_results() if additions else tool_results()
    usage = st.builds(LLMCall, input_tokens=st.none() | st.integers(0, 10**6),
                      output_tokens=st.none() | st.integers(0, 10**4))
    by_kind: dict[str, SearchStrategy[Step]] = {
        "tool": st.builds(
            lambda call, outcome, expect, t: ToolStep(0, call, *outcome, expect=expect, t=t),
            tool_calls(args=arguments(unicode=unicode)),
            results.map(lambda r: (r, None)) | _not_runs(text).map(lambda n: (None, n)) if additions
            else results.map(lambda r: (r, None)),
            expects,
            times,
        ),
        "compacted": st.builds(
            lambda compaction, t: CompactedStep(0, compaction, t=t),
            st.builds(Compaction, st.none() | st.sampled_from(("auto", "manual")),
                      st.none() | st.integers(0, 10**6), st.none() | text),
            times,
        ),
        "rejected": st.builds(
            lambda rejected, expect, t: RejectedStep(0, rejected, expect=expect, t=t),
            st.builds(Rejected, st.sampled_from(REJECT_REASONS), st.none() | text, st.none() | usage),
            expects,
            times,
        ),
        "llm": st.builds(
            lambda llm, expect, t: LLMStep(0, llm, expect=expect, t=t),
            st.one_of(
                st.builds(
                    LLMCall,
                    input_tokens=st.none() | st.integers(0, 10**6),
                    output_tokens=st.none() | st.integers(0, 10**4),
                    text=st.none() | text,
                ),
                st.builds(LLMCall, error=st.sampled_from((*OVERFLOW_ERRORS, *TRANSIENT_ERRORS))),
            ),
            expects,
            times,
        ),
        "phase": st.builds(lambda phase, expect: PhaseStep(0, phase, expect=expect),
                           st.sampled_from(PHASES), expects),
        "message": st.builds(
            lambda message, expect: MessageStep(0, message, expect=expect),
            _messages(text, additions),
            expects,
        ),
        "done": st.builds(
            lambda done, expect: DoneStep(0, done, expect=expect),
            st.builds(Done, st.none() | st.booleans(), text),
            expects,
        ),
    }
    drawn = st.one_of(*(by_kind[k] for k in kinds))
    return _with_step_additions(drawn) if additions else drawn


def traces(
    policy: str | Mapping[str, Any] | Policy | SearchStrategy[str] | None = None,
    *,
    kinds: Sequence[str] = ("tool", "llm", "phase", "message", "done"),
    min_steps: int = 0,
    max_steps: int = 15,
    unicode: bool = True,
    expectations: bool = True,
    additions: bool = False,
) -> SearchStrategy[Trace]:
    """A whole trace with header fields (tags, task, context, strict, run expectations) and steps of any
    `kinds` (`rejected` included when named; `additions` as for `steps`). `policy` defaults to a drawn
    preset name."""
    # strategies are built once here, not per draw: building and validating them dominates generation
    text = _text(20) if unicode else _WORDS
    specs: SearchStrategy[Any]
    if policy is None:
        specs = st.sampled_from(preset_names())
    elif isinstance(policy, SearchStrategy):
        specs = policy
    else:
        specs = st.just(policy)
    step_lists = st.lists(steps(kinds=kinds, unicode=unicode, expectations=expectations, additions=additions),
                          min_size=min_steps, max_size=max_steps)
    tasks = st.none() | st.builds(
        Task,
        objective=text,
        phase=st.sampled_from(PHASES),
        budget=st.dictionaries(
            st.sampled_from(("max_tool_calls", "max_consecutive_same_tool", "max_observation_streak")),
            st.integers(min_value=1, max_value=20),
            max_size=2,
        ),
    )
    run_expects: SearchStrategy[RunExpect | None] = st.none()
    if expectations:
        run_expects = st.none() | st.builds(
            RunExpect,
            outcome=st.none() | st.sampled_from(OUTCOMES),
            stopped_by=st.none() | st.sampled_from(("loop_guard", "failure_tracker", "context")),
            stopped_at=st.none() | st.integers(min_value=0, max_value=50),
            counts=st.none() | st.dictionaries(st.sampled_from(STEP_ACTIONS), st.integers(0, 20), max_size=3),
        )
    names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=20)
    tags = st.lists(_WORDS.filter(bool), max_size=3).map(tuple)
    contexts: SearchStrategy[dict[str, Any]] = st.just({}) | st.builds(
        lambda w: {"window_tokens": w}, st.integers(1, 200000)
    )
    return st.builds(
        lambda spec, drawn, name, **header: build_trace(drawn, policy=spec, name=name, **header),
        specs,
        step_lists,
        names,
        description=text,
        tags=tags,
        task=tasks,
        context=contexts,
        strict=st.booleans(),
        expect=run_expects,
    )
