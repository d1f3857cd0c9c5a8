"""Recorder: header first, one line per step, loads back unchanged; a killed run loses at most its torn line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from planted_secrets import USER_RULE, assert_no_planted_secret, planted_payload

from pytest_loopguard.core._model import Done, LLMCall, Message, Step, Task, ToolCall, ToolResult
from pytest_loopguard.errors import LoopguardWarning
from pytest_loopguard.io._format import load, step_to_mapping
from pytest_loopguard.live._recorder import Recorder
from pytest_loopguard.live._redact import Redactor

STEPS = [
    Step(0, "message", message=Message("user", "fix the bug"), t=0),
    Step(1, "llm", llm=LLMCall(1200, 40, None, "let me look"), t=5),
    Step(2, "tool", call=ToolCall.of("read_file", {"path": "a.py", "range": [1, 20]}),
         result=ToolResult(text="x = 1", tokens=3), t=900),
    Step(3, "tool", call=ToolCall.of("run", {"cmd": "pytest"}), result=ToolResult.failure("1 failed"), t=1000),
    Step(4, "tool", call=ToolCall.of("run", {"cmd": "pytest"}), result=None, t=1200),  # blocked: no result
    Step(5, "phase", phase="verify", t=1300),
    Step(6, "llm", llm=LLMCall(error="rate limit"), t=1400),
    Step(7, "done", done=Done(True, "fixed"), t=2000),
]


def test_the_recording_loads_back_with_every_step_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    task = Task("fix the bug", "act", {"max_tool_calls": 10})
    with Recorder(path, name="run-1", policy="hermes", task=task, context={"window_tokens": 8000},
                  source={"agent": "my-agent"}, tags=["live"], max_turns=5) as rec:
        for step in STEPS:
            rec.write(step)
        assert rec.steps == len(STEPS)
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == len(STEPS) + 2  # header, a line per step, final newline
    header = json.loads(lines[0])
    assert header["source"] == {"kind": "recorded", "agent": "my-agent"} and "steps" not in header
    trace = load(path)
    assert (trace.name, trace.policy, trace.task, trace.max_turns) == ("run-1", "hermes", task, 5)
    assert trace.tags == ("live",)
    assert trace.context == {"window_tokens": 8000}
    assert [step_to_mapping(s) for s in trace.steps] == [step_to_mapping(s) for s in STEPS]
    assert trace.warnings == ()


def test_the_name_defaults_to_the_file_stem_and_an_existing_file_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "nightly.jsonl"
    Recorder(path).close()
    assert load(path).name == "nightly"
    with pytest.raises(FileExistsError, match=r"nightly\.jsonl: already exists"):
        Recorder(path)
    with Recorder(path, overwrite=True) as rec:
        rec.write(STEPS[0])
    assert len(load(path).steps) == 1


def test_a_recording_is_jsonl_and_a_closed_recorder_refuses_steps(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"a recording is a \.jsonl file"):
        Recorder(tmp_path / "run.yaml")
    rec = Recorder(tmp_path / "run.jsonl")
    rec.close()
    assert rec.closed
    with pytest.raises(ValueError, match="the recorder is closed"):
        rec.write(STEPS[0])


def test_no_planted_secret_survives_recording(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    payload = planted_payload()
    with Recorder(path, description=payload["note"], redactor=Redactor([USER_RULE])) as rec:
        rec.write(Step(0, "message", message=Message("user", payload["command"])))
        rec.write(Step(1, "llm", llm=LLMCall(text=payload["file"])))
        rec.write(Step(2, "tool", call=ToolCall.of("shell", payload), result=ToolResult(text=json.dumps(payload))))
        rec.write(Step(3, "tool", call=ToolCall.of("shell", payload), result=ToolResult.failure(payload["internal"])))
        rec.write(Step(4, "done", done=Done(False, payload["env"]["OPENAI_API_KEY"])))
    text = path.read_text(encoding="utf-8")
    assert_no_planted_secret(text)
    trace = load(path)
    # identities survive: the two calls with the same (secret-bearing) arguments are still the same call
    assert trace.steps[2].call == trace.steps[3].call
    assert trace.steps[2].call != ToolCall.of("shell", payload)
    assert "<redacted:openai-key:1>" in trace.steps[4].done.text  # type: ignore[union-attr]


def test_redact_false_writes_strings_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Recorder(path, redact=False) as rec:
        rec.write(Step(0, "message", message=Message("user", planted_payload()["command"])))
    with pytest.raises(AssertionError, match="planted secrets survived"):
        assert_no_planted_secret(path.read_text(encoding="utf-8"))


# The child records events through a real Recorder, then dies by SIGKILL. In the torn case the kill
# arrives in the middle of a line: os.write is wrapped so that the armed write puts half the line out
# and then the process kills itself (deterministic, no sleeps).
CHILD = textwrap.dedent("""
    import os, signal, sys
    from pytest_loopguard.core._model import Step, ToolCall, ToolResult
    from pytest_loopguard.live._recorder import Recorder

    path, complete, torn = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "torn"
    rec = Recorder(path, name="killed")
    for i in range(complete):
        rec.write(Step(i, "tool", call=ToolCall.of("click", {"index": i % 3}), result=ToolResult(text="x" * i)))
    if torn:
        real_write = os.write
        def half_then_die(fd, data):
            real_write(fd, bytes(data[: len(data) // 2]))
            os.kill(os.getpid(), signal.SIGKILL)
        os.write = half_then_die
        rec.write(Step(complete, "tool", call=ToolCall.of("click", {"index": 99}), result=ToolResult(text="y" * 500)))
    print(complete, flush=True)
    sys.stdin.read()  # wait here until the parent kills us
""")


@pytest.mark.parametrize("torn", [False, True], ids=["between-lines", "mid-line"])
def test_a_killed_run_keeps_every_complete_event(tmp_path: Path, torn: bool) -> None:
    path = tmp_path / "killed.jsonl"
    n = 7
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(n), "torn" if torn else "whole"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    if not torn:
        assert child.stdout.readline().strip() == str(n)  # every event is written: kill it now
        child.kill()
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    if torn:
        with pytest.warns(LoopguardWarning, match=rf"killed\.jsonl:{n + 2}: torn last line ignored"):
            trace = load(path)
        assert len(trace.warnings) == 1
    else:
        trace = load(path)
        assert trace.warnings == ()
    assert [s.call.args["index"] for s in trace.steps if s.call is not None] == [i % 3 for i in range(n)]
    assert [s.outcome.text for s in trace.steps] == ["x" * i for i in range(n)]
