"""Actions and outcomes are string-valued enums: every producer hands out members, every written form holds the
plain names (byte-identical to the strings of before), and user code comparing with strings keeps working."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from files import write

from pytest_loopguard import NOT_REACHED, Action, Outcome, Session, Verdict, load, replay, resolve_policy
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core._expect import check
from pytest_loopguard.core._model import (
    ACTIONS,
    LLM_ACTIONS,
    OUTCOMES,
    SEVERITY,
    TOOL_ACTIONS,
    NotReached,
    ReplayResult,
    StepResult,
    ToolCall,
    ToolResult,
    Trace,
    combine,
    plain,
)
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.engines.base import EngineSettings, SettingError
from pytest_loopguard.engines.loop_guard import Settings as LoopGuardSettings
from pytest_loopguard.errors import PolicyError
from pytest_loopguard.eval._diff import interventions
from pytest_loopguard.eval._runs import load_runs
from pytest_loopguard.io._format import dumps, load_file
from pytest_loopguard.io._golden import observed_trace
from pytest_loopguard.io._runner import execute
from pytest_loopguard.io._spec import STEP_ACTIONS
from pytest_loopguard.io._stream import replay_jsonl
from pytest_loopguard.report._document import report_entry
from pytest_loopguard.report._tables import json_entry, summary_table, timeline_table
from pytest_loopguard.runtime._policy import coerce_settings, preset_names

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "corpus" / "real"
STEP_ACTION_TYPES = (Action, NotReached)


# ---- the enums are the names the files write -------------------------------------------------------------


def test_the_members_are_the_names_traces_policies_and_reports_write() -> None:
    assert ACTIONS == ("allow", "warn", "block", "stop", "compact", "retry", "compact_retry", "fail")
    assert OUTCOMES == ("completed", "stopped", "failed", "exhausted", "incomplete")
    assert tuple(Action) == ACTIONS and tuple(Outcome) == OUTCOMES
    assert set(TOOL_ACTIONS) | set(LLM_ACTIONS) == set(Action)
    assert STEP_ACTIONS == (*ACTIONS, "not_reached") == (*Action, NOT_REACHED)
    assert set(SEVERITY) == set(Action)
    # the tuples are the written names themselves: a YAML dump (and the schema) takes them as they are
    assert all(type(name) is str for name in (*ACTIONS, *OUTCOMES, *TOOL_ACTIONS, *LLM_ACTIONS))


def test_a_member_is_the_string_user_code_compares_with() -> None:
    verdict = Verdict("loop_guard", Action.BLOCK, "loop_guard.consecutive_block")
    assert verdict.action == "block" and verdict.action == "block" and verdict.action != "warn"
    assert verdict.action in ("block", "stop") and {"block": 1}[verdict.action] == 1
    assert f"{verdict.action}" == str(verdict.action) == "block" and verdict.action.upper() == "BLOCK"
    assert hash(Outcome.STOPPED) == hash("stopped") and Outcome("stopped") is Outcome.STOPPED
    match verdict.action:
        case "block":
            pass
        case _:
            pytest.fail("a member matches its name")
    assert type(plain(Action.BLOCK)) is str and plain(Action.BLOCK) == "block"
    assert type(plain(NOT_REACHED)) is str and plain("block") == "block"


def test_a_plain_string_action_from_a_third_party_engine_still_works() -> None:
    """A plugin written before the enums returns `"stop"`: combined, ending the run and written as before."""

    class OldStyle:
        def __init__(self) -> None:
            self.calls = 0

        @hookimpl
        def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
            self.calls += 1
            return Verdict("old_style", "stop", "old_style.second") if self.calls == 2 else None  # type: ignore[arg-type]

    trace = Trace("old", steps=tuple(_tool_steps(3)))
    result = replay(trace, {"preset": "default", "loop_guard": False, "read_tracker": False}, plugins=[OldStyle()])
    assert [s.action for s in result.steps] == ["allow", "stop", "not_reached"]
    assert (result.outcome, result.stopped_at, result.stopped_by) == ("stopped", 1, "old_style")
    assert result.outcome is Outcome.STOPPED and result.steps[2].action is NOT_REACHED
    assert yaml.safe_load(yaml.safe_dump(result.to_dict()))["steps"][1]["action"] == "stop"
    assert combine([Verdict("x", "warn", "x.y"), Verdict("y", Action.BLOCK, "y.z")]) is Action.BLOCK  # type: ignore[arg-type]


def _tool_steps(n: int) -> Iterator[Any]:
    from pytest_loopguard.core._model import ToolStep

    for i in range(n):
        yield ToolStep(i, ToolCall.of("read_file", {"path": f"{i}.py"}), ToolResult(text="x"))


# ---- every producer hands out members ---------------------------------------------------------------------


def _assert_members(result: ReplayResult, where: str) -> None:
    assert type(result.outcome) is Outcome, where
    for step in result.steps:
        assert type(step.action) in STEP_ACTION_TYPES, f"{where} step {step.index}: {step.action!r}"
        for v in step.verdicts:
            assert type(v.action) is Action, f"{where} step {step.index}: {v!r}"


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, Trace]]:
    """Every trace under traces/ (scenarios included) and every run of the real corpus."""
    traces = [(f"{p.relative_to(ROOT)}::{t.name}", t) for p in sorted((ROOT / "traces").rglob("*.yaml"))
              if p.name != "loopguard-corpus.yaml" for t in load_file(p)]  # the corpus manifest is no trace
    real = [(f"real/{r.file}#{r.row}", r.trace) for r in load_runs([REAL], skip=[REAL / "labels.yaml"])]
    assert len(traces) > 150 and len(real) >= 17
    return traces + real


@pytest.mark.parametrize("preset", [None, *(n for n in preset_names() if n != "spacebot")])
def test_every_verdict_step_and_outcome_of_the_corpus_is_a_member(corpus: list[tuple[str, Trace]],
                                                                  preset: str | None) -> None:
    """Replayed (a scenario simulated) under every preset, and each trace file under its own policy."""
    policy = resolve_policy(preset) if preset is not None else None
    seen: set[str] = set()
    for where, trace in corpus:
        if preset is None and where.startswith("real/"):
            continue  # a real run names no policy of its own: the default preset, replayed above
        result = execute(trace, policy)
        _assert_members(result, f"{where} under {preset or 'its own policy'}")
        seen.update(v.action for s in result.steps for v in s.verdicts)
    if preset == "default":
        assert {"warn", "block", "stop"} <= seen  # the check saw verdicts of each tool action


def test_a_live_session_and_its_streamed_replay_hand_out_members(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    with Session("default", record=path, now_ms=None) as session:
        call = ToolCall.of("run", {"cmd": "pytest -x"})
        while not session.ended:
            decision = session.before_call(call)
            assert type(decision.action) is Action
            session.after_call(call, ToolResult(ok=False, text="1 failed", exit_code=1) if decision.runs else None)
    assert type(session.outcome) is Outcome and session.outcome == "stopped"
    assert all(type(s.action) in STEP_ACTION_TYPES for s in session.steps)
    assert {type(v.action) for s in session.steps for v in s.verdicts} == {Action}
    streamed = replay_jsonl(path)
    assert streamed is not None and type(streamed.result.outcome) is Outcome
    assert streamed.result.counts() == replay(load(path)).counts()
    assert all(type(k) is str for k in streamed.result.counts())


def test_policy_values_become_members_and_code_settings_too() -> None:
    assert resolve_policy("spacebot").settings("loop_guard").warn_action is Action.BLOCK  # `warn_action: block`
    assert resolve_policy("default").settings("loop_guard").warn_action is Action.WARN
    overridden = resolve_policy({"preset": "default", "loop_guard": {"warn_action": "block"}})
    assert overridden.settings("loop_guard").warn_action is Action.BLOCK
    assert LoopGuardSettings(warn_action="block").warn_action is Action.BLOCK  # type: ignore[arg-type]
    with pytest.raises(SettingError, match="warn_action: expected one of 'warn', 'block', got 'stop'"):
        LoopGuardSettings(warn_action="stop")  # type: ignore[arg-type]
    # the data form is the file's: plain names, so it dumps
    assert yaml.safe_dump(overridden.to_dict()).count("warn_action: block") == 1


@dataclass(frozen=True)
class _ChoosesAnAction(EngineSettings):  # a plugin engine's settings: no __post_init__ of its own
    on_repeat: Literal[Action.WARN, Action.BLOCK] = Action.WARN


def test_a_setting_whose_choices_are_members_reads_the_names_as_members() -> None:
    settings = coerce_settings(_ChoosesAnAction, {"on_repeat": "block"}, field="mine")
    assert settings.on_repeat is Action.BLOCK
    expected = r"^policy field 'mine.on_repeat': expected one of 'warn', 'block', got 'Block'$"
    with pytest.raises(PolicyError, match=expected):
        coerce_settings(_ChoosesAnAction, {"on_repeat": "Block"}, field="mine")


def test_an_unknown_action_name_in_a_policy_file_is_the_one_line_error_of_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "bad.yaml", "preset: default\nloop_guard: {warn_action: stop}\n")
    write(tmp_path, "t.yaml", "loopguard: 1\nname: t\npolicy: bad.yaml\nsteps:\n  - {tool: a}\n")
    assert cli.main(["run", str(tmp_path / "t.yaml")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"loopguard: error: {tmp_path / 't.yaml'}: field 'policy': {tmp_path / 'bad.yaml'}: policy field "
        "'loop_guard.warn_action': expected one of 'warn', 'block', got 'stop'",
        "loopguard: 1 bad input",
    ]


# ---- every written form holds the plain names --------------------------------------------------------------


def _plain_strings(value: Any) -> Iterator[Any]:
    """Every string in nested data, keys included."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _plain_strings(k)
            yield from _plain_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _plain_strings(v)
    elif isinstance(value, str):
        yield value


@pytest.fixture(scope="module")
def stopped() -> ReplayResult:
    """A replay with warn, block and stop verdicts, an outcome and not-reached steps."""
    trace = load_file(ROOT / "traces" / "loop_guard" / "default_consecutive_stop.yaml")[0]
    result = replay(trace)
    assert {"warn", "block", "stop", "not_reached"} <= set(result.counts()), result.counts()
    return result


def test_data_forms_hold_exact_strings_and_dump_to_yaml_json_and_jsonl(stopped: ReplayResult) -> None:
    forms: dict[str, Any] = {
        "to_dict": stopped.to_dict(),
        "counts": stopped.counts(),
        "json_entry": json_entry(stopped, check(stopped)),
        "report_entry": report_entry(stopped, check(stopped), ("loop_guard",)),
        "interventions": [i.to_dict() for i in interventions(stopped)],
    }
    for name, form in forms.items():
        assert all(type(s) is str for s in _plain_strings(form)), name  # no member left in any of them
        assert yaml.safe_load(yaml.safe_dump(form)) == json.loads(json.dumps(form)), name
    steps = stopped.to_dict()["steps"]
    jsonl = "".join(json.dumps(s) + "\n" for s in steps)
    assert [json.loads(line)["action"] for line in jsonl.splitlines()] == [s.action for s in stopped.steps]
    assert all(type(m.got) is str for m in check(stopped, strict=True))


def test_json_writes_a_member_as_the_string_of_before(stopped: ReplayResult) -> None:
    """The bytes `replay --json` and the reports print are those of the same data with plain strings."""
    as_strings = {**stopped.to_dict(), "outcome": str(stopped.outcome)}
    assert json.dumps(stopped.to_dict()) == json.dumps(as_strings)
    assert json.dumps({Action.BLOCK: Outcome.STOPPED}) == '{"block": "stopped"}'
    assert '"outcome": "stopped"' in json.dumps(stopped.to_dict()) and "Outcome." not in json.dumps(stopped.to_dict())


def test_a_snapshot_update_writes_plain_expectations(stopped: ReplayResult) -> None:
    observed = observed_trace(stopped.trace, stopped)
    assert observed.expect is not None and type(observed.expect.outcome) is str
    assert all(type(s.expect.action) is str for s in observed.steps if s.expect is not None)
    text = dumps(observed, "yaml")  # the YAML writer takes exact strings only
    assert "outcome: stopped" in text and "action: block" in text and "Action" not in text


def test_tables_render_members_as_their_names(stopped: ReplayResult) -> None:
    """The fast table writer takes a member as the string it is (not tabulate's fallback): same text."""
    summary = summary_table([(stopped, [])])
    assert " stopped " in summary and "Outcome" not in summary
    timeline = timeline_table(stopped)
    assert "not_reached" in timeline and "Action" not in timeline
    from pytest_loopguard.report._console import plain_table

    rows: list[list[str]] = [[Action.BLOCK, Outcome.STOPPED], ["warn", "completed"]]
    assert plain_table(rows, ["action", "outcome"]) == plain_table([[str(c) for c in r] for r in rows],
                                                                   ["action", "outcome"])


def test_a_step_result_repr_names_the_member() -> None:
    text = repr(StepResult(0, "tool", "a", Action.BLOCK))
    assert "Action.BLOCK" in text
    buffer = io.StringIO()
    print(StepResult(0, "tool", "a", NOT_REACHED).action, file=buffer)
    assert buffer.getvalue() == "not_reached\n"
