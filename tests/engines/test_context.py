"""The context engine: pre-prompt compaction, overflow and transient recovery, injection, max turns.

Expected figures are PRESETS.md arithmetic: spacebot retries overflow twice (the 3rd in a row fails)
and backs off 5 s, 10 s, 20 s ...; claw-code retries three times on a 4 → 2 → 0 schedule and backs off
1 s doubling to 128 s for 8 retries; hermes retries transient errors 3 times from 5 s.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_loopguard.core._conversation import Entry, PromptView
from pytest_loopguard.core._model import LLMCall, ToolCall, ToolResult, Verdict, combine
from pytest_loopguard.core._runcontext import Region, RunContext
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.engines import ENGINES, Engine, EngineSettings
from pytest_loopguard.engines.context import Context, compaction_boundary
from pytest_loopguard.errors import PolicyError
from pytest_loopguard.io._format import trace_from_mapping
from pytest_loopguard.runtime._guard import Guard
from pytest_loopguard.runtime._policy import ALIASES, preset_names, resolve_policy
from pytest_loopguard.runtime._replay import replay

# ---- drivers: the Guard calls replay makes, so tests can look at the view and transcript -----------


def guard(policy: Any, window: int | None = None, plugins: Sequence[object] = ()) -> Guard:
    context = {"window_tokens": window} if window else {}
    return Guard(resolve_policy(policy), context=context, plugins=plugins, keep_transcript=True)


def model_call(g: Guard, calls: Sequence[ToolCall] = (), **llm: Any) -> list[Verdict]:
    """One `llm` step as replay drives it: end the turn, before_llm, llm_result, start the next turn."""
    call = LLMCall(**llm)
    g.end_turn()
    verdicts = [*g.before_llm(call).verdicts, *g.llm_result(call).verdicts]
    if call.error is None and combine(verdicts) != "fail":
        verdicts += g.start_turn(list(calls), call).verdicts
    return verdicts


def tool_call(g: Guard, call: ToolCall, result: ToolResult | None = None) -> list[Verdict]:
    result = result or ToolResult()
    before = g.before_call(call, result)
    return list(g.after_call(call, result if before.runs else None, before).verdicts)


def turn(g: Guard, tool: str, tokens: int, out: int = 10, **args: Any) -> list[Verdict]:
    """A successful model call asking for one tool call, and that call's result."""
    call = ToolCall.of(tool, args)
    return model_call(g, [call], output_tokens=out) + tool_call(g, call, ToolResult(tokens=tokens))


def context_of(g: Guard) -> Context:
    engine = g.run.engines["context"]
    assert isinstance(engine, Context)
    return engine


def only(verdicts: Sequence[Verdict], engine: str = "context") -> Verdict:
    mine = [v for v in verdicts if v.engine == engine]
    assert len(mine) == 1, verdicts
    return mine[0]


def none_from(verdicts: Sequence[Verdict], engine: str = "context") -> bool:
    return not [v for v in verdicts if v.engine == engine]


def run(policy: Any, steps: list[dict[str, Any]], window: int | None = None) -> Any:
    raw: dict[str, Any] = {"loopguard": 1, "name": "t", "policy": policy, "steps": steps}
    if window:
        raw["context"] = {"window_tokens": window}
    return replay(trace_from_mapping(raw))


OK = {"llm": {"output_tokens": 10}}


def llm_error(text: str) -> dict[str, Any]:
    return {"llm": {"error": text}}


# ---- preset numbers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "figures"),
    [
        ("spacebot", {"compact_at": 0.7, "compaction": "drop_oldest", "compact_fraction": 0.5, "min_kept": 2,
                      "compact_floor": 4, "overflow_strategy": "force_fraction", "force_compact_fraction": 0.75,
                      "max_compact_retries": 2, "max_transient_retries": 5, "backoff_base_ms": 5000,
                      "turns_per_segment": 15, "max_turns": 50, "inject_read_regions": False,
                      "inject_todos": False}),
        ("spacebot-branch", {"max_compact_retries": 2, "force_compact_fraction": 0.75}),
        ("spacebot-channel", {"max_compact_retries": 2, "compact_at": 0.7}),
        ("hermes", {"inject_read_regions": True, "inject_todos": True, "max_transient_retries": 3,
                    "backoff_base_ms": 5000, "backoff_cap_ms": 120000}),
        ("hermes-current", {"inject_read_regions": False, "inject_todos": True, "max_transient_retries": 3,
                            "backoff_base_ms": 5000, "backoff_cap_ms": 120000}),
        ("claw-code", {"overflow_strategy": "preserve_schedule", "preserve_schedule": (4, 2, 0),
                       "max_compact_retries": 3, "max_transient_retries": 8, "backoff_base_ms": 1000,
                       "backoff_cap_ms": 128000, "inject_read_regions": False, "inject_todos": False}),
        ("default", {"compact_at": 0.8, "preserve_schedule": (4, 2, 0), "max_transient_retries": 5,
                     "backoff_base_ms": 1000, "backoff_cap_ms": 60000, "turns_per_segment": None,
                     "max_turns": None}),
    ],
)
def test_preset_figures(preset: str, figures: dict[str, Any]) -> None:
    settings = resolve_policy(preset).settings("context")
    assert {k: getattr(settings, k) for k in figures} == figures


def test_spacebot_overflow_markers_include_the_maximum_and_tokens_rule() -> None:
    settings = resolve_policy("spacebot").settings("context")
    assert settings.overflow_marker_sets == (("maximum", "tokens"),)
    assert len(settings.overflow_markers) == 7 and len(settings.transient_markers) == 17


# ---- the compaction boundary -------------------------------------------------------------------------


def entries(roles: str) -> list[Entry]:
    """`a` assistant, `t` tool result, `u` user; each tool result belongs to the assistant before it."""
    out: list[Entry] = []
    turn_index = -1
    for r in roles:
        if r == "a":
            turn_index += 1
        role = {"a": "assistant", "t": "tool", "u": "user"}[r]
        out.append(Entry(role, r, turn=turn_index if r != "u" else None))  # type: ignore[arg-type]
    return out


def test_keep_recent_keeps_the_last_n() -> None:
    assert compaction_boundary(entries("atatat"), preserve=4) == 2
    assert compaction_boundary(entries("atatat"), preserve=0) == 6
    assert compaction_boundary(entries("at"), preserve=4) == 0


def test_keep_recent_moves_back_to_the_assistant_call_rather_than_orphan_its_results() -> None:
    # the last 2 entries are two results of the turn that starts at index 2
    assert compaction_boundary(entries("atattt"), preserve=2) == 2
    assert compaction_boundary(entries("atattt"), preserve=3) == 2


def test_drop_oldest_moves_forward_past_orphaned_results_within_min_kept() -> None:
    # 8 entries, drop half: index 4 is a result whose call (index 2) is dropped -> move past 5 to 6
    assert compaction_boundary(entries("uaatttat"), fraction=0.5, min_kept=2) == 6
    assert compaction_boundary(entries("atatatat"), fraction=0.75, min_kept=2) == 6
    assert compaction_boundary(entries("atattttt"), fraction=0.5, min_kept=2) == 2  # min_kept stops it: back


def test_drop_oldest_drops_at_least_one_and_keeps_min_kept() -> None:
    assert compaction_boundary(entries("uuu"), fraction=0.1, min_kept=0) == 1
    assert compaction_boundary(entries("uuuuu"), fraction=0.9, min_kept=2) == 3


@pytest.mark.parametrize("fraction", [0.5, 0.75])
@pytest.mark.parametrize("roles", ["atttatatttat", "uatatttuat", "atatatatatat", "attttttt"])
def test_compaction_never_orphans(roles: str, fraction: float) -> None:
    es = entries(roles)
    for b in [compaction_boundary(es, fraction=fraction, min_kept=2),
              *(compaction_boundary(es, preserve=p) for p in range(len(es) + 1))]:
        kept = es[b:]
        assert not kept or kept[0].role != "tool"
        kept_turns = {e.turn for e in kept if e.role == "assistant"}
        assert all(e.turn in kept_turns for e in kept if e.role == "tool")


@given(
    roles=st.text(alphabet="atu", max_size=30).map(lambda r: r.lstrip("t")),
    preserve=st.integers(0, 12),
    fraction=st.floats(0.05, 0.95),
    min_kept=st.integers(0, 4),
)
def test_compaction_never_orphans_and_keeps_what_it_must(
    roles: str, preserve: int, fraction: float, min_kept: int
) -> None:
    es = entries(roles)
    n = len(es)
    for b, kept_at_least in [
        (compaction_boundary(es, preserve=preserve), min(preserve, n)),
        (compaction_boundary(es, fraction=fraction, min_kept=min_kept), min(min_kept, n)),
    ]:
        assert 0 <= b <= n
        assert n - b >= kept_at_least
        assert b == n or es[b].role != "tool"


# ---- pre-prompt compaction ---------------------------------------------------------------------------


def four_turns(g: Guard, last: int = 200) -> None:
    for i, tokens in enumerate([200, 200, 200, last]):
        turn(g, "shell", tokens, cmd=f"step {i}")


def test_pre_prompt_compaction_at_the_threshold() -> None:
    # claw-code compacts at 80%: window 1000 -> threshold 800; view = 4 x (10 + 200) = 840 tokens
    g = guard("claw-code", window=1000)
    four_turns(g)
    transcript_before = list(g.run.transcript.entries)
    v = only(model_call(g, output_tokens=10))
    assert (v.action, v.reason) == ("compact", "context.compact")
    assert v.data["tokens_before"] == 840 and v.data["threshold"] == 800 and v.data["window"] == 1000
    assert v.data["preserved"] == 4 and v.data["summarized"] == 4
    view = g.run.view
    assert view.entries[0].role == "summary" and "4 earlier messages" in view.entries[0].text
    assert [e.role for e in view.entries[1:5]] == ["assistant", "tool", "assistant", "tool"]
    assert v.data["tokens_after"] == 420 + view.entry_tokens(view.entries[0])
    # the transcript is untouched: the same entries, in order, plus nothing but the new turn's message
    assert g.run.transcript.entries[: len(transcript_before)] == transcript_before
    assert all(a is b for a, b in zip(g.run.transcript.entries, transcript_before, strict=False))


def test_no_compaction_one_token_below_the_threshold() -> None:
    g = guard("claw-code", window=1000)
    four_turns(g, last=159)  # 3 x 210 + 10 + 159 = 799 < 800
    assert none_from(model_call(g, output_tokens=10))
    g = guard("claw-code", window=1000)
    four_turns(g, last=160)  # exactly 800
    assert only(model_call(g, output_tokens=10)).reason == "context.compact"


def test_trace_window_overrides_the_setting() -> None:
    g = guard({"preset": "claw-code", "context": {"window_tokens": 1000}})
    four_turns(g)
    assert only(model_call(g, output_tokens=10)).reason == "context.compact"
    g = guard({"preset": "claw-code", "context": {"window_tokens": 1000}}, window=100000)
    four_turns(g)
    assert none_from(model_call(g, output_tokens=10))


def test_recorded_input_tokens_raise_the_estimate() -> None:
    # window 100000 -> threshold 80000; the view holds 840 tokens, the recorded prompt decides
    g2 = guard("claw-code", window=100000)
    four_turns(g2)
    assert none_from(model_call(g2, output_tokens=10, input_tokens=79999))
    v = only(model_call(g2, output_tokens=10, input_tokens=80000))
    # a model call that asks for no tool call adds no entry: the view is still 840
    assert v.data["tokens_before"] == 80000 and v.data["view_tokens_before"] == 840


def test_recorded_input_tokens_minus_what_compaction_removed() -> None:
    g = guard("claw-code", window=1000)
    four_turns(g)
    first = only(model_call(g, output_tokens=10, input_tokens=850))
    removed = first.data["tokens_before"] - first.data["tokens_after"]
    assert removed > 150
    turn(g, "shell", 1, cmd="a")
    turn(g, "shell", 1, cmd="b")
    # the recorded run did not compact: its prompt is now 950; ours is that minus what we removed
    assert none_from(model_call(g, output_tokens=10, input_tokens=950))
    assert only(model_call(g, output_tokens=10, input_tokens=800 + removed)).reason == "context.compact"


def test_spacebot_compaction_drops_the_oldest_half_and_keeps_two() -> None:
    # spacebot compacts at 70%: window 1000 -> 700; 4 turns = 8 entries, 840 tokens; drop 4, keep 4
    g = guard("spacebot", window=1000)
    four_turns(g)
    v = only(model_call(g, output_tokens=10))
    assert v.reason == "context.compact" and v.data["threshold"] == 700
    assert (v.data["summarized"], v.data["preserved"]) == (4, 4)


def test_spacebot_never_compacts_four_messages_or_fewer() -> None:
    g = guard("spacebot", window=1000)
    turn(g, "shell", 400, cmd="a")
    turn(g, "shell", 400, cmd="b")  # 4 entries, 820 tokens: over 700, but at the floor
    assert none_from(model_call(g, output_tokens=10))
    tool_call(g, ToolCall.of("shell", {"cmd": "c"}), ToolResult(tokens=1))  # a 5th entry
    assert only(model_call(g, output_tokens=10)).reason == "context.compact"


def test_a_second_compaction_folds_the_first_summary() -> None:
    g = guard("claw-code", window=1000)
    four_turns(g)
    model_call(g, output_tokens=10)
    for i in range(4):
        tool_call(g, ToolCall.of("shell", {"cmd": f"x{i}"}), ToolResult(tokens=200))
    v = only(model_call(g, output_tokens=10))
    assert v.reason == "context.compact"
    summaries = [e for e in g.run.view.entries if e.role == "summary"]
    assert len(summaries) == 1 and g.run.view.entries[0] is summaries[0]
    assert f"{4 + v.data['summarized'] - 1} earlier messages" in summaries[0].text


# ---- cadence: turns_per_segment and max_turns are separate --------------------------------------------


def test_without_pre_prompt_checks_compaction_waits_for_a_segment_boundary() -> None:
    policy = {"preset": "claw-code", "context": {"pre_prompt_check": False, "turns_per_segment": 4}}
    g = guard(policy, window=100)
    for i in range(3):
        turn(g, "shell", 200, cmd=str(i))
    # 3 turns done, 630 tokens over a threshold of 80, 6 entries: compactable, but not a boundary
    assert none_from(model_call(g, [ToolCall.of("shell", {"cmd": "3"})], output_tokens=10))
    tool_call(g, ToolCall.of("shell", {"cmd": "3"}), ToolResult(tokens=200))
    v = only(model_call(g, output_tokens=10))  # 4 turns done: a segment boundary
    assert v.reason == "context.compact" and v.data["trigger"] == "segment"


def test_segments_do_not_end_the_run() -> None:
    steps = [OK] * 40  # spacebot: turns_per_segment 15, max_turns 50
    result = run("spacebot", steps)
    assert result.outcome == "incomplete"


def test_the_turn_after_max_turns_stops_the_run_as_exhausted() -> None:
    result = run("spacebot", [OK] * 52)
    assert result.outcome == "exhausted" and result.stopped_at == 50 and result.stopped_by == "context"
    step = result.steps[50]
    v = only(step.verdicts)
    assert (v.action, v.reason) == ("stop", "context.max_turns")
    assert v.data["outcome"] == "exhausted" and v.data["max_turns"] == 50
    assert result.steps[49].action == "allow" and result.steps[51].action == "not_reached"


def test_max_turns_override() -> None:
    result = run({"preset": "claw-code", "context": {"max_turns": 2}}, [OK] * 3)
    assert result.outcome == "exhausted" and result.stopped_at == 2


# ---- overflow ----------------------------------------------------------------------------------------

OVERFLOW = "prompt is too long: 210000 tokens > 200000 maximum"


def six_turns(g: Guard) -> None:
    for i in range(6):
        turn(g, "shell", 20, cmd=str(i))


def test_claw_code_overflow_schedule_4_2_0_then_fail() -> None:
    g = guard("claw-code")
    six_turns(g)  # 12 entries: assistant, result, ...
    transcript_before = list(g.run.transcript.entries)
    got = [only(model_call(g, error=OVERFLOW)) for _ in range(4)]
    assert [v.action for v in got] == ["compact_retry"] * 3 + ["fail"]
    assert [v.reason for v in got] == ["context.overflow"] * 3 + ["context.overflow_exhausted"]
    assert [v.data["attempt"] for v in got] == [1, 2, 3, 4]
    assert [v.data["preserve"] for v in got[:3]] == [4, 2, 0]
    assert [v.data["preserved"] for v in got[:3]] == [4, 2, 0]
    assert [e.role for e in g.run.view.entries] == ["summary"]
    assert "12 earlier messages" in g.run.view.entries[0].text
    assert g.run.transcript.entries == transcript_before


def test_spacebot_overflow_force_compacts_75_percent_and_fails_on_the_third() -> None:
    g = guard("spacebot")
    six_turns(g)
    first, second, third = (only(model_call(g, error="This model's maximum context length is 8192 tokens"))
                            for _ in range(3))
    # 12 entries: drop int(12 * 0.75) = 9; index 9 is a result: move forward to 10; keep 2
    assert first.action == "compact_retry" and first.data["preserved"] == 2 and first.data["fraction"] == 0.75
    # the view is now 3 entries, under the floor of 4: the retry goes ahead uncompacted
    assert second.action == "compact_retry" and second.data["compacted"] is False
    assert (third.action, third.reason) == ("fail", "context.overflow_exhausted")


def test_a_successful_call_resets_the_overflow_streak() -> None:
    g = guard("claw-code")
    six_turns(g)
    for _ in range(3):
        model_call(g, error=OVERFLOW)
    model_call(g, output_tokens=5)
    again = only(model_call(g, error=OVERFLOW))
    assert again.action == "compact_retry" and again.data["attempt"] == 1


def test_a_transient_error_does_not_reset_the_overflow_streak() -> None:
    g = guard("claw-code")
    six_turns(g)
    model_call(g, error=OVERFLOW)
    assert only(model_call(g, error="503 Service Unavailable")).action == "retry"
    model_call(g, error=OVERFLOW)
    model_call(g, error=OVERFLOW)
    assert only(model_call(g, error=OVERFLOW)).reason == "context.overflow_exhausted"


@pytest.mark.parametrize(
    ("preset", "error", "reason"),
    [
        ("claw-code", "Prompt Is Too Long", "context.overflow"),
        ("hermes", "prompt is too long", "context.overflow"),
        ("hermes", "slot context: 4096 tokens, prompt 5000 tokens", "context.overflow"),
        ("claw-code", "slot context: 4096 tokens, prompt 5000", "context.unrecoverable"),  # 5000 is not 500
        ("spacebot", "requested 9000, maximum allowed is 8192 TOKENS", "context.overflow"),
        ("claw-code", "requested 9000, maximum allowed is 8192 TOKENS", "context.unrecoverable"),
        ("spacebot", "maximum allowed is 8192", "context.unrecoverable"),
        ("claw-code", "no parseable body", "context.overflow"),
        ("hermes", "no parseable body", "context.unrecoverable"),
        ("default", "CONTEXT LENGTH EXCEEDED", "context.overflow"),
    ],
)
def test_overflow_markers_per_preset(preset: str, error: str, reason: str) -> None:
    g = guard(preset)
    six_turns(g)
    assert only(model_call(g, error=error)).reason == reason


@pytest.mark.parametrize("preset", ["claw-code", "spacebot", "hermes", "default"])
def test_overflow_is_tested_before_transient(preset: str) -> None:
    g = guard(preset)
    six_turns(g)
    assert only(model_call(g, error="429 too many tokens")).reason == "context.overflow"


def test_other_errors_fail_at_once() -> None:
    result = run("claw-code", [OK, llm_error("401 invalid x-api-key"), OK])
    assert result.outcome == "failed" and result.stopped_at == 1
    v = only(result.steps[1].verdicts)
    assert (v.action, v.reason) == ("fail", "context.unrecoverable")


# ---- transient errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "error", "delays"),
    [
        ("spacebot", "The server had an error while processing", [5000, 10000, 20000, 40000, 80000]),
        ("claw-code", "500 Internal Server Error",
         [1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000]),
        ("hermes", "rate limit reached", [5000, 10000, 20000]),
        ("default", "overloaded", [1000, 2000, 4000, 8000, 16000]),
        ({"preset": "default", "context": {"max_transient_retries": 8}}, "overloaded",
         [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]),
    ],
)
def test_transient_backoff_on_the_virtual_clock(preset: Any, error: str, delays: list[int]) -> None:
    g = guard(preset)
    model_call(g, output_tokens=1)
    start = g.run.clock.now_ms
    got = [only(model_call(g, error=error)) for _ in range(len(delays) + 1)]
    assert [v.action for v in got] == ["retry"] * len(delays) + ["fail"]
    assert [v.data["delay_ms"] for v in got[:-1]] == delays
    assert [v.data["attempt"] for v in got] == list(range(1, len(delays) + 2))
    assert got[-1].reason == "context.transient_exhausted"
    assert g.run.clock.now_ms - start == sum(delays)
    assert got[-2].data["clock_ms"] == start + sum(delays)


def test_a_successful_call_resets_the_transient_streak() -> None:
    g = guard("spacebot")
    for _ in range(5):
        model_call(g, error="502 bad gateway")
    model_call(g, output_tokens=1)
    again = only(model_call(g, error="502 bad gateway"))
    assert again.action == "retry" and again.data["delay_ms"] == 5000


def test_claw_code_transient_markers_are_its_own() -> None:
    g = guard("claw-code")
    assert only(model_call(g, error="connection reset by peer")).reason == "context.transient"
    assert only(model_call(g, error="server is overloaded")).reason == "context.unrecoverable"


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ("HTTP 500", "context.transient"),
        ("status=500: upstream", "context.transient"),
        ("error 409 conflict", "context.transient"),
        ("request id 15002 rejected", "context.unrecoverable"),
        ("quota of 4290 requests used up", "context.unrecoverable"),
    ],
)
def test_status_code_markers_match_whole_numbers(error: str, reason: str) -> None:
    g = guard("claw-code")
    assert only(model_call(g, error=error)).reason == reason


def test_a_transient_storm_in_a_replayed_trace() -> None:
    result = run("spacebot", [OK, *[llm_error("HTTP 503 from upstream")] * 6, OK])
    assert [s.action for s in result.steps] == ["allow", *["retry"] * 5, "fail", "not_reached"]
    assert result.outcome == "failed" and result.stopped_at == 6


# ---- injection after compaction ----------------------------------------------------------------------

TODOS = [
    {"id": "1", "content": "write the parser", "status": "pending"},
    {"id": "2", "content": "read the spec", "status": "completed"},
    {"id": "3", "content": "fix the tests", "status": "in_progress"},
    {"id": "4", "content": "old idea", "status": "cancelled"},
]


def reading_session(preset: Any, window: int = 1000) -> Guard:
    g = guard(preset, window=window)
    turn(g, "read_file", 300, path="src/a.py")
    turn(g, "read_file", 300, path="src/b.py", offset=10, limit=20)
    turn(g, "todo", 10, todos=TODOS)
    turn(g, "shell", 200, cmd="pytest")
    return g


def injected_text(g: Guard, v: Verdict) -> str:
    """The injected message (the view's last entry), checked against what the verdict says of it."""
    data = v.data["injected"]
    last = g.run.view.entries[-1]
    assert data == {"tokens": math.ceil(len(last.text) / 4), "chars": len(last.text), "regions": data["regions"],
                    "sha256": hashlib.sha256(last.text.encode()).hexdigest()[:16]}
    return last.text


def test_hermes_injects_regions_read_and_active_todos() -> None:
    g = reading_session("hermes")
    v = only(model_call(g, output_tokens=10))
    injected = injected_text(g, v)
    assert "do not read them again" in injected.lower() and v.data["injected"]["regions"] == 2
    assert "src/a.py (offset 1, limit 500)" in injected and "src/b.py (offset 10, limit 20)" in injected
    assert injected.index("src/a.py") < injected.index("src/b.py")  # the published rule: in reading order
    assert "write the parser" in injected and "fix the tests" in injected
    assert "read the spec" not in injected and "old idea" not in injected
    assert g.run.view.entries[-1].role == "user"
    assert all(e.text != injected for e in g.run.transcript.entries)


def test_hermes_current_injects_only_the_active_todos() -> None:
    g = reading_session("hermes-current")
    injected = injected_text(g, only(model_call(g, output_tokens=10)))
    assert "src/a.py" not in injected
    assert "write the parser" in injected and "fix the tests" in injected and "read the spec" not in injected


def test_claw_code_injects_nothing() -> None:
    g = reading_session("claw-code")
    v = only(model_call(g, output_tokens=10))
    assert v.reason == "context.compact" and v.data["injected"] is None
    assert g.run.view.entries[-1].role != "user"


def test_injection_after_an_overflow_compaction_and_as_a_system_message() -> None:
    g = reading_session("hermes", window=100000)  # no pre-prompt compaction: the overflow compacts
    v = only(model_call(g, error="prompt is too long"))
    assert v.action == "compact_retry" and "src/a.py" in injected_text(g, v)
    g = reading_session({"preset": "hermes", "context": {"injection_role": "system"}})
    model_call(g, output_tokens=10)
    assert g.run.view.entries[-1].role == "system"


def test_no_injection_message_when_there_is_nothing_to_say() -> None:
    g = guard("hermes-current", window=1000)
    four_turns(g)
    assert only(model_call(g, output_tokens=10)).data["injected"] is None


def test_default_merges_touching_and_overlapping_regions_of_a_file_most_recent_first() -> None:
    g = guard("default", window=1000)
    turn(g, "read_file", 100, path="a.py", offset=1, limit=100)  # lines 1-100
    turn(g, "read_file", 100, path="c.py", offset=1, limit=50)
    turn(g, "read_file", 100, path="a.py", offset=101, limit=100)  # touches: 1-200
    turn(g, "read_file", 100, path="a.py", offset=150, limit=100)  # overlaps: 1-249
    turn(g, "read_file", 100, path="a.py", offset=400, limit=10)  # a gap: its own line
    turn(g, "read_file", 300, path="b.py")
    v = only(model_call(g, output_tokens=10))
    lines = [line for line in injected_text(g, v).splitlines() if line.startswith("- ")]
    assert lines == ["- b.py (offset 1, limit 500)", "- a.py (offset 400, limit 10)",
                     "- a.py (offset 1, limit 249)", "- c.py (offset 1, limit 50)"]
    assert v.data["injected"]["regions"] == 4
    g = guard({"preset": "default", "context": {"merge_regions": False}}, window=1000)
    for offset in (1, 101, 301):
        turn(g, "read_file", 300, path="a.py", offset=offset, limit=100)
    lines = [x for x in injected_text(g, only(model_call(g, output_tokens=10))).splitlines() if x.startswith("- ")]
    assert lines == ["- a.py (offset 301, limit 100)", "- a.py (offset 101, limit 100)", "- a.py (offset 1, limit 100)"]


def test_default_caps_the_region_list_at_its_token_budget_keeping_the_latest() -> None:
    g = guard({"preset": "default", "context": {"injection_max_tokens": 120}}, window=100000)
    for i in range(300):
        turn(g, "read_file", 10, path=f"src/file_{i:03d}.py")
    v = only(model_call(g, error="prompt is too long"))
    text = injected_text(g, v)
    assert v.data["injected"]["tokens"] <= 120
    lines = [x for x in text.splitlines() if x.startswith("- ")]
    assert 0 < len(lines) == v.data["injected"]["regions"] < 300
    assert lines[0] == "- src/file_299.py (offset 1, limit 500)"
    assert lines[-1] == f"- src/file_{300 - len(lines):03d}.py (offset 1, limit 500)"
    # the published rule keeps every region, however long the list gets
    g = guard("hermes", window=100000)
    for i in range(300):
        turn(g, "read_file", 10, path=f"src/file_{i:03d}.py")
    assert only(model_call(g, error="prompt is too long")).data["injected"]["regions"] == 300


def test_the_injection_never_takes_the_view_to_the_threshold_by_itself() -> None:
    # window 1000: the threshold is 800; after the compaction the view holds about 760 tokens, so the
    # 1000-token budget must shrink to what is left, and a todo list that does not fit is left out
    g = guard("default", window=1000)
    for i in range(40):
        turn(g, "read_file", 1, path=f"src/file_{i:03d}.py")
    turn(g, "todo", 1, todos=[{"id": "1", "content": "x" * 2000, "status": "pending"}])
    turn(g, "shell", 700, cmd="make")
    v = only(model_call(g, output_tokens=10))
    assert v.reason == "context.compact"
    context = context_of(g)
    assert g.run.view.tokens() < context.threshold(g.run.view)
    text = injected_text(g, v)
    assert "x" * 100 not in text and 0 < v.data["injected"]["regions"] < 40



# ---- the regions it injects come from `run.reads` (core._runcontext.ReadRegions), not from an engine's name --

@pytest.mark.parametrize("preset", ["hermes", "default"])  # every region in order; the latest within a budget
def test_without_a_read_tracker_the_injection_lists_no_regions(preset: str) -> None:
    g = reading_session({"preset": preset, "read_tracker": False})
    assert "read_tracker" not in g.run.engines and g.run.reads is None
    v = only(model_call(g, output_tokens=10))
    injected = injected_text(g, v)
    assert v.data["injected"]["regions"] == 0 and "src/a.py" not in injected
    assert "write the parser" in injected and "fix the tests" in injected


@pytest.mark.parametrize("preset", ["hermes", "default"])
def test_with_a_read_tracker_it_offers_its_regions_to_the_run(preset: str) -> None:
    g = reading_session(preset)
    assert g.run.reads is g.run.engines["read_tracker"]
    v = only(model_call(g, output_tokens=10))
    assert v.data["injected"]["regions"] == 2 and "src/b.py (offset 10, limit 20)" in injected_text(g, v)


@dataclass(frozen=True, slots=True)
class _LogbookSettings(EngineSettings):
    pass


class _Logbook(Engine):
    """Another engine offering the run what was read (here: a fixed list), in the read tracker's place."""

    name = "test_logbook"
    Settings = _LogbookSettings

    def __init__(self, settings: _LogbookSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        run.reads = self

    @property
    def regions(self) -> list[Region]:
        return [("notes.md", 1, 40), ("plan.md", 1, 10)]

    def recent_regions(self) -> Iterator[Region]:
        return reversed(self.regions)


@pytest.mark.parametrize(("preset", "order"),
                         [("hermes", ["notes.md", "plan.md"]), ("default", ["plan.md", "notes.md"])])
def test_any_engine_offering_read_regions_is_listed(preset: str, order: list[str]) -> None:
    ENGINES.register(_Logbook)
    g = reading_session({"preset": preset, "read_tracker": False, "test_logbook": True})
    v = only(model_call(g, output_tokens=10))
    lines = [x for x in injected_text(g, v).splitlines() if x.startswith("- ") and ".md" in x]
    assert [line[2:].split(" ")[0] for line in lines] == order and v.data["injected"]["regions"] == 2


# Every preset with the context engine, by how its compactions are driven; a new one must be placed here.
CONTEXT_PRESETS = sorted(n for n in preset_names() if n not in ALIASES and "context" in resolve_policy(n).engines)
LITERAL = ["hermes"]  # the published rule: every region read, however long the list (docs/engines.md)
BOUNDED = [n for n in CONTEXT_PRESETS if n not in LITERAL]


def compactions(preset: str, turns: int) -> int:
    """A long run reading ever new regions, compactions counted. Without pre-prompt checks (openhands) the model
    call overflows whenever the prompt has reached the threshold, since such a preset compacts only then."""
    g = guard(preset, window=4000)
    context = context_of(g)
    threshold, overflows = context.threshold(g.run.view), not context.settings.pre_prompt_check
    n = 0
    for i in range(turns):
        call = ToolCall.of("read_file", {"path": f"src/m{i % 400}.py", "offset": 1 + 50 * (i // 400), "limit": 50})
        if overflows and g.run.view.tokens() >= threshold:
            error = context.settings.overflow_markers[0]
            n += sum(v.action == "compact_retry" for v in model_call(g, error=error))
        n += sum(v.action == "compact" for v in model_call(g, [call], output_tokens=20))
        tool_call(g, call, ToolResult(tokens=150))
    return n


def test_every_context_preset_is_checked_for_compactions() -> None:
    assert set(BOUNDED) | set(LITERAL) == set(CONTEXT_PRESETS) and len(BOUNDED) >= 7


@pytest.mark.parametrize("preset", BOUNDED)
def test_compactions_grow_with_the_work_not_its_square(preset: str) -> None:
    """Four times the turns compact about four times as often, whatever the preset injects."""
    small, large = compactions(preset, 500), compactions(preset, 2000)
    assert small > 5 and large <= 4.5 * small


def test_the_published_hermes_rule_compacts_ever_more_often() -> None:
    """The literal Hermes rule is kept (PRESETS.md): its injected list grows with every new region, so a long
    run compacts more than proportionally, which is what bounding the other presets' injection prevents."""
    small, large = compactions("hermes", 500), compactions("hermes", 2000)
    assert small > 5 and large > 6 * small


def todo(g: Guard, todos: list[dict[str, Any]] | None, merge: bool | None = None, ok: bool = True) -> None:
    args: dict[str, Any] = {} if todos is None else {"todos": todos}
    if merge is not None:
        args["merge"] = merge
    call = ToolCall.of("todo", args)
    tool_call(g, call, ToolResult() if ok else ToolResult.failure("bad"))


def test_todo_list_replace_merge_and_read() -> None:
    g = guard("hermes")
    model_call(g, output_tokens=1)
    ctx = context_of(g)
    todo(g, TODOS)
    assert [t[0] for t in ctx.todos] == ["1", "2", "3", "4"]
    todo(g, [{"id": "1", "status": "completed"}, {"id": "5", "content": "new", "status": "pending"}], merge=True)
    assert ctx.todos[0] == ("1", "write the parser", "completed") and ctx.todos[-1] == ("5", "new", "pending")
    todo(g, None)  # a read of the list changes nothing
    todo(g, [{"id": "9", "content": "x", "status": "pending"}], ok=False)  # a failed call changes nothing
    assert len(ctx.todos) == 5
    todo(g, [{"id": "7", "content": "only", "status": "in_progress"}])  # no merge: replaces
    assert ctx.todos == [("7", "only", "in_progress")]


def test_the_todo_list_is_bounded_dropping_done_todos_first() -> None:
    g = guard({"preset": "hermes", "context": {"max_todos": 3}})
    model_call(g, output_tokens=1)
    ctx = context_of(g)
    todo(g, [{"id": "1", "content": "a", "status": "pending"}, {"id": "2", "content": "b", "status": "completed"},
             {"id": "3", "content": "c", "status": "in_progress"}])
    todo(g, [{"id": "4", "content": "d", "status": "pending"}], merge=True)  # the done one goes, not the oldest
    assert [t[0] for t in ctx.todos] == ["1", "3", "4"]
    todo(g, [{"id": "5", "content": "e", "status": "pending"}, {"id": "6", "content": "f", "status": "cancelled"}],
         merge=True)  # 5 todos: the cancelled one goes, then the oldest active
    assert [t[0] for t in ctx.todos] == ["3", "4", "5"]
    with pytest.raises(PolicyError, match="max_todos"):
        guard({"preset": "hermes", "context": {"max_todos": 0}})


# ---- accounting cost -------------------------------------------------------------------------------


class CountingCounter:
    """A token counter plugin that counts how often it is asked."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def loopguard_count_tokens(self, text: str) -> int:
        self.calls += 1
        return len(text)


def test_each_entry_is_counted_once_however_many_model_calls() -> None:
    counter = CountingCounter()
    g = guard("claw-code", plugins=[counter])
    for i in range(20):
        call = ToolCall.of("shell", {"cmd": str(i)})
        model_call(g, [call])  # no output_tokens: the assistant entry is counted
        tool_call(g, call, ToolResult(text="x" * 50))  # no tokens: text and tool name are counted
    model_call(g)
    # 20 assistant entries (text only) + 20 results (text + tool name), each counted once
    assert counter.calls == 20 + 20 * 2
    assert g.run.view.tokens() == sum(g.run.view.entry_tokens(e) for e in g.run.view.entries)
    assert counter.calls == 20 + 20 * 2


def test_prompt_view_running_total_follows_every_rewrite() -> None:
    view = PromptView()
    a, b, c = Entry("user", "x" * 40), Entry("tool", "y" * 8, tool="t"), Entry("assistant", "z", tokens=7)
    view.append(a)
    assert view.tokens() == 10
    view.append(b)
    view.append(c)
    assert view.tokens() == 10 + 2 + 1 + 7
    view.replace(1, b.with_text("p" * 4))
    assert view.tokens() == 10 + 1 + 1 + 7
    view.replace_entries([c])
    assert view.tokens() == 7
    view.replace_entries([c, a, a, c])  # as long as before: recounted from the new entries
    assert view.tokens() == 7 + 10 + 10 + 7
    view.replace_entries([c])
    assert view.tokens() == 7
    view.entries.pop()  # cut behind its back: recounted, not wrong
    assert view.tokens() == 0
