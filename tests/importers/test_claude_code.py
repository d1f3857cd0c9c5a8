"""The `claude-code` importer on the real Claude Code transcripts of ../shared/corpus/sessions/claude-code.

Each file's counts are checked against an independent reading of its raw JSON lines (nothing here calls the
importer's helpers): calls are the distinct `tool_use` ids of `assistant` lines, failures the `is_error`
results (and non-zero `Exit code N` results) that are not refusals or cancellations, messages by origin the
user lines with text. The texts that mean a call never ran or failed are each checked on small transcripts
written here, with near misses beside them.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import ImportedRun, Source, available, detect, import_runs, to_trace
from pytest_loopguard.importers.recognise import skip_note
from pytest_loopguard.io._format import dumps
from pytest_loopguard.io._runner import execute

SESSIONS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "sessions" / "claude-code"
FILES = sorted(p.name for p in SESSIONS.glob("*.jsonl"))
FIXTURES = Path(__file__).parent / "fixtures"
FA = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"  # spotter-fa812bfe.jsonl's session id

# SOURCES.md §1's counts (tool calls, is_error results), made there by other scripts: a cross-check of the
# independent reading below
SOURCES_MD = {
    "spotter-ae4a77f8.jsonl": (242, 12),
    "spotter-fa812bfe.jsonl": (197, 8),
    "spotter-fa812bfe-sub-agent-acompact-70d8e7.jsonl": (0, 0),
    "claude-reliability-python-to-rust-port.jsonl": (39, 0),
    "claude-reliability-coverage-test-fix.jsonl": (13, 1),
    "sniffly-d3ad4cdc.jsonl": (59, 4),
}

REFUSED = ("The user doesn't want to proceed with this tool use", "The user doesn't want to take this action",
           "[Request interrupted by user")
RULE = re.compile(r"Permission to use .* has been denied|Claude requested permissions to .* haven't granted it yet")
SIBLING = re.compile(r"<tool_use_error>(Sibling tool call errored|Cancelled: parallel tool call .* errored)")
NOT_A_PROMPT = ("[Request interrupted", "<local-command-", "<task-notification>", "<bash-stdout>", "<bash-stderr>",
                "<system-reminder>", "Caveat: The messages below")


def _lines(name: str) -> list[tuple[int, dict[str, Any]]]:
    text = (SESSIONS / name).read_text(encoding="utf-8")
    return [(n, json.loads(line)) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text")


def _raw_counts(name: str) -> Counter[str]:
    """What the file holds, read from its lines with rules of this test's own."""
    counts: Counter[str] = Counter()
    calls: set[str] = set()
    agents = {row["agentId"] for _, row in _lines(name) if row.get("isSidechain") is True and "agentId" in row}
    # a subagent's prompts are its parent agent's words; the compaction agent's are Claude Code's own
    prompt = "messages.harness" if any(a.startswith("acompact") for a in agents) else "messages.agent"
    for _, row in _lines(name):
        content = (row.get("message") or {}).get("content")
        if row.get("type") == "assistant":
            calls |= {b["id"] for b in content if b.get("type") == "tool_use"}
        if row.get("type") != "user" or row.get("isCompactSummary"):
            continue
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        for b in results:
            text = _text(b.get("content"))
            if b.get("is_error") and (text.startswith(REFUSED) or RULE.match(text)):
                counts["denied"] += 1
            elif b.get("is_error") and SIBLING.match(text):
                counts["cancelled"] += 1
            elif b.get("is_error") or re.match(r"Exit code [1-9]", text):
                counts["failed"] += 1
        texts = [b for b in blocks if b.get("type") == "text"]
        if texts:
            said = "\n".join(b["text"] for b in texts)
            harness = results or row.get("isMeta") or said.lstrip().startswith(NOT_A_PROMPT)
            counts["messages.harness" if harness else prompt if agents else "messages.user"] += 1
    counts["calls"] = len(calls)
    return counts


def _import(path: Path) -> ImportedRun:
    (run,) = import_runs(path)
    return run


@pytest.mark.parametrize("name", FILES)
def test_counts_match_the_file(name: str) -> None:
    raw = _raw_counts(name)
    assert (raw["calls"], raw["failed"]) == SOURCES_MD[name]
    run = _import(SESSIONS / name)
    counts = run.counts
    for key in ("calls", "failed", "denied", "cancelled", "rejected", "messages.user", "messages.harness",
                "messages.agent"):
        assert counts[key] == raw[key], key
    steps = run.trace["steps"]
    assert sum("tool" in s for s in steps) == raw["calls"]
    assert sum("denied" in s for s in steps) == raw["denied"]
    assert sum("cancelled" in s for s in steps) == raw["cancelled"]
    origins = Counter(s["message"].get("origin") for s in steps if "message" in s)
    assert origins == Counter({k.split(".")[1]: v for k, v in raw.items() if k.startswith("messages.") and v})


@pytest.mark.parametrize("name", FILES)
def test_every_step_points_at_its_line(name: str) -> None:
    lines = (SESSIONS / name).read_text(encoding="utf-8").splitlines()
    run = _import(SESSIONS / name)
    assert run.trace["steps"]
    for step in run.trace["steps"]:
        source = step["source"]
        assert source["file"] == str(SESSIONS / name)
        assert isinstance(source["index"], str), step
        assert json.dumps(source["index"]) in lines[source["row"] - 1], step  # the uuid or tool_use id is on it


@pytest.mark.parametrize("name", FILES)
def test_one_llm_step_per_message_with_its_tokens_counted_once(name: str) -> None:
    usage: dict[str, dict[str, int]] = defaultdict(dict)
    for _, row in _lines(name):
        if row.get("type") == "assistant":
            m = row["message"]
            for k, v in m["usage"].items():
                if isinstance(v, int):
                    usage[m["id"]][k] = max(usage[m["id"]].get(k, 0), v)
    llm = [s for s in _import(SESSIONS / name).trace["steps"] if "llm" in s]
    assert [s["x-message-id"] for s in llm] == list(usage)
    assert sum(s["llm"]["output_tokens"] for s in llm) == sum(u["output_tokens"] for u in usage.values())
    prompt = sum(u["input_tokens"] + u.get("cache_creation_input_tokens", 0) + u.get("cache_read_input_tokens", 0)
                 for u in usage.values())
    assert sum(s["llm"]["input_tokens"] for s in llm) == prompt


@pytest.mark.parametrize("name", FILES)
def test_the_trace_validates_replays_and_is_the_same_twice(name: str, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        assert cli.main(["import", str(SESSIONS / name), "-o", str(out), "--format", "jsonl"]) == 0
    (written,) = first.iterdir()
    assert written.read_bytes() == (second / written.name).read_bytes()
    assert cli.main(["validate", str(written)]) == 0
    result = execute(to_trace(_import(SESSIONS / name)))
    assert len(result.steps) == len(_import(SESSIONS / name).trace["steps"])


def test_compaction_is_a_step_with_its_summary_and_summary_lines_are_header_facts() -> None:
    run = _import(SESSIONS / "spotter-fa812bfe.jsonl")
    (compacted,) = [s for s in run.trace["steps"] if "compacted" in s]
    assert compacted["compacted"]["trigger"] == "auto" and compacted["compacted"]["tokens_before"] == 167117
    assert compacted["compacted"]["text"].startswith("This session is being continued")
    assert compacted["source"]["row"] == 1584 and compacted["x-summary-source"]["row"] == 1585
    assert not any(s["message"]["text"].startswith("This session is being continued")
                   for s in run.trace["steps"] if "message" in s)
    manual = _import(SESSIONS / "spotter-ae4a77f8.jsonl")
    assert [s["compacted"]["trigger"] for s in manual.trace["steps"] if "compacted" in s] == ["manual"]
    old = _import(SESSIONS / "sniffly-d3ad4cdc.jsonl").trace
    assert old["x-summaries"] == [_lines("sniffly-d3ad4cdc.jsonl")[0][1]["summary"]]
    assert old["x-claude-code-version"] == "1.0.17" and old["source"]["agent"] == "claude-code"


def test_lines_that_are_not_steps_are_unmapped_by_type() -> None:
    run = _import(SESSIONS / "spotter-ae4a77f8.jsonl")
    kinds = Counter(item.split(": ", 1)[1] for item in run.unmapped)
    assert kinds == Counter({"progress line (hook_progress)": 1447, "progress line (bash_progress)": 225,
                             "progress line (agent_progress)": 25, "file-history-snapshot line": 26,
                             "system line (stop_hook_summary)": 2, "system line (turn_duration)": 2})
    assert not run.warnings


# ---- small transcripts: the markers of calls that never ran or failed ---------------------------------------
def _line(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "sessionId": "s1", "uuid": f"u{n}", "timestamp": f"2026-01-01T00:00:{n:02d}Z",
            "isSidechain": False, **fields}


def _call(n: int, call_id: str, command: str = "ls") -> dict[str, Any]:
    return _line("assistant", n, message={"id": f"m{n}", "role": "assistant", "model": "claude-x", "content": [
        {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}],
        "usage": {"input_tokens": 1, "output_tokens": 1}})


def _result(n: int, call_id: str, text: str, is_error: bool | None = True, details: Any = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    if is_error is not None:
        block["is_error"] = is_error
    row = _line("user", n, message={"role": "user", "content": [block]})
    if details is not None:
        row["toolUseResult"] = details
    return row


def _transcript(tmp_path: Path, rows: list[dict[str, Any]], name: str = "s1.jsonl") -> ImportedRun:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run = _import(path)
    to_trace(run)
    return run


def _one_call(tmp_path: Path, text: str, is_error: bool | None = True, details: Any = None) -> dict[str, Any]:
    run = _transcript(tmp_path, [_line("user", 1, message={"role": "user", "content": "go"}), _call(2, "t1"),
                                 _result(3, "t1", text, is_error, details)])
    (step,) = [s for s in run.trace["steps"] if "tool" in s]
    return step


REFUSAL = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
           "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
           "tell you how to proceed.")


@pytest.mark.parametrize(("text", "by"), [
    (REFUSAL, "user"),
    (REFUSAL.replace("STOP what", "To tell you how to proceed, the user said:\nuse pytest -x instead. STOP what"),
     "user"),
    ("The user doesn't want to take this action right now. STOP what you are doing and wait for the user to tell "
     "you how to proceed.", "user"),
    ("[Request interrupted by user for tool use]", "user"),
    ("Permission to use Bash with command rm -rf build has been denied.", "rule"),
    ("Claude requested permissions to write to /tmp/x.py, but you haven't granted it yet.", "rule"),
    ("Claude requested permissions to use WebFetch, but you haven't granted it yet.", "rule"),
])
def test_refused_calls_are_denied(tmp_path: Path, text: str, by: str) -> None:
    step = _one_call(tmp_path, text, details="User rejected tool use" if by == "user" else None)
    assert step["denied"] == {"reason": text, "by": by} and "result" not in step


@pytest.mark.parametrize("text", [
    "<tool_use_error>Sibling tool call errored</tool_use_error>",
    "<tool_use_error>Cancelled: parallel tool call Bash(./build/ccompiler test/invalid/test_chai…) errored"
    "</tool_use_error>",
])
def test_calls_cancelled_by_a_failing_sibling(tmp_path: Path, text: str) -> None:
    step = _one_call(tmp_path, text)
    assert step["cancelled"] == {"reason": text} and "result" not in step


def test_a_refusal_text_in_a_successful_result_is_output(tmp_path: Path) -> None:
    step = _one_call(tmp_path, REFUSAL, is_error=False)  # e.g. `cat` of a file that quotes the text
    assert step["result"] == {"text": REFUSAL}


@pytest.mark.parametrize(("text", "details", "exit_code"), [
    ("Exit code 2\nmix test failed", None, 2),  # the shell's exit, is_error or not
    ("<tool_use_error>File does not exist.</tool_use_error>", None, None),
    ("String to replace not found in file.", "Error: String to replace not found in file.", None),
])
def test_failure_markers_without_an_is_error_flag(tmp_path: Path, text: str, details: Any,
                                                  exit_code: int | None) -> None:
    step = _one_call(tmp_path, text, is_error=None, details=details)
    assert step["result"]["error"] == text and step["result"].get("exit_code") == exit_code


@pytest.mark.parametrize("text", [
    "Compiling 3 files\n0 errors, 2 warnings", "error: none\nExit code 1 was expected by this test",
    "Exit code 0", "<tool_use_error> is what the docs call it",
])
def test_near_misses_are_not_failures(tmp_path: Path, text: str) -> None:
    step = _one_call(tmp_path, text, is_error=False)
    assert "error" not in step["result"] and not step["result"].get("exit_code")


def test_is_error_is_a_failure_with_the_exit_code_kept(tmp_path: Path) -> None:
    step = _one_call(tmp_path, "Exit code 128\nfatal: no upstream", details={"interrupted": False})
    assert step["result"] == {"error": "Exit code 128\nfatal: no upstream", "exit_code": 128}
    interrupted = _one_call(tmp_path, "partial output", is_error=False,
                            details={"stdout": "", "stderr": "", "interrupted": True})
    assert interrupted["x-interrupted"] is True and interrupted["result"] == {"text": "partial output"}


def test_a_parallel_batch_results_arrive_between_the_streamed_lines(tmp_path: Path) -> None:
    usage = {"input_tokens": 2, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 10}

    def part(n: int, block: dict[str, Any], out: int) -> dict[str, Any]:
        return _line("assistant", n, message={"id": "m1", "role": "assistant", "model": "claude-x",
                                              "content": [block], "usage": {**usage, "output_tokens": out}})

    run = _transcript(tmp_path, [
        _line("user", 1, message={"role": "user", "content": "go"}),
        part(2, {"type": "text", "text": "Two at once."}, 1),
        part(3, {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "false"}}, 1),
        _result(4, "a", "Exit code 1"),
        part(5, {"type": "tool_use", "id": "b", "name": "Read", "input": {"file_path": "x"}}, 40),
        _result(6, "b", "<tool_use_error>Sibling tool call errored</tool_use_error>"),
        _line("user", 7, message={"role": "user", "content": [{"type": "text", "text":
                                                               "[Request interrupted by user for tool use]"}]}),
    ])
    steps = run.trace["steps"]
    assert [next(k for k in ("message", "llm", "tool") if k in s) for s in steps] == [
        "message", "llm", "tool", "tool", "message"]
    assert steps[1]["llm"] == {"input_tokens": 112, "output_tokens": 40, "text": "Two at once."}
    assert steps[2]["result"]["exit_code"] == 1 and "cancelled" in steps[3]
    assert steps[4]["message"]["origin"] == "harness"
    assert (run.counts["failed"], run.counts["cancelled"], run.counts["messages.user"]) == (1, 1, 1)


def test_line_separators_inside_a_line_do_not_split_it(tmp_path: Path) -> None:
    prompt = "paste:\u2028two\x1cthree\x0bfour\r"  # JSON.stringify writes these raw; splitlines() splits at them
    path = tmp_path / "s1.jsonl"
    rows = [_line("user", 1, message={"role": "user", "content": prompt}), _call(2, "t1"),
            _result(3, "t1", "ok", False)]
    path.write_text("\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\r\n", encoding="utf-8")
    run = _import(path)
    assert run.trace["steps"][0]["message"]["text"] == prompt and run.counts["calls"] == 1 and not run.warnings


def test_compaction_lines_of_a_small_transcript(tmp_path: Path) -> None:
    run = _transcript(tmp_path, [
        {"type": "summary", "summary": "Fix the parser", "leafUuid": "u9"},
        _line("user", 1, message={"role": "user", "content": "go"}),
        _line("system", 2, subtype="compact_boundary", content="Conversation compacted",
              compactMetadata={"trigger": "manual", "preTokens": 5000}),
        _line("user", 3, isCompactSummary=True, message={"role": "user", "content": "Summary: parser fixed."}),
        _line("user", 4, isCompactSummary=True, message={"role": "user", "content": "An older lone summary."}),
        _line("queue-operation", 5, operation="enqueue"),
        _line("some-future-line", 6),
    ])
    kinds = [s.get("compacted") for s in run.trace["steps"] if "compacted" in s]
    assert kinds == [{"trigger": "manual", "tokens_before": 5000, "text": "Summary: parser fixed."},
                     {"text": "An older lone summary."}]
    assert run.trace["x-summaries"] == ["Fix the parser"]
    assert sorted(i.split(": ", 1)[1] for i in run.unmapped) == ["queue-operation line", "some-future-line line"]


# ---- subagents: a session folder laid out as Claude Code lays it out ----------------------------------------
def _project(root: Path) -> Path:
    """~/.claude/projects/<project>/: the fa812bfe session, its compaction agent, and its two Task subagents
    written back from the copies the main file holds in its `agent_progress` lines."""
    project = root / "-home-USER-projects-spotter"
    subagents = project / FA / "subagents"
    subagents.mkdir(parents=True)
    shutil.copy(SESSIONS / "spotter-fa812bfe.jsonl", project / f"{FA}.jsonl")
    shutil.copy(SESSIONS / "spotter-fa812bfe-sub-agent-acompact-70d8e7.jsonl",
                subagents / "agent-acompact-70d8e7.jsonl")
    lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for _, row in _lines("spotter-fa812bfe.jsonl"):
        data = row.get("data") or {}
        if row.get("type") == "progress" and data.get("type") == "agent_progress":
            m = data["message"]
            lines[data["agentId"]].append({"type": m["type"], "message": m["message"], "uuid": m["uuid"],
                                           "timestamp": m["timestamp"], "isSidechain": True,
                                           "agentId": data["agentId"], "sessionId": FA})
    for agent_id, rows in lines.items():
        (subagents / f"agent-{agent_id}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                                           encoding="utf-8")
    return project


def _subagent_calls(path: Path) -> int:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return len({b["id"] for r in rows if r["type"] == "assistant" for b in r["message"]["content"]
                if b.get("type") == "tool_use"})


def test_subagents_follow_the_task_call_that_started_them(tmp_path: Path) -> None:
    project = _project(tmp_path)
    subagents = sorted((project / FA / "subagents").iterdir())
    run = _import(project / f"{FA}.jsonl")
    steps = run.trace["steps"]
    assert run.counts["calls"] == 197 + sum(_subagent_calls(p) for p in subagents)
    for agent_id, task_call in (("a93ccab", "toolu_01Y64XEaRvUYinzv9rW9qZXd"),
                                ("aa84377", "toolu_013mmyY3eDBg4Ji6oAszYt6p")):
        mine = [i for i, s in enumerate(steps) if s.get("agent") == f"agent-{agent_id}"]
        assert mine == list(range(mine[0], mine[-1] + 1))  # together, right after the Task call
        task = steps[mine[0] - 1]
        assert task["tool"] == "Task" and task["source"]["index"] == task_call and task["x-subagent"] == agent_id
        assert all(steps[i]["x-parent-call"] == task_call for i in mine)
        assert all(steps[i]["source"]["file"].endswith(f"agent-{agent_id}.jsonl") for i in mine)
        prompt = steps[mine[0]]["message"]
        assert prompt["origin"] == "agent" and prompt["name"] == "main"  # no reset of the main agent's counts
    compact = [i for i, s in enumerate(steps) if s.get("agent") == "agent-acompact-70d8e7"]
    assert "compacted" in steps[compact[-1] + 1]  # the compaction agent's summary comes right before its result
    assert "x-parent-call" not in steps[compact[0]]
    assert run.counts["messages.user"] == 2  # only the person's two prompts


def test_a_project_folder_a_session_folder_and_a_lone_subagent_file(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (session,) = import_runs(project)
    assert session.run_id == FA and session.counts["calls"] > 197
    alone = import_runs(project / FA)  # the session folder: its subagents, each a run of its own
    assert [r.run_id for r in alone] == [f"{FA}-agent-a93ccab", f"{FA}-agent-aa84377", f"{FA}-agent-acompact-70d8e7"]
    assert [r.run_id for r in import_runs(project / FA / "subagents")] == [r.run_id for r in alone]
    (one,) = import_runs(project / FA / "subagents" / "agent-a93ccab.jsonl")
    assert {s.get("agent") for s in one.trace["steps"]} == {"agent-a93ccab"}
    assert one.counts["calls"] == _subagent_calls(project / FA / "subagents" / "agent-a93ccab.jsonl")
    assert cli.main(["import", str(tmp_path), "-o", str(tmp_path / "out")]) == 0
    assert [p.name for p in sorted((tmp_path / "out").iterdir())] == [f"{FA}.yaml"]


def test_a_folder_with_other_logs_is_walked_file_by_file(tmp_path: Path) -> None:
    shutil.copy(SMALL, tmp_path / "s1.jsonl")
    (tmp_path / "other").mkdir()
    shutil.copy(FIXTURES / "anthropic_records.jsonl", tmp_path / "other" / "a.jsonl")
    with pytest.raises(TraceError, match="no importer recognises"):  # not a project folder: its logs not swallowed
        detect(Source.from_path(tmp_path), available())
    assert cli.main(["import", str(tmp_path), "-o", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.yaml", "s1.yaml"]


def test_detection_claude_code_wins_for_its_files_and_anthropic_keeps_plain_logs() -> None:
    pool = available()
    for name in FILES:
        assert detect(Source.from_path(SESSIONS / name), pool).name == "claude-code"
    assert detect(Source.from_path(SESSIONS), pool).name == "claude-code"
    for fixture in ("anthropic_messages.json", "anthropic_records.jsonl"):
        assert detect(Source.from_path(FIXTURES / fixture), pool).name == "anthropic"
    note = skip_note("traces/s.jsonl", SESSIONS / FILES[0])
    assert note == "traces/s.jsonl looks like a Claude Code session transcript: loopguard import it"


# ---- malformed and truncated input --------------------------------------------------------------------------
SMALL = SESSIONS / "claude-reliability-coverage-test-fix.jsonl"


def test_a_last_line_cut_short_is_skipped_with_a_warning(tmp_path: Path) -> None:
    data = SMALL.read_bytes().rstrip(b"\n")
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[:-40])
    run = _import(cut)
    (warning,) = run.warnings
    assert re.fullmatch(rf"{re.escape(str(cut))}:38: the last line is cut short \(.*\); skipped", warning)
    assert run.counts["calls"] == 13 and run.counts["failed"] == 1 and len(run.trace["steps"]) == 29  # of 30


def test_a_broken_middle_line_fails_the_file_naming_it(tmp_path: Path) -> None:
    lines = SMALL.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[9] = lines[9][:50] + "\n"
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(TraceError, match=r"broken\.jsonl:10: invalid JSON on this line"):
        import_runs(broken)
    lines[9] = "[1, 2]\n"
    broken.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(TraceError, match=r"broken\.jsonl:10: expected a JSON object .*, got list"):
        import_runs(broken)


def _cli_import(data: bytes) -> tuple[int, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "session.jsonl"
        log.write_bytes(data)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(["import", str(log), "-o", str(Path(tmp) / "out")])
    return code, [line for line in err.getvalue().splitlines() if line.startswith("loopguard:")]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=SMALL.stat().st_size), st.integers(min_value=0, max_value=37),
       st.binary(max_size=8))
def test_truncated_or_corrupted_files_exit_0_or_2_with_one_line(cut: int, line: int, junk: bytes) -> None:
    data = SMALL.read_bytes()
    code, errors = _cli_import(data[:cut])
    assert code in (0, 2) and len(errors) == (code == 2), errors
    lines = data.splitlines(keepends=True)
    lines[line] = lines[line][: len(lines[line]) // 2] + junk + b"\n"
    code, errors = _cli_import(b"".join(lines))
    assert code in (0, 2) and len(errors) == (code == 2), errors


def test_dumped_once_more_the_trace_is_unchanged() -> None:
    run = _import(SESSIONS / "spotter-ae4a77f8.jsonl")
    assert dumps(to_trace(run)) == dumps(to_trace(_import(SESSIONS / "spotter-ae4a77f8.jsonl")))


def test_an_integer_past_the_digit_limit_is_one_line_exit_2(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # found by the import fuzz profile (seed 48611): a plain ValueError from json.loads on a later line
    from pytest_loopguard.cli import _main as cli

    fixture = Path(__file__).parent / "fixtures" / "claude_code_int_digits.jsonl"
    assert cli.main(["import", str(fixture), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("loopguard: error:") and "cannot be read" in err[0]
