"""The `gemini-cli` importer on the real files of ../shared/corpus/sessions/gemini-cli, counted against an
independent reading of the raw JSON, and on small chats that carry what the corpus lacks (failed, denied and
cancelled calls, calls left mid-run, info/error messages)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import Source, available, detect, import_runs, to_trace
from pytest_loopguard.importers.gemini_cli import USER_DENIAL
from pytest_loopguard.io._format import dumps, trace_from_mapping
from pytest_loopguard.io._runner import execute

GEMINI = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "sessions" / "gemini-cli"
CHAT = GEMINI / "codemie-session-2026-01-16T11-01-file-ops-37b7abef.json"
PROMPTS = GEMINI / "codemie-logs.json"


def _tools(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in trace["steps"] if "tool" in s]


def _origins(trace: dict[str, Any]) -> Counter[str]:
    return Counter(s["message"].get("origin") for s in trace["steps"] if "message" in s)


def _validates_and_replays(trace_map: dict[str, Any], tmp_path: Path) -> None:
    trace = trace_from_mapping(trace_map, path=trace_map["name"])
    out = tmp_path / f"{trace.name}.yaml"
    out.write_text(dumps(trace), encoding="utf-8")
    assert cli.main(["validate", str(out)]) == 0
    assert len(execute(trace).steps) >= 1


# ---- the real chat ------------------------------------------------------------------------------------
def test_the_saved_chat_matches_an_independent_count_of_its_json() -> None:
    raw = json.loads(CHAT.read_text(encoding="utf-8"))
    raw_calls = [c for m in raw["messages"] for c in m.get("toolCalls", [])]
    statuses = Counter(c["status"] for c in raw_calls)
    types = Counter(m["type"] for m in raw["messages"])
    (run,) = import_runs(CHAT)
    tools = _tools(run.trace)
    assert len(tools) == len(raw_calls) == 14  # SOURCES.md: 14 toolCalls, all success
    assert Counter(t["tool"] for t in tools) == Counter(c["name"] for c in raw_calls) == Counter(
        read_file=6, write_todos=3, write_file=3, delegate_to_agent=1, search_file_content=1)
    assert run.counts["failed"] == statuses["error"] == 0
    assert run.counts["denied"] + run.counts["cancelled"] == statuses["cancelled"] == 0
    assert _origins(run.trace) == Counter(user=types["user"]) == Counter(user=5)
    assert sum(1 for s in run.trace["steps"] if "llm" in s) == types["gemini"] == 9
    assert all(s["source"]["file"] == str(CHAT) for s in run.trace["steps"])
    assert [s["source"]["index"] for s in tools][:2] == ["/messages/3/toolCalls/0", "/messages/3/toolCalls/1"]
    reads = [t["args"] for t in tools if t["tool"] == "read_file" and t["args"] == {"file_path": "hello.md"}]
    assert len(reads) == 2  # SOURCES.md: read_file hello.md ×2 (read-after-write)
    assert run.trace["steps"][-1] == {"done": {"text": raw["messages"][-1]["content"]},
                                      "source": {"file": str(CHAT), "row": None, "index": "/messages/13"}}
    assert not run.warnings and not run.unmapped


def test_tokens_count_the_prompt_and_tool_prompt_in_and_the_thoughts_out() -> None:
    (run,) = import_runs(CHAT)
    llm = next(s for s in run.trace["steps"] if s["source"]["index"] == "/messages/3" and "llm" in s)
    # {"input": 5054, "output": 269, "cached": 2745, "thoughts": 1627, "tool": 0, "total": 6950}
    assert llm["llm"] == {"input_tokens": 5054, "output_tokens": 269 + 1627}
    assert llm["x-cached-input-tokens"] == 2745 and llm["x-thoughts-tokens"] == 1627
    assert "x-thoughts" not in llm  # its thoughts list is empty


def test_results_are_the_function_responses() -> None:
    (run,) = import_runs(CHAT)
    write = next(t for t in _tools(run.trace) if t["tool"] == "write_file")
    assert write["result"] == {"text": "Successfully created and wrote to new file: "
                               "/Users/Nikita_Levyankov/repos/EPMCDME/codemie-ai/codemie-code/hello.md."}
    assert write["x-status"] == "success" and write["x-call-id"].startswith("write_file-")


def test_the_real_chat_validates_and_replays(tmp_path: Path) -> None:
    (run,) = import_runs(CHAT)
    _validates_and_replays(run.trace, tmp_path)


def test_the_prompt_log_is_a_run_of_the_persons_prompts() -> None:
    raw = json.loads(PROMPTS.read_text(encoding="utf-8"))
    runs = import_runs(PROMPTS)
    assert [r.run_id for r in runs] == list(dict.fromkeys(e["sessionId"] for e in raw))
    (run,) = runs
    assert [s["message"]["text"] for s in run.trace["steps"]] == [e["message"] for e in raw]
    assert _origins(run.trace) == Counter(user=3) and run.counts["calls"] == 0  # SOURCES.md: 3 user entries
    assert run.trace["x-prompt-log"] is True


def test_detection(tmp_path: Path) -> None:
    pool = available()
    assert detect(Source.from_path(CHAT), pool).name == "gemini-cli"
    assert detect(Source.from_path(PROMPTS), pool).name == "gemini-cli"
    fixtures = Path(__file__).parent / "fixtures"
    assert detect(Source.from_path(fixtures / "anthropic_messages.json"), pool).name == "anthropic"
    assert detect(Source.from_path(fixtures / "openai_chat_run.json"), pool).name == "openai-chat"


def test_import_output_is_byte_identical_across_two_runs(tmp_path: Path) -> None:
    for out in ("a", "b"):
        assert cli.main(["import", str(CHAT), str(PROMPTS), "-o", str(tmp_path / out)]) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b").iterdir()) and len(names) == 2
    assert all((tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes() for n in names)


# ---- statuses and message types the corpus lacks --------------------------------------------------------
def _call(name: str, status: str, response: dict[str, Any] | None, **more: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"id": f"{name}-1", "name": name, "args": {"file_path": "a.py"}, "status": status,
                            "timestamp": "2026-01-01T00:00:00Z", **more}
    if response is not None:
        call["result"] = [{"functionResponse": {"id": f"{name}-1", "name": name, "response": response}}]
    return call


def _chat(tmp_path: Path, *calls: dict[str, Any], extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    doc = {"sessionId": "s1", "projectHash": "h", "startTime": "t", "lastUpdated": "t", "messages": [
        {"id": "u", "timestamp": "t", "type": "user", "content": "fix a.py"},
        {"id": "g", "timestamp": "t", "type": "gemini", "content": "", "toolCalls": list(calls),
         "tokens": {"input": 10, "output": 2, "cached": 0, "thoughts": 0, "tool": 3, "total": 15}},
        *(extra or []),
        {"id": "g2", "timestamp": "t", "type": "gemini", "content": "done"},
    ]}
    path = tmp_path / "session-x.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (run,) = import_runs(path)
    return run.trace | {"counts": run.counts, "unmapped": run.unmapped}


def test_status_error_is_a_failed_call_with_its_error_text(tmp_path: Path) -> None:
    trace = _chat(tmp_path, _call("read_file", "error", {"error": "File not found: a.py"}))
    (tool,) = _tools(trace)
    assert tool["result"] == {"error": "File not found: a.py"} and trace["counts"]["failed"] == 1


def test_status_error_without_an_error_part_keeps_the_display_text(tmp_path: Path) -> None:
    trace = _chat(tmp_path, _call("run_shell_command", "error", None, resultDisplay="exit 1"))
    assert _tools(trace)[0]["result"] == {"error": "exit 1"}


def test_cancelled_with_the_user_denial_is_denied_by_the_user(tmp_path: Path) -> None:
    reason = f"[Operation Cancelled] Reason: {USER_DENIAL}"
    trace = _chat(tmp_path, _call("write_file", "cancelled", {"error": reason}))
    (tool,) = _tools(trace)
    assert tool["denied"] == {"reason": reason, "by": "user"} and "result" not in tool
    assert trace["counts"]["denied"] == 1 and trace["counts"]["failed"] == 0


def test_cancelled_otherwise_is_cancelled(tmp_path: Path) -> None:
    reason = "[Operation Cancelled] Reason: User cancelled tool execution."
    trace = _chat(tmp_path, _call("run_shell_command", "cancelled", {"error": reason}))
    (tool,) = _tools(trace)
    assert tool["cancelled"] == {"reason": reason} and trace["counts"]["cancelled"] == 1


def test_near_miss_error_words_in_a_successful_output_are_no_failure(tmp_path: Path) -> None:
    text = "Error: no such option\nUSER_DENIAL: User did not allow tool call (quoted in a file)"
    trace = _chat(tmp_path, _call("read_file", "success", {"output": text}))
    (tool,) = _tools(trace)
    assert tool["result"] == {"text": text} and trace["counts"]["failed"] == 0


def test_a_call_left_mid_run_keeps_no_result_and_is_listed(tmp_path: Path) -> None:
    trace = _chat(tmp_path, _call("run_shell_command", "executing", None))
    (tool,) = _tools(trace)
    assert tool["x-result-missing"] is True and "result" not in tool
    assert any("status 'executing'" in u for u in trace["unmapped"])


def test_info_warning_and_error_messages(tmp_path: Path) -> None:
    extra = [{"id": "i", "timestamp": "t", "type": "info", "content": "Switched model"},
             {"id": "w", "timestamp": "t", "type": "warning", "content": "Loop detected"},
             {"id": "e", "timestamp": "t", "type": "error", "content": "[API Error: quota exceeded]"},
             {"id": "z", "timestamp": "t", "type": "compression", "content": "?"}]
    trace = _chat(tmp_path, extra=extra)
    assert _origins(trace) == Counter(user=1, harness=2)
    assert [s["llm"] for s in trace["steps"] if "llm" in s and "error" in s["llm"]] == [
        {"error": "[API Error: quota exceeded]"}]
    assert any("type 'compression'" in u for u in trace["unmapped"])
    turn = next(s for s in trace["steps"] if "llm" in s)
    assert turn["llm"] == {"input_tokens": 13, "output_tokens": 2}  # input + tool


def test_denied_and_cancelled_calls_validate_and_replay(tmp_path: Path) -> None:
    trace = _chat(tmp_path, _call("write_file", "cancelled", {"error": USER_DENIAL}),
                  _call("read_file", "cancelled", {"error": "User cancelled tool execution."}))
    _validates_and_replays({k: v for k, v in trace.items() if k not in ("counts", "unmapped")}, tmp_path)


# ---- bad input ------------------------------------------------------------------------------------------
def test_a_truncated_chat_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "session-cut.json"
    cut.write_text(CHAT.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    assert cli.main(["import", "--from", "gemini-cli", str(cut), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"loopguard: error: {cut}:") and "invalid JSON" in err[0]


def test_a_document_of_another_shape_under_from_is_one_line() -> None:
    source = Source.from_bytes("x.json", b'{"hello": "world"}')
    with pytest.raises(TraceError, match="not a Gemini CLI log") as exc:
        import_runs(source, "gemini-cli")
    assert "\n" not in str(exc.value)


TEXT = CHAT.read_text(encoding="utf-8")


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=len(TEXT) - 1))
def test_every_truncation_is_a_one_line_trace_error(cut: int) -> None:
    source = Source.from_bytes("session-cut.json", TEXT[:cut].encode("utf-8"))
    with pytest.raises(TraceError) as exc:
        import_runs(source, "gemini-cli")
    assert "\n" not in str(exc.value)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                     max_leaves=12)


@settings(max_examples=80, deadline=None)
@given(message=st.dictionaries(st.sampled_from(["type", "content", "toolCalls", "tokens", "thoughts", "model"]),
                               _JSON, max_size=6),
       call=st.dictionaries(st.sampled_from(["name", "args", "status", "result", "resultDisplay", "id"]), _JSON))
def test_odd_fields_never_crash_the_import(message: dict[str, Any], call: dict[str, Any]) -> None:
    doc = {"sessionId": "s", "projectHash": "h", "messages": [
        message, {"type": "gemini", "content": "x", "toolCalls": [call, 3]}, None]}
    (run,) = import_runs(Source.from_bytes("odd.json", json.dumps(doc).encode("utf-8")), "gemini-cli")
    to_trace(run)  # what the importer wrote loads as a trace
