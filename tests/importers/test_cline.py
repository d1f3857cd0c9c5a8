"""The `cline` importer on the real files of ../shared/corpus/sessions/cline, counted against an independent
reading of the raw JSON, on a task folder, and on small logs that carry what the corpus lacks (each failure
marker and its near miss, harness refusals and re-issued calls, XML tool tags, a retry loop)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import ImportedRun, Source, available, detect, import_runs, to_trace
from pytest_loopguard.io._format import dumps
from pytest_loopguard.io._runner import execute

CLINE = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "sessions" / "cline"
API = CLINE / "gmfstu-task1769053680585-api_conversation_history.json"
UI_SAME_TASK = CLINE / "gmfstu-task1769053680585-ui_messages.json"
XRAY = CLINE / "cline-xray-task_sample-ui_messages.json"
JEEHUNTER = CLINE / "jeehunter-mcp-vscode-server-ui_messages.json"
UI_FILES = [UI_SAME_TASK, XRAY, JEEHUNTER]
FIXTURES = Path(__file__).parent / "fixtures"

# ---- an independent reading of the raw files ------------------------------------------------------------
# the UI entries that are a call of the model: tool, command and MCP entries, and the tools the UI shows as
# an entry of their own (attempt_completion, ask_followup_question, plan_mode_respond, load_mcp_documentation)
CALL_ENTRIES = {("say", "tool"), ("ask", "tool"), ("say", "command"), ("ask", "command"), ("ask", "use_mcp_server"),
                ("say", "completion_result"), ("ask", "followup"), ("ask", "plan_mode_respond"),
                ("say", "load_mcp_documentation")}
FAILED_ANSWER = re.compile(r"^\[\w+(?: for [^\n]*)?\] Result:\s*(?:The tool execution failed|\[ERROR\])", re.M)


def _kind(entry: dict[str, Any]) -> tuple[str, str]:
    return entry["type"], entry.get(entry["type"], "")


def _raw_ui(path: Path) -> dict[str, Any]:
    ui = json.loads(path.read_text(encoding="utf-8"))
    kinds = [_kind(e) for e in ui]
    first_request = kinds.index(("say", "api_req_started"))
    requests = [json.loads(e["text"]) for e in ui if _kind(e) == ("say", "api_req_started")]
    ranges = [e.get("conversationHistoryDeletedRange") for e in ui]
    return {
        "calls": sum(1 for k in kinds if k in CALL_ENTRIES),
        "tool_or_command": sum(1 for k in kinds if k[1] in ("tool", "command")),
        "mcp": kinds.count(("ask", "use_mcp_server")),
        "failed": sum(1 for e in ui if _kind(e) == ("say", "mcp_server_response") and e["text"].startswith("Error:\n"))
        + sum(len(FAILED_ANSWER.findall(r.get("request", ""))) for r in requests),
        "user": kinds.count(("say", "task")) + kinds.count(("say", "user_feedback"))
        + sum(1 for k in kinds[:first_request] if k == ("say", "text")),
        "harness": sum(1 for k in kinds if k[1] in ("auto_approval_max_req_reached", "mistake_limit_reached", "error")),
        "failed_llm": kinds.count(("say", "error_retry")) + kinds.count(("ask", "api_req_failed"))
        + sum(1 for r in requests if r.get("cancelReason") not in (None, "user_cancelled")),
        "compacted": sum(1 for a, b in zip([None, *ranges], ranges, strict=False) if b is not None and a != b),
    }


def _raw_api(path: Path) -> dict[str, Any]:
    history = json.loads(path.read_text(encoding="utf-8"))
    uses = [b for m in history if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    user_texts = [[b["text"] for b in m["content"] if b["type"] == "text"] for m in history if m["role"] == "user"]
    answer_or_context = re.compile(r"^(\[\w+(?: for [^\n]*)?\] Result:|<environment_details>|<task>)")
    return {
        "calls": len(uses),
        "names": Counter(b["name"] for b in uses),
        "failed": sum(len(FAILED_ANSWER.findall(t)) for texts in user_texts for t in texts),
        "user": sum(t.count("<task>") + t.count("<feedback>") for texts in user_texts for t in texts),
        "harness": sum(1 for texts in user_texts if any(not answer_or_context.match(t.lstrip()) for t in texts)),
        "llm": sum(1 for m in history if m["role"] == "assistant"),
    }


# ---- what the import wrote --------------------------------------------------------------------------------
def _tools(run: ImportedRun) -> list[dict[str, Any]]:
    return [s for s in run.trace["steps"] if "tool" in s]


def _origins(run: ImportedRun) -> Counter[str]:
    return Counter(s["message"].get("origin") for s in run.trace["steps"] if "message" in s)


def _failed_llm(run: ImportedRun) -> int:
    return sum(1 for s in run.trace["steps"] if "llm" in s and "error" in s["llm"])


def _validates_and_replays(run: ImportedRun, tmp_path: Path) -> None:
    trace = to_trace(run)
    out = tmp_path / f"{trace.name}.yaml"
    out.write_text(dumps(trace), encoding="utf-8")
    assert cli.main(["validate", str(out)]) == 0
    assert len(execute(trace).steps) >= 1


def test_the_api_history_matches_an_independent_count_of_its_json() -> None:
    raw = _raw_api(API)
    (run,) = import_runs(API)
    tools = _tools(run)
    assert len(tools) == raw["calls"] == 47  # SOURCES.md: 47 tool calls
    assert Counter(t["tool"] for t in tools) == raw["names"] == Counter(
        write_to_file=26, read_file=16, execute_command=2, search_files=1, replace_in_file=1, attempt_completion=1)
    assert run.counts["failed"] == raw["failed"] == 0  # SOURCES.md: 0 errors
    assert run.counts["denied"] == run.counts["cancelled"] == 0
    assert _origins(run) == Counter(user=raw["user"], harness=raw["harness"])
    assert sum(1 for s in run.trace["steps"] if "llm" in s) == raw["llm"]
    assert all(s["source"]["file"] == str(API) for s in run.trace["steps"])
    assert all("result" in t for t in tools[:-1]) and tools[-1]["tool"] == "attempt_completion"
    assert tools[0]["result"]["text"].startswith("using System;")
    assert not run.warnings and not run.unmapped


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: p.name)
def test_each_ui_log_matches_an_independent_count_of_its_json(path: Path) -> None:
    raw = _raw_ui(path)
    (run,) = import_runs(path)
    assert run.counts["calls"] == len(_tools(run)) == raw["calls"]
    assert run.counts["failed"] == raw["failed"]
    assert run.counts["denied"] == run.counts["cancelled"] == 0
    assert _origins(run) == Counter({k: raw[k] for k in ("user", "harness") if raw[k]})
    assert _failed_llm(run) == raw["failed_llm"]
    assert run.counts["compacted"] == raw["compacted"]
    assert all(s["source"]["file"] == str(path) and isinstance(s["source"]["index"], int) for s in run.trace["steps"])
    assert not run.warnings and not run.unmapped


@pytest.mark.parametrize(("path", "tool_or_command", "mcp"), [(UI_SAME_TASK, 46, 0), (XRAY, 67, 0), (JEEHUNTER, 52, 3)],
                         ids=lambda v: v.name if isinstance(v, Path) else str(v))
def test_sources_md_counts_of_tool_command_and_mcp_entries(path: Path, tool_or_command: int, mcp: int) -> None:
    raw = _raw_ui(path)
    assert (raw["tool_or_command"], raw["mcp"]) == (tool_or_command, mcp)
    (run,) = import_runs(path)
    own = Counter(t["tool"] for t in _tools(run))
    shown_alone = sum(own[n] for n in ("attempt_completion", "ask_followup_question", "plan_mode_respond",
                                       "load_mcp_documentation"))
    assert len(_tools(run)) - shown_alone - own["use_mcp_tool"] == tool_or_command and own["use_mcp_tool"] == mcp


def test_xray_edits_one_file_8_times_and_fails_one_model_request() -> None:
    (run,) = import_runs(XRAY)
    edits = [t for t in _tools(run) if t["tool"] == "replace_in_file"
             and t["args"]["path"] == "src/lib/tabs/changes/TaskListSubtab.svelte"]
    assert len(edits) == 8  # SOURCES.md: same file edited 8×
    assert all(e["result"]["text"].startswith("The content was successfully saved") for e in edits)
    cargo = [t for t in _tools(run)
             if t["tool"] == "execute_command" and t["args"]["command"].startswith("cargo check")]
    assert len(cargo) == 2 and cargo[0]["args"] == cargo[1]["args"]  # identical `cargo check … 2>&1` ×2
    retry = next(s for s in run.trace["steps"] if s.get("x-ui") == "error_retry")
    assert "ECONNRESET" in retry["llm"]["error"] and retry["source"]["index"] == 313
    assert _origins(run)["user"] == 1 + 6  # the task and 6 user_feedback turns


def test_jeehunter_mcp_failures_and_the_auto_approval_limit() -> None:
    (run,) = import_runs(JEEHUNTER)
    mcp = [t for t in _tools(run) if t["tool"] == "use_mcp_tool"]
    assert [(t["args"]["tool_name"], t["result"]["error"].splitlines()[-1]) for t in mcp] == [
        ("open_explorer", "Error: VSCode extension is not connected. Please make sure the extension is installed "
                          "and active."),
        ("open_explorer", "Error: VSCode extension is not connected. Please make sure the extension is installed "
                          "and active."),
        ("change_theme", "Error: Command timeout: vscode-commands.changeTheme")]
    (limit,) = [s for s in run.trace["steps"] if "message" in s and s["message"]["origin"] == "harness"]
    assert limit["x-ui"] == "auto_approval_max_req_reached"
    assert "auto-approved 20 API requests" in limit["message"]["text"]
    compiles = [t for t in _tools(run) if t["tool"] == "execute_command" and t["args"]["command"].endswith(
        'vscode-commands-extension"; npm run compile')]
    assert len(compiles) == 3  # SOURCES.md: `…vscode-commands-extension"; npm run compile` ×3


def test_a_tasks_two_files_give_the_same_calls() -> None:
    (api,) = import_runs(API)
    (ui,) = import_runs(UI_SAME_TASK)
    assert [t["tool"] for t in _tools(api)] == [t["tool"] for t in _tools(ui)]


def test_the_task_folder_reads_calls_from_the_api_history(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "1769053680585"
    folder.mkdir(parents=True)
    shutil.copy(API, folder / "api_conversation_history.json")
    shutil.copy(UI_SAME_TASK, folder / "ui_messages.json")
    assert detect(Source.from_path(folder), available()).name == "cline"
    (run,) = import_runs(folder)
    (alone,) = import_runs(API)
    assert run.run_id == "1769053680585" and run.trace["source"]["origin"] == str(folder)
    assert [(t["tool"], t["args"]) for t in _tools(run)] == [(t["tool"], t["args"]) for t in _tools(alone)]
    assert {s["source"]["file"] for s in run.trace["steps"]} == {str(folder / "api_conversation_history.json")}
    (ui_only,) = import_runs(folder / "ui_messages.json")
    assert ui_only.run_id == "1769053680585"


@pytest.mark.parametrize("path", [API, *UI_FILES], ids=lambda p: p.name)
def test_the_real_logs_are_detected_validate_and_replay(path: Path, tmp_path: Path) -> None:
    assert detect(Source.from_path(path), available()).name == "cline"
    (run,) = import_runs(path)
    _validates_and_replays(run, tmp_path)


def test_plain_anthropic_logs_still_go_to_anthropic() -> None:
    pool = available()
    assert detect(Source.from_path(FIXTURES / "anthropic_messages.json"), pool).name == "anthropic"
    assert detect(Source.from_path(FIXTURES / "anthropic_records.jsonl"), pool).name == "anthropic"
    assert detect(Source.from_path(FIXTURES / "openai_chat_run.json"), pool).name == "openai-chat"


def test_import_output_is_byte_identical_across_two_runs(tmp_path: Path) -> None:
    for out in ("a", "b"):
        assert cli.main(["import", str(CLINE), "-o", str(tmp_path / out)]) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len(names) == 4 and names == sorted(p.name for p in (tmp_path / "b").iterdir())
    assert all((tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes() for n in names)


# ---- small API histories: each marker, its near miss, refusals and XML tool tags -------------------------
TASK = {"role": "user", "content": [{"type": "text", "text": "<task>\nfix a.py\n</task>"},
                                    {"type": "text", "text": "<environment_details>\n# cwd\n</environment_details>"}]}


def _history(tmp_path: Path, *messages: dict[str, Any]) -> ImportedRun:
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps([TASK, *messages]), encoding="utf-8")
    (run,) = import_runs(path)
    return run


def _says(role: str, *texts: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": t} for t in texts]}


def _uses(tool: str, args: dict[str, Any], call_id: str = "toolu_1") -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": args}],
            "metrics": {"tokens": {"prompt": 5, "completion": 7, "cached": 100}}}


MARKERS = [
    ("read_file", "The tool execution failed with the following error:\n<error>\nENOENT\n</error>", "failed", None),
    ("write_to_file", "[ERROR] Failed to write the file", "failed", None),
    ("use_mcp_tool", "Error:\nError: VSCode extension is not connected.", "failed", None),
    ("execute_command", "The user denied this operation.", "denied", "user"),
    ("execute_command", "The user denied this operation and provided the following feedback:\n<feedback>\nno\n"
                        "</feedback>", "denied", "user"),
    ("read_file", "Access to .env is blocked by the .clineignore file settings. You must try to continue in the "
                  "task without using this file, or ask the user to update the .clineignore file.", "denied", "rule"),
]
NEAR_MISSES = [
    ("execute_command", "Command executed.\nOutput:\nerror: 3 tests failed\n[ERROR] in the build log"),
    ("read_file", "raise RuntimeError('The tool execution failed with the following error:')"),
    ("read_file", "Error:\nthis file's first line is 'Error:' (not an MCP call)"),
    ("read_file", "Note: The user denied this operation last week (quoted)"),
    ("read_file", "the .env: Access to it is blocked by the .clineignore file settings, says the README"),
]


@pytest.mark.parametrize(("tool", "answer", "how", "by"), MARKERS)
def test_each_answer_marker(tmp_path: Path, tool: str, answer: str, how: str, by: str | None) -> None:
    run = _history(tmp_path, _uses(tool, {"path": "a.py"}), _says("user", f"[{tool} for 'a.py'] Result:\n{answer}"))
    (call,) = _tools(run)
    if how == "failed":
        assert call["result"] == {"error": answer} and run.counts["failed"] == 1
    else:
        assert call[how]["by"] == by and call[how]["reason"] == answer.split("\n")[0] and "result" not in call
        assert run.counts[how] == 1 and run.counts["failed"] == 0
    if "<feedback>" in answer:
        assert [s["message"] for s in run.trace["steps"] if "message" in s][-1] == {
            "role": "user", "text": "no", "origin": "user"}


@pytest.mark.parametrize(("tool", "answer"), NEAR_MISSES)
def test_near_misses_are_ordinary_results(tmp_path: Path, tool: str, answer: str) -> None:
    run = _history(tmp_path, _uses(tool, {"path": "a.py"}), _says("user", f"[{tool} for 'a.py'] Result:\n{answer}"))
    (call,) = _tools(run)
    assert call["result"] == {"text": answer} and run.counts["failed"] == 0
    assert run.counts["denied"] == run.counts["cancelled"] == 0


def test_xml_tool_tags_the_one_tool_refusal_and_the_reissued_read(tmp_path: Path) -> None:
    two_reads = ("I'll read both.\n<read_file>\n<path>a.py</path>\n</read_file>\n"
                 "<read_file>\n<path>b.py</path>\n</read_file>")
    refusal = ("Tool [read_file] was not executed because a tool has already been used in this message. Only one "
               "tool may be used per message. You must assess the first tool's result before proceeding to use the "
               "next tool.")
    run = _history(tmp_path, _says("assistant", two_reads),
                   _says("user", "[read_file for 'a.py'] Result:\nA", refusal),
                   _says("assistant", "<read_file>\n<path>b.py</path>\n</read_file>"),
                   _says("user", "[read_file for 'b.py'] Result:\nB"))
    calls = _tools(run)
    assert [(c["tool"], c["args"]) for c in calls] == [("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"}),
                                                       ("read_file", {"path": "b.py"})]
    assert calls[0]["result"] == {"text": "A"} and calls[2]["result"] == {"text": "B"}
    assert calls[1]["denied"] == {"reason": refusal, "by": "rule"}
    assert run.counts["denied"] == 1 and not run.warnings


def test_a_rejected_call_skips_the_rest_of_its_message(tmp_path: Path) -> None:
    text = ("<write_to_file>\n<path>a</path>\n<content>x</content>\n</write_to_file>\n"
            "<read_file>\n<path>b</path>\n</read_file>")
    run = _history(tmp_path, _says("assistant", text),
                   _says("user", "[write_to_file for 'a'] Result:\nThe user denied this operation.",
                         "Skipping tool [read_file for 'b'] due to user rejecting a previous tool."))
    write, read = _tools(run)
    assert write["denied"]["by"] == "user" and read["cancelled"] == {
        "reason": "Skipping tool [read_file for 'b'] due to user rejecting a previous tool."}


def test_native_tool_results_pair_by_id_and_messages_by_origin(tmp_path: Path) -> None:
    run = _history(tmp_path, _uses("read_file", {"path": "a.py"}, "toolu_9"),
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "A"},
                                                {"type": "text", "text": "[ERROR] You did not use a tool in your "
                                                 "previous response! Please retry with a tool use."}]},
                   _says("user", "[TASK RESUMPTION] This task was interrupted 1 hour ago.\n\nNew instructions for "
                                 "task continuation:\n<user_message>\nnow add tests\n</user_message>"))
    (call,) = _tools(run)
    assert call["result"] == {"text": "A"} and call["x-call-id"] == "toolu_9"
    messages = [s["message"] for s in run.trace["steps"] if "message" in s]
    assert [(m["origin"], m["text"][:20]) for m in messages] == [
        ("user", "fix a.py"), ("harness", "[ERROR] You did not "), ("user", "now add tests"),
        ("harness", "[TASK RESUMPTION] Th")]
    llm = next(s for s in run.trace["steps"] if "llm" in s)
    assert llm["llm"] == {"input_tokens": 105, "output_tokens": 7} and llm["x-uncached-input-tokens"] == 5


def test_a_call_with_no_answer_is_a_warning_unless_it_ends_the_task(tmp_path: Path) -> None:
    run = _history(tmp_path, _uses("read_file", {"path": "a.py"}),
                   _says("user", "<environment_details>\n</environment_details>"),
                   _uses("attempt_completion", {"result": "done"}, "toolu_2"))
    read, done = _tools(run)
    assert read["x-result-missing"] is True and "x-result-missing" not in done
    assert len(run.warnings) == 1 and "read_file" in run.warnings[0]


# ---- small UI logs: a retry loop, failed requests, limits; a folder that has both files ------------------
def _entry(k: int, how: str, kind: str, text: str = "", at: int = 0, **more: Any) -> dict[str, Any]:
    return {"ts": 1_700_000_000_000 + k, "type": how, how: kind, "text": text, "conversationHistoryIndex": at, **more}


def _request(text: str, **more: Any) -> str:
    return json.dumps({"request": text, "tokensIn": 3, "tokensOut": 4, "cacheWrites": 0, "cacheReads": 10, **more})


def test_a_loop_of_37_error_retries_is_37_failed_model_requests(tmp_path: Path) -> None:
    retry = json.dumps({"attempt": 1, "maxAttempts": 3, "delaySeconds": 2, "errorMessage": "429 rate limited"})
    ui = [_entry(0, "say", "task", "fix it", -1),
          _entry(1, "say", "api_req_started", _request("<task>fix it</task>"), -1),
          *[_entry(2 + n, "say", "error_retry", retry) for n in range(37)],
          _entry(40, "ask", "api_req_failed", "529 overloaded"),
          _entry(41, "ask", "mistake_limit_reached", "Cline is having trouble…"),
          _entry(42, "say", "hook_output", "?")]
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(ui), encoding="utf-8")
    (run,) = import_runs(path)
    assert _failed_llm(run) == 38 and run.counts["calls"] == 0
    assert _origins(run) == Counter(user=1, harness=1)
    first = next(s for s in run.trace["steps"] if "llm" in s)
    assert first["llm"] == {"input_tokens": 13, "output_tokens": 4}
    assert run.unmapped == [f"{path} item 41: say hook_output"]


def test_ui_answers_mark_denied_and_failed_calls(tmp_path: Path) -> None:
    tool = json.dumps({"tool": "readFile", "path": "a.py", "content": "/abs/a.py"})
    ui = [_entry(0, "say", "task", "fix it", -1), _entry(1, "say", "api_req_started", _request("<task/>"), -1),
          _entry(2, "ask", "tool", tool), _entry(3, "ask", "command", "rm -rf buildREQ_APP"),
          _entry(4, "say", "api_req_started", _request(
              "[read_file for 'a.py'] Result:\nThe user denied this operation.\n\n[execute_command for 'rm -rf build'] "
              "Result:\nThe tool execution failed with the following error:\n<error>\nEPERM\n</error>\n\n"
              "<environment_details>\n# cwd\n</environment_details>"), 2)]
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(ui), encoding="utf-8")
    (run,) = import_runs(path)
    read, command = _tools(run)
    assert read["tool"] == "read_file" and read["args"] == {"path": "a.py"} and read["denied"]["by"] == "user"
    assert command["args"] == {"command": "rm -rf build"}
    failure = "The tool execution failed with the following error:\n<error>\nEPERM\n</error>"
    assert command["result"] == {"error": failure}


def test_the_folder_adds_what_only_the_ui_log_holds_after_the_message_it_names(tmp_path: Path) -> None:
    folder = tmp_path / "rooveterinaryinc.roo-cline" / "tasks" / "t1"
    folder.mkdir(parents=True)
    history = [TASK, _uses("read_file", {"path": "a.py"}), _says("user", "[read_file for 'a.py'] Result:\nA"),
               _says("assistant", "done")]
    (folder / "api_conversation_history.json").write_text(json.dumps(history), encoding="utf-8")
    retry = json.dumps({"attempt": 1, "maxAttempts": 3, "delaySeconds": 2, "errorMessage": "ECONNRESET"})
    ui = [_entry(0, "say", "task", "fix a.py", -1), _entry(1, "say", "error_retry", retry, 0),
          _entry(2, "say", "tool", json.dumps({"tool": "readFile", "path": "a.py"}), 0),
          _entry(3, "ask", "mistake_limit_reached", "trouble", 2, conversationHistoryDeletedRange=[1, 2])]
    (folder / "ui_messages.json").write_text(json.dumps(ui), encoding="utf-8")
    (run,) = import_runs(folder)
    shape = [(next(k for k in ("message", "llm", "tool", "compacted") if k in s), s["source"]["file"].rsplit("/", 1)[1],
              s["source"]["index"]) for s in run.trace["steps"]]
    assert shape == [("message", "api_conversation_history.json", 0), ("llm", "ui_messages.json", 1),
                     ("llm", "api_conversation_history.json", 1), ("tool", "api_conversation_history.json", 1),
                     ("compacted", "ui_messages.json", 3), ("message", "ui_messages.json", 3),
                     ("llm", "api_conversation_history.json", 3)]
    assert run.run_id == "t1" and run.counts["calls"] == 1 and not run.warnings


# ---- bad input ------------------------------------------------------------------------------------------
def test_a_truncated_log_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "ui_messages.json"
    cut.write_text(JEEHUNTER.read_text(encoding="utf-8")[:3000], encoding="utf-8")
    assert cli.main(["import", "--from", "cline", str(cut), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"loopguard: error: {cut}:") and "invalid JSON" in err[0]


def test_a_folder_without_task_files_and_another_document_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"no api_conversation_history\.json or ui_messages\.json"):
        import_runs(Source.from_path(tmp_path), "cline")
    with pytest.raises(TraceError, match="not a Cline log") as exc:
        import_runs(Source.from_bytes("x.json", b'{"messages": []}'), "cline")
    assert "\n" not in str(exc.value)


TEXTS = {p.name: p.read_text(encoding="utf-8")[:60_000] for p in (API, UI_SAME_TASK)}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(TEXTS)), st.integers(min_value=0, max_value=59_999))
def test_every_truncation_is_a_one_line_trace_error(name: str, cut: int) -> None:
    source = Source.from_bytes(name, TEXTS[name][:cut].encode("utf-8"))
    with pytest.raises(TraceError) as exc:
        import_runs(source, "cline")
    assert "\n" not in str(exc.value)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                     max_leaves=12)
_UI_KINDS = st.sampled_from(["tool", "command", "command_output", "api_req_started", "use_mcp_server", "text",
                             "mcp_server_response", "error_retry", "user_feedback", "followup", "completion_result"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["say", "ask"]), _UI_KINDS,
                          st.one_of(st.text(max_size=30), _JSON.map(json.dumps)), _JSON), max_size=8),
       _JSON)
def test_odd_entries_never_crash_the_import(entries: list[tuple[str, str, str, Any]], content: Any) -> None:
    ui = [{"ts": 1, "type": how, how: kind, "text": text, "conversationHistoryIndex": at,
           "conversationHistoryDeletedRange": at} for how, kind, text, at in entries] or [{"ts": 1, "type": "say"}]
    (run,) = import_runs(Source.from_bytes("ui.json", json.dumps(ui).encode("utf-8")), "cline")
    to_trace(run)
    history = [TASK, {"role": "assistant", "content": content}, {"role": "user", "content": content}]
    (run,) = import_runs(Source.from_bytes("api.json", json.dumps(history).encode("utf-8")), "cline")
    to_trace(run)
