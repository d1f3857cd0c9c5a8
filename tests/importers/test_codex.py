"""The `codex` importer: the three real rollouts of ../shared/corpus/sessions/codex (counted here again with an
independent reading of the raw JSON lines), the output markers and their near misses, and the rollout's
other lines (events, compaction, aborted turns, polls) on small logs written the way Codex writes them."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import ImportedRun, Source, available, detect, import_runs, to_trace
from pytest_loopguard.importers._codex_read import ERROR_PREFIXES, read_output
from pytest_loopguard.io._format import dumps
from pytest_loopguard.runtime._replay import replay

SESSIONS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "sessions" / "codex"
FILES = sorted(p.name for p in SESSIONS.glob("*.jsonl"))
POLLS = "localpush-rollout-2026-02-23T12-40-23.jsonl"


# ---- an independent reading of the raw lines ---------------------------------------------------------
def raw_lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (SESSIONS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def payloads(name: str, kind: str, *types: str) -> list[dict[str, Any]]:
    return [d["payload"] for d in raw_lines(name) if d["type"] == kind and d["payload"].get("type") in types]


def raw_failures(name: str) -> dict[str, int]:
    """call id -> non-zero exit code, from the outputs' own words (JSON metadata or a `…exited with code`)."""
    found = {}
    for out in payloads(name, "response_item", "function_call_output", "custom_tool_call_output"):
        text = out["output"] if isinstance(out["output"], str) else ""
        try:
            code = json.loads(text)["metadata"]["exit_code"]
        except (ValueError, KeyError, TypeError):
            m = re.match(r"(?:[A-Z][\w ]*: .*\n)*?(?:Process exited with code|Exit code:) (-?\d+)\n", text)
            code = int(m.group(1)) if m else 0
        if code:
            found[out["call_id"]] = code
    return found


def raw_messages(name: str) -> Counter[str]:
    """user: the `user_message` events (what the person typed); harness: the other user-role items; system:
    developer items and the session's base instructions."""
    items = payloads(name, "response_item", "message")
    events = payloads(name, "event_msg", "user_message")
    shas = {re.sub(r".*sha=(\w+).*", r"\1", e["message"]) for e in events}
    typed = [i for i in items if i["role"] == "user"
             and (i["content"][0]["text"] in {e["message"] for e in events}
                  or re.sub(r".*sha=(\w+).*", r"\1", i["content"][0]["text"]) in shas)]
    meta = raw_lines(name)[0]["payload"]
    base = meta.get("instructions") or (meta.get("base_instructions") or {}).get("text")
    found = Counter({"messages.user": len(events),
                     "messages.harness": sum(1 for i in items if i["role"] == "user") - len(typed),
                     "messages.system": sum(1 for i in items if i["role"] == "developer") + bool(base)})
    return +found  # the origins with none are not counted


def raw_usage(name: str) -> tuple[int, int, int]:
    """Input, output and cached input tokens of the distinct counts (Codex writes each twice)."""
    seen, sums = None, [0, 0, 0]
    for p in payloads(name, "event_msg", "token_count"):
        if p["info"] and p["info"]["total_token_usage"] != seen:
            seen = p["info"]["total_token_usage"]
            for n, key in enumerate(("input_tokens", "output_tokens", "cached_input_tokens")):
                sums[n] += p["info"]["last_token_usage"][key]
    return sums[0], sums[1], sums[2]


def imported(name: str) -> ImportedRun:
    (run,) = import_runs(SESSIONS / name)
    return run


def tools(run: ImportedRun) -> list[dict[str, Any]]:
    return [s for s in run.trace["steps"] if "tool" in s]


# ---- the corpus --------------------------------------------------------------------------------------
# SOURCES.md §2: calls by tool (function_call / custom_tool_call items; the web search is a server-side item)
SOURCES = {
    "acidicsoil-rollout-2025-11-17T15-30-28.jsonl": {"shell": 37, "update_plan": 2},
    "localpush-rollout-2026-02-23T12-40-23.jsonl": {"exec_command": 71, "apply_patch": 22, "write_stdin": 9,
                                                    "update_plan": 2, "web_search": 1},
    "localpush-rollout-2026-02-23T12-47-42.jsonl": {"exec_command": 118, "write_stdin": 14, "apply_patch": 10,
                                                    "update_plan": 2},
}


def test_the_corpus_has_the_three_rollouts() -> None:
    assert sorted(SOURCES) == FILES


@pytest.mark.parametrize("name", FILES)
def test_calls_failures_messages_and_compactions_match_the_raw_lines(name: str) -> None:
    run = imported(name)
    calls = payloads(name, "response_item", "function_call", "custom_tool_call", "local_shell_call",
                     "web_search_call")
    assert run.counts["calls"] == len(calls) == len(tools(run))
    assert Counter(s["tool"] for s in tools(run)) == SOURCES[name]
    failing = {s["x-call-id"]: s["result"]["exit_code"] for s in tools(run) if s.get("result", {}).get("exit_code")}
    assert failing == raw_failures(name)
    assert run.counts["failed"] == len(failing)
    assert {k: v for k, v in run.counts.items() if k.startswith("messages.") and v} == raw_messages(name)
    compactions = len([d for d in raw_lines(name) if d["type"] == "compacted"])
    assert run.counts["compacted"] == compactions == sum(1 for s in run.trace["steps"] if "compacted" in s)
    assert run.counts["denied"] == run.counts["cancelled"] == run.counts["rejected"] == 0
    llm = [s for s in run.trace["steps"] if "llm" in s]
    assert (sum(s["llm"]["input_tokens"] for s in llm), sum(s["llm"]["output_tokens"] for s in llm),
            sum(s.get("x-cached-input-tokens", 0) for s in llm)) == raw_usage(name)


def test_the_old_shell_tools_three_non_zero_exits_are_the_ones_sources_md_names() -> None:
    run = imported("acidicsoil-rollout-2025-11-17T15-30-28.jsonl")
    failed = [(s["args"]["command"], s["result"]["exit_code"]) for s in tools(run) if s["result"].get("exit_code")]
    assert [(c.split()[:2], code) for c, code in failed] == [(["ls", "lib/ai"], 2), (["rg", "-n"], 2),
                                                            (["rg", "-n"], 1)]
    assert failed[1][0].endswith("src -g\"*.ts\"") and '"OLLAMA"' in failed[2][0]


@pytest.mark.parametrize("name", FILES)
def test_every_step_points_back_into_the_log(name: str) -> None:
    run = imported(name)
    lines = (SESSIONS / name).read_text(encoding="utf-8").splitlines()
    for step in run.trace["steps"]:
        source = step["source"]
        assert source["file"] == str(SESSIONS / name) and isinstance(source["row"], int), step
        raw = json.loads(lines[source["row"] - 1])
        if "tool" in step and step["tool"] != "web_search":
            assert source["index"] == raw["payload"]["call_id"] == step["x-call-id"]
        else:
            assert source["index"] == source["row"]


@pytest.mark.parametrize("name", FILES)
def test_validates_replays_and_imports_byte_identical_twice(name: str, tmp_path: Path) -> None:
    run = imported(name)
    trace = to_trace(run)
    out = tmp_path / "t.yaml"
    out.write_text(dumps(trace), encoding="utf-8")
    assert cli.main(["validate", str(out)]) == 0
    assert replay(trace, "default").outcome in ("completed", "incomplete", "stopped")
    for n in (1, 2):
        assert cli.main(["import", str(SESSIONS / name), "-o", str(tmp_path / f"out{n}")]) == 0
    (first,) = (tmp_path / "out1").iterdir()
    assert first.read_bytes() == (tmp_path / "out2" / first.name).read_bytes()


def test_the_seven_identical_polls_are_seven_equal_calls_and_default_reads_them_as_progress() -> None:
    run = imported(POLLS)
    calls = tools(run)
    streak = max((calls[i:j] for i in range(len(calls)) for j in range(i + 1, len(calls) + 1)
                  if all((c["tool"], c["args"]) == (calls[i]["tool"], calls[i]["args"]) for c in calls[i:j])),
                 key=len)
    assert len(streak) == 7 and {c["tool"] for c in streak} == {"write_stdin"}
    assert streak[0]["args"] == {"raw": "[REDACTED_ARGUMENTS len=78 sha=28a0e1d5]"}
    assert [c["source"]["row"] for c in streak] == [127, 133, 139, 145, 151, 157, 163]
    result = replay(to_trace(run), "default")
    positions = [run.trace["steps"].index(c) for c in streak]
    # each poll returns new output of the running command: progress, not repetition (issue 23); the progress
    # budget warns once at the 6th call in a row (default's progress_warn_at), where the identical-call count
    # used to warn at the 3rd and block from the 5th
    assert [result.steps[p].action for p in positions] == ["allow"] * 5 + ["warn", "allow"]
    assert [v.reason for v in result.steps[positions[5]].verdicts] == ["loop_guard.poll_budget_warning"]


def test_redacted_arguments_differ_where_their_texts_do() -> None:
    execs = [c for c in tools(imported(POLLS)) if c["tool"] == "exec_command"]
    assert len({json.dumps(c["args"]) for c in execs}) > 60  # not all `{}`: each keeps its own text
    assert all(c["x-arguments-error"] == "not a JSON object" and c["x-arguments"] == c["args"]["raw"]
               for c in execs)


def test_detection_picks_codex_and_leaves_responses_logs_to_their_importer(tmp_path: Path) -> None:
    for name in FILES:
        assert detect(Source.from_path(SESSIONS / name), available()).name == "codex"
    responses = Path(__file__).parent / "fixtures" / "openai_responses_records.jsonl"
    assert detect(Source.from_path(responses), available()).name == "openai-responses"
    items = tmp_path / "items.jsonl"
    items.write_text('{"type": "function_call", "name": "ls", "arguments": "{}", "call_id": "c"}\n'
                     '{"type": "function_call_output", "call_id": "c", "output": "a"}\n', encoding="utf-8")
    assert detect(Source.from_path(items), available()).name == "openai-responses"


# ---- small rollouts, written the way Codex writes them -----------------------------------------------
def rl(kind: str, payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return {"timestamp": f"2026-02-23T11:40:{second:02d}.000Z", "type": kind, "payload": payload}


META = rl("session_meta", {"id": "s-1", "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.58.0",
                           "model_provider": "openai", "instructions": None})
CTX = rl("turn_context", {"cwd": "/w", "approval_policy": "never", "model": "gpt-5.1-codex"})


def call(name: str, arguments: Any, call_id: str) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return rl("response_item", {"type": "function_call", "name": name, "arguments": args, "call_id": call_id})


def output(call_id: str, text: str) -> dict[str, Any]:
    return rl("response_item", {"type": "function_call_output", "call_id": call_id, "output": text})


def user(text: str) -> dict[str, Any]:
    return rl("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def typed(text: str) -> dict[str, Any]:
    return rl("event_msg", {"type": "user_message", "message": text, "images": []})


def tokens(total: int, last_in: int, last_out: int) -> dict[str, Any]:
    usage = {"input_tokens": last_in, "cached_input_tokens": 0, "output_tokens": last_out,
             "reasoning_output_tokens": 0, "total_tokens": last_in + last_out}
    totals = {**usage, "total_tokens": total}
    return rl("event_msg", {"type": "token_count", "info": {"total_token_usage": totals, "last_token_usage": usage},
                            "rate_limits": None})


def reasoning() -> dict[str, Any]:
    return rl("response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "x"})


def rollout(tmp_path: Path, *lines: dict[str, Any] | str) -> ImportedRun:
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in [META, *lines]) + "\n",
                    encoding="utf-8")
    (run,) = import_runs(path)
    return run


def unified(exit_code: int | None = None, session: int | None = None, body: str = "") -> str:
    head = ["Chunk ID: 1a2b", "Wall time: 0.5012 seconds"]
    if exit_code is not None:
        head.append(f"Process exited with code {exit_code}")
    if session is not None:
        head.append(f"Process running with session ID {session}")
    return "\n".join([*head, "Original token count: 12", "Output:", body])


def shell_json(exit_code: int, text: str = "") -> str:
    return json.dumps({"output": text, "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}})


# ---- the markers: one test each, and the near misses ----------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    (shell_json(2, "ls: cannot access 'x'"), {"exit_code": 2, "text": "ls: cannot access 'x'"}),
    ("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nboom\n", {"exit_code": 1, "text": "boom\n"}),
    (unified(exit_code=3, body="E"), {"process_exit": 3, "text": "E"}),
    (unified(session=7), {"session": 7, "process_exit": None, "text": ""}),
    ("exec command rejected by user", {"denied_by": "user"}),
    ("patch rejected by user", {"denied_by": "user"}),
    ("This action was rejected due to unacceptable risk. It deletes the repo.", {"denied_by": "rule"}),
    ("aborted", {"aborted": True}),
    *[(prefix + "details", {"error": prefix + "details"}) for prefix in ERROR_PREFIXES],
])
def test_each_marker(text: str, expected: dict[str, Any]) -> None:
    outcome = read_output(text)
    assert {k: getattr(outcome, k) for k in expected} == expected


@pytest.mark.parametrize("text", [
    "error: this line is just what grep printed\n3 errors found",
    "Traceback (most recent call last):\n  ValueError: the test expects this",
    unified(session=4, body="Process exited with code 1\nExit code: 2"),  # the command printed them
    "Wall time: 0.1 seconds\nExit code: 1\nOutput:\n",  # `Exit code` is the first line or nothing
    "output of a command\nProcess exited with code 1\nOutput:\nx",  # not a header: its first line is not one
    "the user said: exec command rejected by user",
    "aborted: nothing to do",
    json.dumps({"output": "x", "exit_code": 1}),  # no metadata
    json.dumps({"output": "x", "metadata": {"exit_code": 1e400}}),
    "note: apply_patch verification failed: would be a failure at the start only",
    "Exit code: 99999999999\nOutput:\n",
])
def test_near_misses_are_plain_successes(text: str) -> None:
    outcome = read_output(text)
    assert (outcome.exit_code, outcome.error, outcome.denied_by, outcome.aborted, outcome.process_exit) == (
        None, None, None, False, None)


def test_markers_become_results_through_the_importer(tmp_path: Path) -> None:
    run = rollout(tmp_path, CTX,
                  call("shell", {"command": ["bash", "-lc", "ls x"]}, "a"), output("a", shell_json(2, "no x")),
                  call("exec_command", {"cmd": "make"}, "b"), output("b", unified(exit_code=1, body="E")),
                  call("exec_command", {"cmd": "ok"}, "c"), output("c", "ordinary error output, exit 0"),
                  call("exec_command", {"cmd": "rm -rf /"}, "d"), output("d", "exec command rejected by user"),
                  call("write_stdin", {"session_id": 9}, "e"), output("e", "write_stdin failed: Unknown process id 9"))
    a, b, c, d, e = tools(run)
    assert a["args"] == {"command": "ls x"} and a["x-argv"] == ["bash", "-lc", "ls x"]
    assert a["result"] == {"exit_code": 2, "text": "no x"}
    assert b["args"] == {"cmd": "make"} and b["result"] == {"exit_code": 1, "text": "E"}
    assert c["result"] == {"text": "ordinary error output, exit 0"}
    assert "result" not in d and d["denied"] == {"reason": "exec command rejected by user", "by": "user"}
    assert e["result"] == {"error": "write_stdin failed: Unknown process id 9"}
    assert (run.counts["failed"], run.counts["denied"]) == (3, 1)


# ---- polls: a process's exit is its command's failure, counted once --------------------------------------
def test_a_poll_reporting_an_exit_is_not_a_failure_the_command_is(tmp_path: Path) -> None:
    polls = [item for n in range(3) for item in (call("write_stdin", {"session_id": 7, "chars": ""}, f"p{n}"),
                                                 output(f"p{n}", unified(session=7, body=".")), CTX)]
    run = rollout(tmp_path, CTX, call("exec_command", {"cmd": "cargo test"}, "x"), output("x", unified(session=7)),
                  CTX, *polls, call("write_stdin", {"session_id": 7, "chars": ""}, "p3"),
                  output("p3", unified(exit_code=101, body="test failed")))
    start, *rest = tools(run)
    assert start["result"] == {"exit_code": 101, "text": ""} and start["x-exit-reported-by"] == "p3"
    assert all("exit_code" not in p["result"] for p in rest)
    assert rest[-1]["x-process-exit-code"] == 101 and rest[-1]["x-process-call"] == "x"
    assert run.counts["failed"] == 1
    assert len({json.dumps(p["args"]) for p in rest}) == 1  # four identical polls, none of them failing


def test_a_poll_whose_command_is_not_in_the_log_carries_the_exit(tmp_path: Path) -> None:
    run = rollout(tmp_path, CTX, call("write_stdin", {"session_id": 3}, "p"), output("p", unified(exit_code=2)))
    (poll,) = tools(run)
    assert poll["result"]["exit_code"] == 2 and run.counts["failed"] == 1


def test_end_events_give_exit_codes_and_status_without_counting_twice(tmp_path: Path) -> None:
    end = {"type": "exec_command_end", "call_id": "x", "process_id": "7", "exit_code": 101, "stdout": "",
           "stderr": "", "aggregated_output": "test failed", "status": "failed"}
    run = rollout(tmp_path, CTX, call("exec_command", {"cmd": "cargo test"}, "x"), output("x", unified(session=7)),
                  CTX, call("write_stdin", {"session_id": 7}, "p"), rl("event_msg", end),
                  output("p", unified(exit_code=101, body="test failed")),
                  rl("event_msg", {"type": "patch_apply_end", "call_id": "q", "success": False, "stdout": "",
                                   "stderr": "Failed to find expected lines"}),
                  rl("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "q",
                                       "input": "*** Begin Patch\n*** End Patch"}),
                  rl("response_item", {"type": "custom_tool_call_output", "call_id": "q", "output": "done"}),
                  call("exec_command", {"cmd": "sudo x"}, "r"),
                  rl("event_msg", {"type": "exec_command_end", "call_id": "r", "exit_code": -1, "status": "declined",
                                   "aggregated_output": "exec command rejected by user"}),
                  output("r", "the harness said no"),
                  call("exec_command", {"cmd": "make"}, "m"),
                  rl("event_msg", {"type": "exec_command_end", "call_id": "m", "exit_code": 2, "status": "failed"}))
    start, poll, patch, declined, unanswered = tools(run)
    assert unanswered["result"] == {"exit_code": 2} and not run.warnings  # the event is its outcome
    assert start["result"]["exit_code"] == 101 and "exit_code" not in poll["result"]
    assert patch["args"] == {"input": "*** Begin Patch\n*** End Patch"} and patch["x-tool-type"] == "custom"
    assert patch["result"] == {"error": "Failed to find expected lines", "text": "done"}
    assert declined["denied"]["by"] == "user" and "result" not in declined
    assert (run.counts["failed"], run.counts["denied"]) == (3, 1)


# ---- requests and their usage ---------------------------------------------------------------------------
def test_each_request_is_one_llm_step_with_its_usage_counted_once_in_either_order(tmp_path: Path) -> None:
    # codex_cli_rs 0.58: the count comes before the request's items; 0.104: after them. Each is written twice.
    old = rollout(tmp_path, CTX, tokens(110, 100, 10), reasoning(), call("ls", {}, "a"), output("a", "x"), CTX,
                  tokens(110, 100, 10), tokens(330, 200, 20), reasoning(), call("ls", {}, "b"), output("b", "y"))
    new = rollout(tmp_path, CTX, reasoning(), call("ls", {}, "a"), tokens(110, 100, 10), output("a", "x"), CTX,
                  tokens(110, 100, 10), reasoning(), call("ls", {}, "b"), tokens(330, 200, 20), output("b", "y"))
    for run in (old, new):
        llm = [(s["llm"], s["x-reasoning-items"]) for s in run.trace["steps"] if "llm" in s]
        assert llm == [({"input_tokens": 100, "output_tokens": 10}, 1), ({"input_tokens": 200, "output_tokens": 20}, 1)]


def test_parallel_calls_of_one_request_are_one_turn_and_the_last_answer_is_done(tmp_path: Path) -> None:
    answer = rl("response_item", {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "All green."}]})
    run = rollout(tmp_path, CTX, call("ls", {}, "a"), output("a", "x"), call("ls", {"p": 1}, "b"), output("b", "y"),
                  CTX, answer, rl("event_msg", {"type": "agent_message", "message": "All green."}),
                  rl("event_msg", {"type": "task_complete", "last_agent_message": "All green."}))
    kinds = [next(k for k in ("llm", "tool", "done") if k in s) for s in run.trace["steps"]]
    assert kinds == ["llm", "tool", "tool", "llm", "done"]
    assert run.trace["steps"][-1]["done"] == {"text": "All green."} and not run.unmapped


# ---- messages -----------------------------------------------------------------------------------------
def test_the_typed_prompt_is_the_users_and_codexs_context_the_harnesss(tmp_path: Path) -> None:
    run = rollout(tmp_path, user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
                  user("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>"),
                  user("[REDACTED_TEXT len=110 sha=1efde24d]"),
                  user("[REDACTED_TEXT len=516 sha=05857781]"), typed("[REDACTED_MESSAGE len=516 sha=05857781]"),
                  CTX, call("ls", {}, "a"), output("a", "x"), typed("and now the tests"),
                  rl("response_item", {"type": "message", "role": "developer",
                                       "content": [{"type": "input_text", "text": "<permissions>…"}]}),
                  CTX, call("ls", {}, "b"), output("b", "y"), typed("run them"), user("run them"))
    messages = [(s["message"]["role"], s["message"].get("origin")) for s in run.trace["steps"] if "message" in s]
    assert messages == [("user", "harness"), ("user", "harness"), ("user", "harness"), ("user", "user"),
                        ("user", "user"), ("system", None), ("user", "user")]
    # an event beside its response item (before or after it) is not a second message
    assert run.counts["messages.user"] == 3


def test_without_user_message_events_every_unmarked_user_item_is_the_users(tmp_path: Path) -> None:
    run = rollout(tmp_path, user("<environment_context></environment_context>"), user("fix the build"))
    assert (run.counts["messages.harness"], run.counts["messages.user"]) == (1, 1)


# ---- compaction, aborted turns, unknown lines ---------------------------------------------------------
def test_a_compacted_line_and_its_event_are_one_compaction_with_the_summary(tmp_path: Path) -> None:
    run = rollout(tmp_path, CTX, call("ls", {}, "a"), tokens(5000, 4900, 100), output("a", "x"),
                  rl("compacted", {"message": "We listed the files."}),
                  rl("event_msg", {"type": "context_compacted"}),
                  rl("event_msg", {"type": "context_compacted"}),
                  rl("compacted", {"message": "", "replacement_history": [
                      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
                      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Summary: B"}]},
                  ]}))
    steps = [s for s in run.trace["steps"] if "compacted" in s]
    assert [s["compacted"] for s in steps] == [{"tokens_before": 5000, "text": "We listed the files."},
                                               {"tokens_before": 5000, "text": "Summary: B"}]
    assert [s["source"]["row"] for s in steps] == [6, 8] and run.counts["compacted"] == 2


def test_an_aborted_turn_cancels_the_calls_still_running(tmp_path: Path) -> None:
    run = rollout(tmp_path, CTX, call("exec_command", {"cmd": "sleep 600"}, "a"), call("ls", {}, "b"),
                  output("b", "x"), rl("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
                  user("stop, do it differently"), CTX, call("ls", {}, "c"), output("c", "aborted"))
    a, b, c = tools(run)
    assert a["cancelled"] == {"reason": "turn aborted (interrupted)"} and "result" not in a
    assert b["result"] == {"text": "x"} and c["cancelled"]["reason"].startswith("aborted")
    assert run.counts["cancelled"] == 2 and run.counts["failed"] == 0 and not run.warnings


def test_unknown_lines_are_grouped_as_unmapped_never_errors(tmp_path: Path) -> None:
    run = rollout(tmp_path, rl("event_msg", {"type": "brand_new_event"}), rl("event_msg", {"type": "brand_new_event"}),
                  rl("response_item", {"type": "ghost_snapshot"}), rl("future_line", {}), "[1, 2]",
                  json.dumps({"type": "event_msg", "payload": "text"}))
    kinds = Counter(item.split(": ", 1)[-1] for item in run.unmapped)
    assert kinds == {"brand_new_event event": 2, "ghost_snapshot item": 1, "future_line line": 1,
                     "list line (expected an object)": 1, "event_msg line": 1}
    assert run.trace["steps"] == [] and not run.warnings


def test_a_call_without_output_keeps_no_result_with_a_warning(tmp_path: Path) -> None:
    run = rollout(tmp_path, CTX, call("exec_command", {"cmd": "make"}, "a"))
    assert tools(run)[0]["x-result-missing"] is True and len(run.warnings) == 1


# ---- bad input: one line, exit 2 ---------------------------------------------------------------------
def test_a_truncated_rollout_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes((SESSIONS / FILES[0]).read_bytes()[:5000])
    assert cli.main(["import", str(cut), "-o", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"loopguard: error: {cut}:") and "invalid JSON" in line


SAMPLE = b"".join((SESSIONS / FILES[0]).read_bytes().splitlines(keepends=True)[:40])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(SAMPLE)), flips=st.lists(st.tuples(st.integers(0, len(SAMPLE) - 1),
                                                                  st.integers(0, 255)), max_size=3))
def test_truncated_or_corrupted_rollouts_exit_0_or_2_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: int, flips: list[tuple[int, int]]) -> None:
    data = bytearray(SAMPLE)
    for at, byte in flips:
        data[at] = byte
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(bytes(data[:cut]))
    capsys.readouterr()
    status = cli.main(["import", str(src), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err.splitlines()
    assert status in (0, 2), err
    assert len(err) == (status == 2) and all(line.startswith("loopguard: ") for line in err), err


def test_compactions_denials_and_cancellations_validate_and_replay(tmp_path: Path) -> None:
    run = rollout(tmp_path, CTX, call("ls", {}, "a"), tokens(5000, 4900, 100), output("a", "x"),
                  rl("compacted", {"message": "We listed the files."}), rl("event_msg", {"type": "context_compacted"}),
                  CTX, call("exec_command", {"cmd": "rm -rf build"}, "d"), output("d", "exec command rejected by user"),
                  call("exec_command", {"cmd": "sleep 600"}, "s"),
                  rl("event_msg", {"type": "turn_aborted", "reason": "interrupted"}))
    trace = to_trace(run)
    out = tmp_path / "t.yaml"
    out.write_text(dumps(trace), encoding="utf-8")
    assert cli.main(["validate", str(out)]) == 0
    result = replay(trace, "default")
    assert [s.kind for s in result.steps] == ["llm", "tool", "compacted", "llm", "tool", "tool"]
    assert result.outcome == "incomplete"


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8)
                    | st.sampled_from(["message", "user", "function_call", "aborted", "exec_command_end", "7"]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=6)
ROWS = [json.loads(line) for line in SAMPLE.decode("utf-8").splitlines()]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, len(ROWS) - 1), st.sampled_from(["type", "payload", "timestamp"]),
                                st.text(max_size=12), JSON), min_size=1, max_size=6))
def test_rollouts_with_odd_values_import_or_fail_in_one_line(
        tmp_path: Path, edits: list[tuple[int, str, str, Any]]) -> None:
    """Any value anywhere: the run imports to a valid trace, or the file is refused with a TraceError (the
    command's one line and exit 2) — never another exception (the command's "importer failed")."""
    rows = json.loads(json.dumps(ROWS))
    for n, where, key, value in edits:
        target = rows[n]["payload"] if where == "payload" and isinstance(rows[n].get("payload"), dict) else rows[n]
        target[key if where == "payload" and key else where] = value
    src = tmp_path / "rollout.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    try:
        for run in import_runs(src):
            to_trace(run)
    except TraceError as exc:
        assert "\n" not in str(exc)
