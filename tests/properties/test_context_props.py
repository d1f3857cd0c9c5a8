"""Properties of the context and dedup engines over generated agent sessions: bounded overflow retries,
no orphaned tool results, a view inside the window after compaction, one full result per dedup tool,
and a lossless transcript. Expectations come from DESIGN.md §7 and PRESETS.md."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, note
from hypothesis import strategies as st

from pytest_loopguard import Guard, Trace, replay, resolve_policy
from pytest_loopguard.core._conversation import Entry, PromptView
from pytest_loopguard.core._model import LLMCall, Message, ToolCall, ToolResult
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.io._format import dumps
from pytest_loopguard.pytest import _strategies as lgst
from pytest_loopguard.runtime._replay import turn_plan

CONTEXT_PRESETS = ("default", "spacebot-worker", "spacebot-channel", "hermes", "hermes-current", "claw-code")
# presets that keep the last few messages (rather than drop a fraction of them) when compacting
KEEP_RECENT_PRESETS = ("default", "hermes", "hermes-current", "claw-code")
WINDOW = 8000


def orphans(entries: list[Entry]) -> list[int]:
    """Indices of tool results whose assistant call (the assistant entry of their turn) is not before them."""
    seen_turns: set[int | None] = set()
    out = []
    for i, e in enumerate(entries):
        if e.role == "assistant":
            seen_turns.add(e.turn)
        elif e.role == "tool" and e.turn not in seen_turns:
            out.append(i)
    return out


class ViewProbe:
    """A plugin that looks at the prompt view after the engines have had their say."""

    def __init__(self, dedup_tools: tuple[str, ...]) -> None:
        self.dedup_tools = dedup_tools
        self.after_compaction: list[tuple[int, int, list[int]]] = []  # (tokens, window, orphans)
        self.before_model: list[tuple[list[int], dict[str, list[bool]]]] = []  # (orphans, full flags per tool)

    @hookimpl(trylast=True)
    def loopguard_before_llm(self, view: PromptView) -> None:
        flags: dict[str, list[bool]] = {}
        for e in view.entries:
            if e.role == "tool" and e.tool in self.dedup_tools:
                flags.setdefault(e.tool, []).append(not e.replaced)
        self.before_model.append((orphans(view.entries), flags))

    @hookimpl(trylast=True)
    def loopguard_compacted(self, view: PromptView) -> None:
        self.after_compaction.append((view.tokens(), view.window_tokens, orphans(view.entries)))


def sessions(
    max_result_tokens: int = WINDOW // 8, min_result_tokens: int = 50, max_overflows: int = 5
) -> st.SearchStrategy[Trace]:
    return lgst.overflow_sessions(window_tokens=WINDOW, max_turns=12, min_result_tokens=min_result_tokens,
                                  max_result_tokens=max_result_tokens, max_overflows=max_overflows)


# ---- overflow recovery is bounded --------------------------------------------------------------------------
def expected_overflow_failure(trace: Trace, max_retries: int) -> int | None:
    """The step where overflow recovery gives up: the (max+1)-th overflow with no successful model call
    since the streak began (transient errors do not end it)."""
    streak = 0
    for step in trace.steps:
        if step.llm is None:
            continue
        if step.llm.error is None:
            streak = 0
        elif step.llm.error in lgst.OVERFLOW_ERRORS:
            streak += 1
            if streak > max_retries:
                return step.index
    return None


@given(sessions(), st.sampled_from(CONTEXT_PRESETS))
def test_overflow_recovery_never_exceeds_its_retry_bound(trace: Trace, preset: str) -> None:
    note(dumps(trace))
    bound = resolve_policy(preset).settings("context").max_compact_retries
    result = replay(trace, preset)
    streak = 0
    for s in result.steps:
        if s.kind != "llm" or s.action == "not_reached":
            continue
        reasons = [v.reason for v in s.verdicts if v.engine == "context"]
        if "context.overflow" in reasons:
            streak += 1
            assert streak <= bound, f"step {s.index}: retry {streak} > {bound}"
        elif s.action in ("allow", "compact"):
            streak = 0
    fail_at = expected_overflow_failure(trace, bound)
    if fail_at is None:
        assert result.outcome == "incomplete"
    else:
        assert (result.outcome, result.stopped_at, result.stopped_by) == ("failed", fail_at, "context")
        ender = result.steps[fail_at]
        assert [v.reason for v in ender.verdicts if v.action == "fail"] == ["context.overflow_exhausted"]


# ---- compaction never orphans a tool result; the view fits after it; dedup keeps one full result ---------
@given(sessions(max_result_tokens=WINDOW // 2), st.sampled_from(CONTEXT_PRESETS))
def test_compaction_never_orphans_a_tool_result(trace: Trace, preset: str) -> None:
    note(dumps(trace))
    probe = ViewProbe(())
    replay(trace, preset, plugins=[probe])
    for _, _, lost in probe.after_compaction:
        assert lost == []
    for lost, _ in probe.before_model:
        assert lost == []


@given(sessions(WINDOW // 7, WINDOW // 14, max_overflows=1), st.sampled_from(KEEP_RECENT_PRESETS))
def test_view_fits_the_window_after_a_compaction(trace: Trace, preset: str) -> None:
    # Kept: the last 4 messages, moved back to the call of a turn they split: at most 5 results of a
    # seventh of the window and 2 calls of ≤ 400 tokens, plus summary and injection, fit. A turn can
    # still add more than the room left under the threshold, so a compaction that kept too much shows.
    note(dumps(trace))
    probe = ViewProbe(())
    replay(trace, preset, plugins=[probe])
    for tokens, window, _ in probe.after_compaction:
        assert window == WINDOW
        assert tokens <= window


def test_sessions_do_compact() -> None:
    # the window property above is only worth something if compactions happen in the generated sessions
    compactions = 0

    @given(sessions())
    @example(lgst.build_trace([Message("user", "go"), LLMCall(error=lgst.OVERFLOW_ERRORS[0])]))
    def count(trace: Trace) -> None:
        nonlocal compactions
        probe = ViewProbe(())
        replay(trace, "default", plugins=[probe])
        compactions += len(probe.after_compaction)

    count()
    assert compactions > 0


@given(sessions(max_result_tokens=WINDOW // 3), st.sampled_from(CONTEXT_PRESETS))
def test_dedup_keeps_exactly_one_full_result_per_tool(trace: Trace, preset: str) -> None:
    note(dumps(trace))
    policy = resolve_policy(preset)
    if not policy.enabled("dedup"):
        return
    probe = ViewProbe(tuple(policy.settings("dedup").tools))
    replay(trace, preset, plugins=[probe])
    for _, flags in probe.before_model:
        for tool, full in flags.items():
            # one full result, and it is the most recent one of its tool
            assert full.count(True) == 1 and full[-1], (tool, full)


# ---- the transcript is lossless ---------------------------------------------------------------------------
# a policy under which every call warns and any repeat blocks, so warned and blocked results occur
TOUCHY = {"preset": "default", "name": "touchy", "loop_guard": {"warn_at": 1, "block_at": 2, "poll_multiplier": 1}}


# a session that warns and blocks under TOUCHY, given as an explicit example so every run covers them
REPEATS = lgst.build_trace(
    [Message("user", "Book the cheapest flight"),
     *[item for _ in range(3) for item in (LLMCall(output_tokens=20),
                                          (ToolCall.of("browser_snapshot"), ToolResult(text="page", tokens=900)))]],
    context={"window_tokens": WINDOW},
)

# under default the 3rd identical read is warned twice (loop_guard and read_tracker): both warnings reach the agent
REREADS = lgst.build_trace(
    [Message("user", "Fix the bug"),
     *[(ToolCall.of("read_file", {"path": "a.py"}), ToolResult(text="def f(): ...", tokens=40)) for _ in range(3)]],
    context={"window_tokens": WINDOW},
)


def drive(trace: Trace, preset: str | dict[str, Any]) -> tuple[Guard, list[tuple[str, str, str | None]]]:
    """Run the trace's events through a Guard as an agent does, and list the messages the run produced:
    (role, text, tool), in order. A blocked call is not executed: the agent sees the block's message as
    an error. A warned call runs and its result carries the warning messages (DESIGN.md §4)."""
    guard = Guard(resolve_policy(preset), context=trace.context, keep_transcript=True)
    plan = turn_plan(trace.steps)
    produced: list[tuple[str, str, str | None]] = []

    def open_turn(index: int, llm: LLMCall | None) -> None:
        calls = plan.get(index)
        if calls is None:
            return
        guard.end_turn()
        guard.start_turn(calls, llm)
        if calls or (llm is not None and llm.text):
            text = "\n".join([*([llm.text] if llm is not None and llm.text else []),
                              *(f"{c.tool}({c.ordered})" for c in calls)])
            produced.append(("assistant", text, None))

    for step in trace.steps:
        if step.message is not None:
            guard.message(step.message)
            produced.append((step.message.role, step.message.text, None))
        elif step.llm is not None:
            guard.end_turn()
            guard.before_llm(step.llm)
            decision = guard.llm_result(step.llm)
            if decision.action == "fail":
                break
            open_turn(step.index, step.llm)
        elif step.call is not None:
            open_turn(step.index, None)
            before = guard.before_call(step.call, step.result)
            if before.action == "stop":
                break
            ran = before.runs
            decision = guard.after_call(step.call, step.outcome if ran else None, before)
            text = (step.outcome.result_text or "") if ran else f"Error: {before.message or 'blocked'}"
            if ran and decision.action == "warn":
                # the result, a blank line, then the warnings one per line (two engines may warn at once)
                warnings = "\n".join(v.message for v in decision.verdicts if v.action == "warn" and v.message)
                text = "\n\n".join(t for t in (text, warnings) if t)
            produced.append(("tool", text, step.call.tool))
    return guard, produced


@given(sessions(max_result_tokens=WINDOW // 2), st.sampled_from(CONTEXT_PRESETS) | st.just(TOUCHY))
@example(REPEATS, TOUCHY)
@example(REREADS, "default")
def test_transcript_is_the_sequence_of_events(trace: Trace, preset: str | dict[str, Any]) -> None:
    note(dumps(trace))
    guard, produced = drive(trace, preset)
    transcript = [(e.role, e.text, e.tool) for e in guard.run.transcript]
    assert transcript == produced
    assert not any(e.replaced for e in guard.run.transcript)
    # the view is what engines rewrote; the transcript kept every full result the view dropped
    view_texts = [e.text for e in guard.run.view.entries]
    assert len(guard.run.transcript) >= len([t for t in view_texts if not t.startswith("[")])


def test_drive_sees_compactions_and_dedup() -> None:
    # the transcript property is only worth something if the view really was rewritten in those runs
    rewritten = warned = blocked = 0

    @given(sessions(max_result_tokens=WINDOW // 2))
    @example(REPEATS)
    def count(trace: Trace) -> None:
        nonlocal rewritten, warned, blocked
        guard, produced = drive(trace, TOUCHY)
        rewritten += any(e.replaced or e.role == "summary" for e in guard.run.view.entries)
        warned += any(role == "tool" and "Warning:" in text for role, text, _ in produced)
        blocked += any(role == "tool" and text.startswith("Error: Blocked") for role, text, _ in produced)

    count()
    assert rewritten > 0 and warned > 0 and blocked > 0


def test_orphans_finds_a_result_without_its_call() -> None:
    assistant = Entry("assistant", "browser_click({})", turn=0)
    result = Entry("tool", "ok", tool="browser_click", turn=0)
    assert orphans([assistant, result]) == []
    assert orphans([Entry("summary", "…"), result]) == [1]


def test_sessions_use_real_overflow_wording_every_preset_recognises() -> None:
    # the retry-bound property counts these strings as overflows: every preset's engine must agree
    for preset in CONTEXT_PRESETS:
        guard = Guard(resolve_policy(preset))
        engine: Any = guard.run.engines["context"]
        for error in lgst.OVERFLOW_ERRORS:
            assert engine.is_overflow(error), (preset, error)
        for error in lgst.TRANSIENT_ERRORS:
            assert not engine.is_overflow(error) and engine.is_transient(error), (preset, error)
