"""`loopguard serve` gives exactly replay's verdicts: every bundled trace fed through the guard protocol by a client
(the external engine, over a real pipe to the real command) replays to the same steps, verdicts and outcome as the
built-in engines, under every preset; a live client's recording replays to the verdicts it was given; and every
message on the pipe is one the protocol's schema accepts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from bundled import bundled_traces

from pytest_loopguard import replay
from pytest_loopguard.core._model import ReplayResult, ToolCall
from pytest_loopguard.core._wire import call_mapping, verdicts_from_reply
from pytest_loopguard.engines._pipe import GuardProcess
from pytest_loopguard.importers import import_traces
from pytest_loopguard.io import load_file
from pytest_loopguard.io._protocol_schema import protocol_schema
from pytest_loopguard.live import GuardServer
from pytest_loopguard.runtime import preset_names

REPO = Path(__file__).resolve().parents[2]
SESSIONS = REPO / ".." / "shared" / "corpus" / "sessions"
SERVE = [sys.executable, "-m", "pytest_loopguard.cli", "serve"]
TEE = str(Path(__file__).parent / "guards" / "tee_serve.py")


TRACES = list(bundled_traces())
PRESETS = preset_names()


def served(preset: str, command: list[str] | None = None) -> dict[str, Any]:
    """`preset`'s tool table, its engines replaced by `loopguard serve` over a pipe, told at each run_start to
    follow `preset` (one process serves every preset's runs: the pool keys on the command)."""
    return {"name": preset, "extends": preset,
            "external": {"command": command or SERVE, "instead": True, "timeout_s": 30, "policy": preset}}


def timeline(r: ReplayResult) -> list[Any]:
    return [(r.outcome, r.stopped_at, r.stopped_by)] + [(s.index, s.action, s.verdicts) for s in r.steps]


def test_the_bundled_traces_are_many_and_cover_every_step_kind() -> None:
    kinds = {s.kind for t in TRACES for s in t.steps}
    assert len(TRACES) >= 150
    assert {"tool", "llm", "message", "phase", "done", "rejected"} <= kinds


@pytest.mark.parametrize("preset", PRESETS)
def test_serve_gives_replays_verdicts_on_a_share_of_the_traces(preset: str) -> None:
    # every bundled trace once, across the presets (the full product is the slow test below)
    share = TRACES[PRESETS.index(preset)::len(PRESETS)]
    assert share
    for trace in share:
        assert timeline(replay(trace, served(preset))) == timeline(replay(trace, preset)), trace.name


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_serve_gives_replays_verdicts_on_every_trace(preset: str) -> None:
    for trace in TRACES:
        assert timeline(replay(trace, served(preset))) == timeline(replay(trace, preset)), trace.name


DENIED = """
loopguard: 1
name: denied-and-cancelled
steps:
  - message: {role: user, text: clean the build folder, origin: user}
  - llm: {input_tokens: 900, output_tokens: 40}
  - {tool: shell, args: {command: rm -rf build}, denied: {reason: the user refused, by: user}}
  - llm: {input_tokens: 950, output_tokens: 40}
  - {tool: shell, args: {command: rm -rf build}, denied: {reason: not allowed by rule Bash(rm:*), by: rule}}
  - {tool: read_file, args: {path: Makefile}, cancelled: {reason: an earlier call of the batch failed}}
  - llm: {input_tokens: 990, output_tokens: 40}
  - {tool: shell, args: {command: rm -rf build}, denied: {reason: the user refused, by: user}}
  - llm: {input_tokens: 1020, output_tokens: 40}
  - {tool: shell, args: {command: rm -rf build}, denied: {reason: the user refused, by: user}}
  - llm: {input_tokens: 1050, output_tokens: 40}
  - {tool: shell, args: {command: rm -rf build}, result: {ok: true}}
  - llm: {input_tokens: 1080, output_tokens: 40}
  - {tool: shell, args: {command: rm -rf build}, denied: {reason: the user refused}}
"""


@pytest.mark.parametrize("preset", ["default", *(pytest.param(p, marks=pytest.mark.slow)
                                                  for p in ("claw-code", "gemini-cli", "openhands"))])
def test_serve_matches_replay_on_real_sessions_and_on_calls_that_never_ran(preset: str, tmp_path: Path) -> None:
    traces = [t for log in ("claude-code/spotter-fa812bfe.jsonl", "codex/localpush-rollout-2026-02-23T12-40-23.jsonl")
              for t in import_traces(SESSIONS / log)]
    (tmp_path / "denied.yaml").write_text(DENIED, encoding="utf-8")
    traces += load_file(tmp_path / "denied.yaml")
    kinds = {("not_run" if s.not_run is not None else s.kind) for t in traces for s in t.steps}
    assert {"not_run", "compacted", "llm", "tool", "message"} <= kinds  # the cases this test is for
    for trace in traces:
        assert timeline(replay(trace, served(preset))) == timeline(replay(trace, preset)), trace.name


def test_every_message_on_the_pipe_is_one_the_schema_accepts(tmp_path: Path) -> None:
    log = tmp_path / "pipe.log"
    validator = jsonschema.Draft202012Validator(protocol_schema())
    request = {"$ref": "#/$defs/request", "$defs": protocol_schema()["$defs"]}
    reply = {"$ref": "#/$defs/reply", "$defs": protocol_schema()["$defs"]}
    (tmp_path / "denied.yaml").write_text(DENIED, encoding="utf-8")
    for trace in [*TRACES[::12], *load_file(tmp_path / "denied.yaml")]:
        replay(trace, served("default", [sys.executable, TEE, str(log), "default"]))
    lines = log.read_text(encoding="utf-8").splitlines()
    ops = {json.loads(line[2:])["op"] for line in lines if line.startswith("> ")}
    assert {"hello", "run_start", "turn_start", "before_call", "after_call", "before_llm", "llm_result",
            "turn_end", "message", "not_run", "run_end"} <= ops
    for line in lines:
        message = json.loads(line[2:])
        errors = list(validator.evolve(schema=request if line.startswith("> ") else reply).iter_errors(message))
        assert not errors, (line[:200], errors[0].message)
    assert not [line for line in lines if line.startswith("< ") and "error" in json.loads(line[2:])]


def test_a_live_client_is_given_the_verdicts_its_recording_replays_to(tmp_path: Path) -> None:
    """A TypeScript-style agent loop, written here in Python against the raw pipe: a model that repeats one call,
    with a secret in it; the agent obeys the verdicts. The recording (redacted) replays to what it was told."""
    record = tmp_path / "live.jsonl"
    proc = GuardProcess([*SERVE, "--policy", "default", "--record", str(record)], timeout_s=30)
    try:
        assert proc.guard["name"] == "loopguard" and proc.guard["policy"] == "default"
        told: list[tuple[str, list[str]]] = []

        def ask(message: dict[str, Any]) -> list[str]:
            verdicts = verdicts_from_reply(proc.request(message, message["op"]), "serve")
            actions = [str(v.action) for v in verdicts]
            told.append((message["op"], actions))
            return actions

        secret = "sk-" + "A1b2" * 10
        ask({"op": "run_start", "run": {"name": "live-loop", "task": {"objective": "fix the build"}}})
        ask({"op": "message", "index": None, "message": {"role": "user", "text": "fix the build", "origin": "user"}})
        stopped = False
        for turn in range(12):
            call = call_mapping(ToolCall.of("shell", {"command": f"make TOKEN={secret}"}), f"c{turn}")
            ask({"op": "turn_end", "index": None})
            ask({"op": "before_llm", "index": None, "llm": {"input_tokens": 1000 + turn}})
            ask({"op": "llm_result", "index": None, "llm": {"input_tokens": 1000 + turn, "output_tokens": 20}})
            if "stop" in ask({"op": "turn_start", "index": None, "calls": [call]}):
                stopped = True
                break
            before = ask({"op": "before_call", "index": None, "call": call})
            runs = not ({"block", "stop"} & set(before))
            result = {"ok": False, "error": "make: *** [all] Error 2", "exit_code": 2} if runs else None
            after = ask({"op": "after_call", "index": None, "call": call, "result": result, "blocked": not runs})
            if "stop" in before or "stop" in after:
                stopped = True
                break
        ask({"op": "run_end", "index": None})
    finally:
        proc.close()
    assert stopped
    actions = [a for _, acts in told for a in acts]
    assert "warn" in actions and "block" in actions and "stop" in actions
    text = record.read_text(encoding="utf-8")
    assert secret not in text and "make TOKEN=" in text  # redacted on the way in: the Guard saw what was recorded
    replayed = replay(load_file(record)[0], "default")
    live = [a for op, acts in told if op in ("turn_start", "before_call", "after_call", "message") for a in acts]
    again = [str(v.action) for s in replayed.steps for v in s.verdicts]
    assert again == live
    assert replayed.outcome == "stopped"


@pytest.mark.parametrize(("line", "says"), [
    ("not json", "not a JSON request"),
    ('["op"]', "expected a JSON object"),
    ('{"op": "explode"}', "op: expected one of"),
    ('{"op": "before_call", "call": {"tool": "x"}}', "before run_start"),
    ('{"op": "hello", "protocol": 2}', "speaks version 1"),
    ("[" * 5000 + "]" * 5000, "nest"),
])
def test_a_bad_request_is_one_error_line_and_the_server_goes_on(line: str, says: str) -> None:
    server = GuardServer("default", now_ms=None)
    reply = json.loads(server.handle(line))
    assert set(reply) == {"error"} and says in reply["error"] and "\n" not in reply["error"]
    assert json.loads(server.handle('{"op": "hello", "protocol": 1}'))["protocol"] == 1


@pytest.mark.parametrize(("request_", "field"), [
    ({"op": "before_call", "call": {"tool": "", "args": {}}}, "tool"),
    ({"op": "before_call", "call": {"tool": "x", "args": [1]}}, "args"),
    ({"op": "llm_result", "llm": {"input_tokens": -1}}, "llm.input_tokens"),
    ({"op": "message", "message": {"role": "robot", "text": "hi"}}, "role"),
    ({"op": "phase", "phase": "nap"}, "phase"),
    ({"op": "after_call", "call": {"id": "c9", "tool": "x"}, "result": {"ok": True}}, "without its before_call"),
    ({"op": "before_call", "t": -5, "call": {"tool": "x"}}, "t:"),
])
def test_a_malformed_event_names_its_field(request_: dict[str, Any], field: str) -> None:
    server = GuardServer("default", now_ms=None)
    assert json.loads(server.handle(json.dumps({"op": "run_start", "run": {"name": "r"}}))) == {"verdicts": []}
    reply = json.loads(server.handle(json.dumps(request_)))
    assert "error" in reply and field in reply["error"], reply
