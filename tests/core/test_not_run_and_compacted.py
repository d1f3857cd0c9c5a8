"""Issue 19's format additions: a tool call that never ran (`denied`, `cancelled`) and the log's own `compacted`
step. Loaded (every bad form one line naming file, line, step and field), dumped byte-stable, validated by the
schema, and replayed like a blocked call that no engine blocked: counted before the call, never after it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from viewpage import page_data

from pytest_loopguard import strategies as lgst
from pytest_loopguard.core._model import (
    CompactedStep,
    Compaction,
    NotRun,
    ReplayResult,
    Step,
    ToolCall,
    ToolResult,
    ToolStep,
    Trace,
)
from pytest_loopguard.errors import TraceError
from pytest_loopguard.io._format import dumps, load, load_file, loads
from pytest_loopguard.io._schema import trace_schema
from pytest_loopguard.io._stream import replay_jsonl
from pytest_loopguard.runtime._guard import Guard
from pytest_loopguard.runtime._policy import resolve_policy
from pytest_loopguard.runtime._protocol import Run
from pytest_loopguard.runtime._replay import replay

GOOD = """\
loopguard: 1
name: additions
steps:
  - tool: bash
    args: {command: git commit -m wip}
    denied: {reason: The user doesn't want to proceed with this tool use, by: user}
  - tool: bash
    args: {command: rm -rf build}
    denied: {reason: blocked by a permission rule, by: rule}
  - tool: read_file
    args: {path: a.py}
    denied: {reason: refused}
  - tool: read_file
    args: {path: b.py}
    cancelled: {reason: a sibling call failed}
  - compacted: {trigger: auto, tokens_before: 155000, text: the summary}
  - compacted: {}
  - compacted: null
  - tool: read_file
    args: {path: c.py}
    denied: null
    result: {text: x}
"""


def test_the_additions_load_as_typed_values() -> None:
    [trace] = loads(GOOD, fmt="yaml")
    s = trace.steps
    assert [x.kind for x in s] == ["tool"] * 4 + ["compacted"] * 3 + ["tool"]
    assert s[0].not_run == NotRun("denied", "The user doesn't want to proceed with this tool use", "user")
    assert s[1].not_run == NotRun("denied", "blocked by a permission rule", "rule")
    assert s[2].not_run == NotRun("denied", "refused") and s[3].not_run == NotRun("cancelled", "a sibling call failed")
    assert all(x.result is None for x in s[:4])
    assert s[4].compacted == Compaction("auto", 155_000, "the summary")
    assert s[5].compacted == s[6].compacted == Compaction()
    assert s[7].not_run is None and s[7].result == ToolResult(text="x")  # `denied: null` is absent


def test_the_labels_reports_show() -> None:
    [trace] = loads(GOOD, fmt="yaml")
    labels = [x.label(60) for x in trace.steps]
    assert labels == [
        'denied by user: bash {"command":"git commit -m wip"}',
        'denied by rule: bash {"command":"rm -rf build"}', 'denied: read_file {"path":"a.py"}',
        'cancelled: read_file {"path":"b.py"}', "compacted (auto, 155,000 tokens)", "compacted", "compacted",
        'read_file {"path":"c.py"}']
    assert trace.steps[0].label(30) == 'denied by user: bash {"comman…'
    assert CompactedStep(0, Compaction("manual", 12)).label() == "compacted (manual, 12 tokens)"


BAD: list[tuple[str, str, str]] = [  # a step, the field named, a phrase of what was expected
    ('{"tool": "a", "denied": {"reason": "no"}, "result": {"ok": true}}', "result", "has no result"),
    ('{"tool": "a", "cancelled": {"reason": "x"}, "result": {"text": "t"}}', "result", "has no result"),
    ('{"tool": "a", "denied": {"reason": "no"}, "cancelled": {"reason": "x"}}', "cancelled", "not both"),
    ('{"tool": "a", "denied": {"reason": "no", "by": "robot"}}', "denied.by", "expected one of user, rule"),
    ('{"tool": "a", "denied": {"by": "user"}}', "denied.reason", "missing 'reason'"),
    ('{"tool": "a", "denied": {"reason": ""}}', "denied.reason", "non-empty string"),
    ('{"tool": "a", "denied": "no"}', "denied", "expected a mapping"),
    ('{"tool": "a", "cancelled": {"reason": "x", "by": "user"}}', "cancelled.by", "unknown key 'by'"),
    ('{"tool": "a", "cancelled": {}}', "cancelled.reason", "missing 'reason'"),
    ('{"compacted": {"tokens_before": -1}}', "compacted.tokens_before", "integer ≥ 0"),
    ('{"compacted": {"tokens_before": 1.5}}', "compacted.tokens_before", "integer ≥ 0"),
    ('{"compacted": {"trigger": "sometimes"}}', "compacted.trigger", "expected one of auto, manual"),
    ('{"compacted": {"text": 3}}', "compacted.text", "expected a string"),
    ('{"compacted": {"tokens": 3}}', "compacted.tokens", "unknown key"),
    ('{"compacted": [1]}', "compacted", "expected a mapping"),
    ('{"compacted": {}, "tool": "a"}', None, "exactly one of"),
    ('{"llm": {}, "denied": {"reason": "no"}}', "denied", "unknown key 'denied'"),
    ('{"compacted": {}, "args": {}}', "args", "unknown key 'args'"),
]


@pytest.mark.parametrize(("step", "field", "expected"), BAD, ids=[b[0] for b in BAD])
@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_each_bad_form_is_one_line_naming_file_line_step_and_field(
        step: str, field: str | None, expected: str, fmt: str, tmp_path: Path) -> None:
    header = '{"loopguard": 1, "name": "bad"}'
    ok = '{"tool": "ls"}'
    if fmt == "jsonl":
        path = tmp_path / "bad.jsonl"
        path.write_text(f"{header}\n{ok}\n{step}\n", encoding="utf-8")
    else:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({**json.loads(header), "steps": [json.loads(ok), json.loads(step)]}, indent=1))
    with pytest.raises(TraceError) as caught:
        load(path)
    text = str(caught.value)
    assert "\n" not in text and str(path) in text and "step 1" in text and expected in text, text
    if field is not None:
        assert f"field '{field}'" in text, text
    if fmt == "jsonl":
        assert f"{path}:3" in text, text  # the line of the step


@pytest.mark.parametrize("fmt", ["yaml", "json", "jsonl"])
def test_dump_round_trips_byte_stable(fmt: str, tmp_path: Path) -> None:
    [trace] = loads(GOOD, fmt="yaml")
    text = dumps(trace, fmt)
    path = tmp_path / f"t.{fmt}"
    path.write_text(text, encoding="utf-8")
    again = load(path)  # a JSONL file's lines go through the fast reader (denied lines fall back to the full one)
    assert dumps(again, fmt) == text
    assert [dataclasses.replace(s, line=None).not_run if isinstance(s, ToolStep) else None for s in again.steps] == [
        s.not_run if isinstance(s, ToolStep) else None for s in trace.steps]
    assert [s.compacted for s in again.steps] == [s.compacted for s in trace.steps]


def test_the_schema_validates_the_additions_and_refuses_what_the_loader_refuses() -> None:
    validator = jsonschema.Draft202012Validator(trace_schema())
    good = yaml.safe_load(GOOD)
    assert not list(validator.iter_errors(good))
    for step, _field, _expected in BAD:
        document = {"loopguard": 1, "name": "bad", "steps": [json.loads(step)]}
        assert not validator.is_valid(document), step


# ---- replay ---------------------------------------------------------------------------------------------
def _trace(*steps: dict[str, Any], policy: Any = "default", **header: Any) -> Trace:
    [trace] = loads(json.dumps({"loopguard": 1, "name": "t", "policy": policy, "steps": list(steps), **header}),
                    fmt="json")
    return trace


def _actions(result: ReplayResult) -> list[str]:
    return [s.action for s in result.steps]


DENIED = {"denied": {"reason": "no", "by": "user"}}
CANCELLED = {"cancelled": {"reason": "sibling failed"}}


def test_the_loop_guard_counts_denied_repeats_a_threshold_4_rule_trips_on_the_first_real_one() -> None:
    policy = {"preset": "default", "loop_guard": {"warn_at": 3, "block_at": 4}}
    call = {"tool": "bash", "args": {"command": "git commit -m wip"}}
    got = replay(_trace({**call, **DENIED}, {**call, **DENIED}, {**call, **CANCELLED}, call, policy=policy))
    assert _actions(got) == ["allow", "allow", "warn", "block"]
    assert got.steps[2].verdicts[0].reason == "loop_guard.consecutive_warning"  # a not-run call's verdicts are kept
    assert got.steps[3].verdicts[0].reason == "loop_guard.consecutive_block"
    # without the calls that never ran the same call is a first call
    assert _actions(replay(_trace(call, policy=policy))) == ["allow"]


def _fail(n: int) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": f"make {n}"}, "result": {"error": "boom"}}


FAILURES = {"preset": "default", "failure_tracker": {"max_failures": 3, "final_response_after_failure": False}}


def test_the_failure_streak_is_neither_reset_nor_extended_by_calls_that_never_ran() -> None:
    not_run = [{"tool": "bash", "args": {"command": f"deploy {i}"}, **how} for i, how in
               enumerate((DENIED, CANCELLED))]
    # not reset: two failures, calls that never ran, a third failure: the streak of 3 stops the run
    got = replay(_trace(_fail(1), _fail(2), *not_run, _fail(3), policy=FAILURES))
    assert (got.outcome, got.stopped_at, got.stopped_by) == ("stopped", 4, "failure_tracker")
    # not extended: two failures and calls that never ran are no streak of 3
    assert replay(_trace(_fail(1), _fail(2), *not_run, policy=FAILURES)).outcome == "incomplete"
    # a blocked-and-ran call would have reset it: a success between failures does
    ok = {"tool": "bash", "args": {"command": "true"}, "result": {"ok": True}}
    assert replay(_trace(_fail(1), _fail(2), ok, _fail(3), policy=FAILURES)).outcome == "incomplete"


def test_the_budget_counts_calls_that_never_ran() -> None:
    task = {"objective": "x", "budget": {"max_tool_calls": 2}}
    call = {"tool": "read_file", "args": {"path": "a.py"}}
    got = replay(_trace({**call, **DENIED}, {"tool": "ls", **CANCELLED}, {"tool": "pwd"}, task=task))
    assert _actions(got)[2] == "block" and got.steps[2].verdicts[0].reason == "budget.max_tool_calls"
    assert _actions(replay(_trace({"tool": "pwd"}, task=task))) == ["allow"]


def test_a_call_the_guard_blocks_is_a_normal_block_whether_or_not_it_was_denied() -> None:
    task = {"objective": "x", "budget": {"max_tool_calls": 1}}
    plain = replay(_trace({"tool": "ls"}, {"tool": "pwd"}, {"tool": "cat"}, task=task))
    denied = replay(_trace({"tool": "ls"}, {"tool": "pwd", **DENIED}, {"tool": "cat"}, task=task))
    assert _actions(plain) == _actions(denied) == ["allow", "block", "block"]
    assert [s.verdicts for s in plain.steps] == [s.verdicts for s in denied.steps]


def test_a_denied_done_call_does_not_complete_the_run() -> None:
    assert replay(_trace({"tool": "done", **DENIED})).outcome == "incomplete"
    assert replay(_trace({"tool": "done"})).outcome == "completed"


def _feed(steps: tuple[Step, ...]) -> Guard:
    guard = Guard(resolve_policy("default"), keep_transcript=True)
    run = Run(guard)
    run.feed_all(steps)
    run.close()
    return guard


def test_a_call_that_never_ran_leaves_no_result_in_the_prompt_view_and_fires_no_after_call_hook() -> None:
    calls = [ToolStep(0, ToolCall.of("read_file", {"path": "a.py"}), ToolResult(text="A")),
             ToolStep(1, ToolCall.of("read_file", {"path": "b.py"}), not_run=NotRun("denied", "no", "user")),
             ToolStep(2, ToolCall.of("read_file", {"path": "c.py"}), not_run=NotRun("cancelled", "x"))]
    guard = _feed(tuple(calls))
    tools = [e for e in guard.run.transcript if e.role == "tool"]
    assert [e.text for e in tools] == ["A"] and guard.run.calls == 3
    seen: list[ToolCall] = []

    class Witness:
        name = "witness"

        def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> None:
            seen.append(call)

    from pytest_loopguard.core.hookspecs import hookimpl
    Witness.loopguard_after_call = hookimpl(Witness.loopguard_after_call)  # type: ignore[method-assign]
    trace = Trace("t", tuple(calls))
    replay(trace, plugins=[Witness()])
    assert seen == [calls[0].call]


def test_a_compacted_step_reaches_no_engine_and_ends_no_turn() -> None:
    steps = _trace({"llm": {}}, {"tool": "ls"}, {"compacted": {"trigger": "manual"}}, {"tool": "ls"},
                   {"tool": "ls"}, policy={"preset": "default", "loop_guard": {"warn_at": 3}}).steps
    guard = _feed(steps)
    assert guard.run.turns == 1 and guard.run.calls == 3
    assert _actions(replay(Trace("t", steps, policy={"preset": "default", "loop_guard": {"warn_at": 3}}))) == [
        "allow", "allow", "allow", "allow", "warn"]


@pytest.mark.parametrize("policy", ["default", "hermes", "openhands", "browser-use", "roo"])
def test_streamed_replay_equals_in_memory_replay(policy: str, tmp_path: Path) -> None:
    [good] = loads(GOOD, fmt="yaml")
    call = {"tool": "bash", "args": {"command": "pytest"}}
    extra = _trace({"llm": {"input_tokens": 10}}, {**call, **DENIED}, {**call, **CANCELLED},
                   {"compacted": {"trigger": "auto"}}, {**call, "result": {"error": "1 failed"}}, _fail(1),
                   {**call, **DENIED}, {"llm": {}}, call, call, {"tool": "done"})
    for trace in (good, extra):
        path = tmp_path / f"{trace.name}-{id(trace)}.jsonl"
        path.write_text(dumps(trace, "jsonl"), encoding="utf-8")
        full = replay(load_file(path)[0], policy)
        streamed = replay_jsonl(path, policy)
        assert streamed is not None
        got = streamed.result
        assert (got.outcome, got.stopped_at, got.stopped_by, got.counts()) == (
            full.outcome, full.stopped_at, full.stopped_by, full.counts())


def test_replay_json_names_the_kind_and_the_call_that_never_ran() -> None:
    [trace] = loads(GOOD, fmt="yaml")
    steps = replay(trace).to_dict()["steps"]
    assert steps[0]["not_run"] == {"how": "denied", "reason": "The user doesn't want to proceed with this tool use",
                                   "by": "user"}
    assert steps[3]["not_run"] == {"how": "cancelled", "reason": "a sibling call failed"}
    assert steps[4]["kind"] == "compacted" and steps[4]["compacted"] == {
        "trigger": "auto", "tokens_before": 155000, "text": "the summary"}
    assert "not_run" not in steps[7] and steps[4]["action"] == "allow"


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(trace=lgst.traces(kinds=("tool", "llm", "message", "rejected"), expectations=False, additions=True),
       where=st.lists(st.integers(0, 40), max_size=4))
def test_inserting_compacted_steps_anywhere_never_changes_a_verdict(trace: Trace, where: list[int]) -> None:
    steps: list[Step] = list(trace.steps)
    for at in where:
        steps.insert(min(at, len(steps)), CompactedStep(0, Compaction("auto", 10)))
    placed = tuple(dataclasses.replace(s, index=i) for i, s in enumerate(steps))
    before = replay(trace)
    after = replay(dataclasses.replace(trace, steps=placed))
    kept = [r for r, s in zip(after.steps, placed, strict=True) if s.kind != "compacted"]
    assert [(r.action, r.verdicts) for r in kept] == [(r.action, r.verdicts) for r in before.steps]
    assert (after.outcome, after.stopped_by) == (before.outcome, before.stopped_by)
    assert all(r.action in ("allow", "not_reached") and not r.verdicts
               for r, s in zip(after.steps, placed, strict=True) if s.kind == "compacted")


# ---- the live Session -------------------------------------------------------------------------------------
def test_session_not_run_is_counted_recorded_and_replays_to_the_same_verdicts(tmp_path: Path) -> None:
    from pytest_loopguard.live._session import Session

    policy = {"preset": "default", "loop_guard": {"warn_at": 3, "block_at": 4}}
    path = tmp_path / "live.jsonl"
    call = ToolCall.of("bash", {"command": "git commit -m wip"})
    with Session(policy, record=path, now_ms=None) as session:
        decisions = []
        for how, by in (("denied", "user"), ("denied", "rule"), ("cancelled", None)):
            assert session.before_call(call).runs
            decisions.append(session.not_run(call, how, "refused", by=by))  # type: ignore[arg-type]
        session.compacted("auto", 1200, "summary")
        assert session.before_call(call).action == "block"
        session.after_call(call, None)
    assert [d.action for d in decisions] == ["allow", "allow", "warn"]
    live = [(s.kind, s.action, s.verdicts) for s in session.steps]
    recorded = load(path)
    assert [s.not_run for s in recorded.steps[:3]] == [
        NotRun("denied", "refused", "user"), NotRun("denied", "refused", "rule"), NotRun("cancelled", "refused")]
    assert recorded.steps[3].compacted == Compaction("auto", 1200, "summary")
    again = replay(recorded)
    assert [(s.kind, s.action, s.verdicts) for s in again.steps] == live
    assert [s.action for s in again.steps] == ["allow", "allow", "warn", "allow", "block"]


def test_session_feed_of_a_trace_with_the_additions_gives_replays_verdicts() -> None:
    from pytest_loopguard.live._session import Session

    [trace] = loads(GOOD, fmt="yaml")
    with Session("default", now_ms=None) as session:
        session.feed(trace.steps)
    assert [(s.kind, s.action, s.verdicts) for s in session.steps] == [
        (s.kind, s.action, s.verdicts) for s in replay(trace, "default").steps]


def test_session_refuses_a_malformed_not_run_or_compaction() -> None:
    from pytest_loopguard.errors import SessionError
    from pytest_loopguard.live._session import Session

    call = ToolCall.of("ls")
    with Session("default", now_ms=None) as session:
        with pytest.raises(SessionError, match="without its before_call"):
            session.not_run(call, "denied", "no")
        session.before_call(call)
        for how, reason, by, match in (("skipped", "x", None, "unknown way"), ("cancelled", "x", "user", "`by`"),
                                       ("denied", "x", "robot", "`by`"), ("denied", "", None, "needs a reason")):
            with pytest.raises(ValueError, match=match):
                session.not_run(call, how, reason, by=by)  # type: ignore[arg-type]
        session.not_run(call, "denied", "no")
        with pytest.raises(ValueError, match="trigger"):
            session.compacted("sometimes")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="tokens_before"):
            session.compacted(tokens_before=-1)


# ---- reports -------------------------------------------------------------------------------------------------
def test_console_markdown_and_html_timelines_label_them() -> None:
    from pytest_loopguard.report._document import report_document, report_entry
    from pytest_loopguard.report._html import render_html
    from pytest_loopguard.report._markdown import render_markdown
    from pytest_loopguard.report._tables import timeline_table

    [trace] = loads(GOOD, fmt="yaml")
    result = replay(trace)
    console = timeline_table(result)
    for label in ("denied by user: bash", "denied by rule: bash", "cancelled: read_file",
                  "compacted (auto, 155,000 tokens)"):
        assert label in console, console
    document = report_document([report_entry(result, [], ["loop_guard"])], {})
    assert [s.get("not_run") for s in document["traces"][0]["steps"]][:4] == ["denied"] * 3 + ["cancelled"]
    markdown = render_markdown(document)
    assert "`....\\|\\|\\|.`" in markdown and "`|` the agent compacted its context" in markdown
    assert "step 3: cancelled: read_file" in markdown and "step 4: compacted (auto, 155,000 tokens)" in markdown
    html = render_html(document)
    (run,) = page_data(html)["runs"]  # the step viewer's data
    assert [s.get("not_run") for s in run["steps"]].count({"how": "denied"}) == 3
    assert sum(1 for s in run["steps"] if "compacted" in s) == 3
    assert '<p class="events">step 0: denied by user: bash' in html
    # a report of older traces is as it was: no legend entry, no section, nothing marked
    [plain] = loads("loopguard: 1\nname: p\nsteps: [{tool: ls}]\n", fmt="yaml")
    old = report_document([report_entry(replay(plain), [], [])], {})
    assert "compacted" not in render_markdown(old)
    assert not any("not_run" in s or "compacted" in s for s in page_data(render_html(old))["runs"][0]["steps"])


# ---- eval ----------------------------------------------------------------------------------------------------
def _compacting_run(tmp_path: Path) -> Path:
    steps: list[dict[str, Any]] = []
    for i in range(6):
        steps.append({"llm": {"input_tokens": 2000 + i * 3000, "output_tokens": 10}})
        steps.append({"tool": "read_file", "args": {"path": f"f{i}.py"}, "result": {"text": "x" * 400}})
        if i == 3:
            steps.append({"compacted": {"trigger": "auto", "tokens_before": 11000}})
    path = tmp_path / "compacting.json"
    path.write_text(json.dumps({"loopguard": 1, "name": "c", "context": {"window_tokens": 16000}, "steps": steps}))
    return path


def test_eval_shows_the_logs_compactions_beside_the_policys(tmp_path: Path) -> None:
    from pytest_loopguard.cli._eval_tables import render
    from pytest_loopguard.eval._runs import load_runs
    from pytest_loopguard.eval._score import score_policy

    path = _compacting_run(tmp_path)
    (tmp_path / "plain.yaml").write_text("loopguard: 1\nname: p\nsteps: [{tool: ls}]\n")
    runs = load_runs([tmp_path])
    scores = [score_policy(resolve_policy(n), runs, {}, name=n) for n in ("default", "hermes")]
    [compacting] = [r for r in scores[0].runs if r.run.file == path]
    # the log compacted before call 4 (after 4 calls); default compacted at the model calls before calls 4 and 5
    assert compacting.compacted == (4,) and compacting.compacts == (4, 5)
    assert compacting.to_dict()["compactions"] == {"log": [4], "policy": [4, 5]}
    assert all("compactions" not in r.to_dict() for r in scores[0].runs if r is not compacting)
    text = render(scores)
    assert "log compacted at call" in text and "default compacts at" in text and "hermes compacts at" in text
    [row] = [line for line in text.splitlines() if str(path) in line]
    assert row.split()[1:3] == ["4", "4,"], row
    # runs without compactions: no table at all
    assert "log compacted" not in render([score_policy(resolve_policy("default"), runs[1:], {}, name="default")])


def test_the_turn_counts_a_call_that_never_ran_as_one_without_a_result() -> None:
    # engines that place a call in its turn (the stuck detector's once-per-response check) read turn.results
    denied = ToolCall.of("bash", {"command": "rm -rf /"})
    ran = ToolCall.of("ls")
    steps = _trace({"llm": {}}, {"tool": "bash", "args": {"command": "rm -rf /"}, **DENIED},
                   {"tool": "ls", "result": {"text": "a"}}).steps
    guard = Guard(resolve_policy("openhands-sdk"))
    Run(guard).feed_all(steps)
    turn = guard.run.turn
    assert turn is not None and turn.calls == (denied, ran) and turn.results == [None, ToolResult(text="a")]
