"""`loopguard scan`: the agents' session logs found where each agent keeps them (a fake home built from the real
files of ../shared/corpus/sessions), the loops SOURCES.md names reported and none on a healthy session, the
options, the report forms, saved traces that validate, secrets never shown, and the logs left as they were."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.cli import _import_logs as import_cmd
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.cli import _scan_run as scan_cmd
from pytest_loopguard.cli._scan_run import _progress
from pytest_loopguard.importers import ImportedRun, Importer, Source, available
from pytest_loopguard.io._format import trace_from_mapping
from pytest_loopguard.runtime._policy import resolve_policy
from pytest_loopguard.scan._discover import LogFile, discover
from pytest_loopguard.scan._loops import find_loops

SESSIONS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "sessions"
SECRET = "sk-proj-Zq7XtT3BlbkFJ9r2mVwQ4nL8sK1pA6dE0yH5uC"
ENV_NAMES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_CONFIG_HOME", "APPDATA",
             "AIDER_CHAT_HISTORY_FILE", "USERPROFILE", "SOURCE_DATE_EPOCH")
CLAUDE_PROJECT = ".claude/projects/-home-u-proj"
SPOTTER = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
SPOTTER2 = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"
POLLS = "rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
CODE_TASKS = ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks"
ROO_TASKS = ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks"
COMMIT = "git add -A && git commit"

# each corpus file where its agent keeps it (relative to the home folder); the Claude Code subagent file goes in
# its session's folder, so it is part of that session
LAYOUT = {
    f"{CLAUDE_PROJECT}/{SPOTTER}.jsonl": "claude-code/spotter-ae4a77f8.jsonl",
    f"{CLAUDE_PROJECT}/{SPOTTER2}.jsonl": "claude-code/spotter-fa812bfe.jsonl",
    f"{CLAUDE_PROJECT}/{SPOTTER2}/subagents/agent-acompact-70d8e7.jsonl":
        "claude-code/spotter-fa812bfe-sub-agent-acompact-70d8e7.jsonl",
    ".claude/projects/-tmp-rel/0b6b4c9e-1111-4a6f-9e57-5c1d1b7e0a01.jsonl":
        "claude-code/claude-reliability-coverage-test-fix.jsonl",
    ".claude/projects/-tmp-rel/0b6b4c9e-2222-4a6f-9e57-5c1d1b7e0a02.jsonl":
        "claude-code/claude-reliability-python-to-rust-port.jsonl",
    ".claude/projects/-Users-chip-dev-ai-music/d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl":
        "claude-code/sniffly-d3ad4cdc.jsonl",
    f".codex/sessions/2026/02/23/{POLLS}": "codex/localpush-rollout-2026-02-23T12-40-23.jsonl",
    ".codex/sessions/2026/02/23/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl":
        "codex/localpush-rollout-2026-02-23T12-47-42.jsonl",
    ".codex/sessions/2025/11/17/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl":
        "codex/acidicsoil-rollout-2025-11-17T15-30-28.jsonl",
    ".gemini/tmp/9f86d081884c7d65/chats/session-2026-01-16T11-01-37b7abef.json":
        "gemini-cli/codemie-session-2026-01-16T11-01-file-ops-37b7abef.json",
    ".gemini/tmp/9f86d081884c7d65/logs.json": "gemini-cli/codemie-logs.json",  # a prompt log: not a session
    f"{CODE_TASKS}/1769053680585/api_conversation_history.json":
        "cline/gmfstu-task1769053680585-api_conversation_history.json",
    f"{CODE_TASKS}/1769053680585/ui_messages.json": "cline/gmfstu-task1769053680585-ui_messages.json",
    f"{CODE_TASKS}/1760000000001/ui_messages.json": "cline/cline-xray-task_sample-ui_messages.json",
    f"{ROO_TASKS}/1760000000002/ui_messages.json": "cline/jeehunter-mcp-vscode-server-ui_messages.json",
    "src/tradepirates/.aider.chat.history.md": "aider/tradepirates.aider.chat.history.md",
}
SESSIONS_PER_AGENT = {"claude-code": 5, "codex": 3, "gemini-cli": 1, "cline": 3, "aider": 1}


def build_home(home: Path, layout: dict[str, str] = LAYOUT) -> Path:
    for where, corpus_file in layout.items():
        target = home / where
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SESSIONS / corpus_file, target)
    (home / "src" / "tradepirates" / ".git").mkdir(parents=True, exist_ok=True)  # aider's project is a repo
    (home / ".claude" / "settings.json").write_text("{}", encoding="utf-8")  # not a log: never read as one
    return home


def plant_secret(home: Path) -> None:
    """The secret in the repeated commit's message: it would be in the loop's `what repeats` cell."""
    path = home / CLAUDE_PROJECT / f"{SPOTTER}.jsonl"
    text = path.read_text(encoding="utf-8")
    assert text.count('git commit -m \\"feat: instrument hook') >= 5
    path.write_text(text.replace('git commit -m \\"feat: instrument hook', f'git commit -m \\"{SECRET} hook'),
                    encoding="utf-8")


def snapshot(home: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(home.rglob("*")) if p.is_file()}


@dataclass
class Scan:
    status: int
    out: str
    err: str
    report: dict[str, Any]
    home: Path
    saved: Path


def _environment(mp: pytest.MonkeyPatch, home: Path) -> None:
    for name in ENV_NAMES:
        mp.delenv(name, raising=False)
    mp.setenv("HOME", str(home))


def run_scan(home: Path, *argv: str, cwd: Path | None = None) -> tuple[int, str, str]:
    with pytest.MonkeyPatch.context() as mp:
        _environment(mp, home)
        mp.chdir(cwd or home / "src" / "tradepirates")
        out, err = io.StringIO(), io.StringIO()
        mp.setattr("sys.stdout", out)
        mp.setattr("sys.stderr", err)
        status = cli.main(["scan", *argv])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def full_scan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scan]:
    """One scan of the whole fake home (the sessions are large): report, saved traces and output, kept."""
    home = build_home(tmp_path_factory.mktemp("home"))
    plant_secret(home)
    before = snapshot(home)
    report = tmp_path_factory.mktemp("report") / "scan.json"
    saved = tmp_path_factory.mktemp("saved")
    status, out, err = run_scan(home, "--report", str(report), "--save", str(saved))
    assert snapshot(home) == before  # the logs: same bytes, same mtimes
    yield Scan(status, out, err, json.loads(report.read_text(encoding="utf-8")), home, saved)


def sessions_of(scan: Scan, agent: str) -> list[dict[str, Any]]:
    return [s for s in scan.report["sessions"] if s["agent"] == agent]


def session(scan: Scan, file_part: str) -> dict[str, Any]:
    (found,) = [s for s in scan.report["sessions"] if file_part in s["file"]]
    return found


# ---- independent readings of the raw logs (as SOURCES.md counted) ------------------------------------------------
def claude_commands(path: Path) -> list[str]:
    """Each distinct tool_use's command, in order (an assistant message repeats over several lines)."""
    seen: set[str] = set()
    commands = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("type") != "assistant":
            continue
        for block in row["message"].get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block["id"] not in seen:
                seen.add(block["id"])
                commands.append(str(block["input"].get("command", "")))
    return commands


def longest_identical_run(calls: list[str]) -> tuple[str, int]:
    best, n, best_n = "", 0, 0
    for i, c in enumerate(calls):
        n = n + 1 if i and calls[i - 1] == c else 1
        if n > best_n:
            best, best_n = c, n
    return best, best_n


def codex_calls(path: Path) -> list[str]:
    calls = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        payload = row.get("payload") or {}
        if row.get("type") == "response_item" and payload.get("type") in ("function_call", "custom_tool_call",
                                                                         "local_shell_call"):
            calls.append(f"{payload.get('name')} {payload.get('arguments', payload.get('input'))}")
    return calls


# ---- the fake home -----------------------------------------------------------------------------------------------
def test_the_scan_finds_every_session_where_its_agent_keeps_it(full_scan: Scan) -> None:
    counts = {agent: len(sessions_of(full_scan, agent)) for agent in SESSIONS_PER_AGENT}
    assert counts == SESSIONS_PER_AGENT
    # the subagent file is read with its session (not a session of its own), the prompt log is not a session
    assert not any("subagents" in s["file"] or "logs.json" in s["file"] for s in full_scan.report["sessions"])
    # paths are shown from the home folder
    assert all(s["file"].startswith("~/") for s in full_scan.report["sessions"])
    assert str(full_scan.home) not in full_scan.out
    assert full_scan.status == 1  # loops found, every log read


def test_the_rejected_commit_repeated_is_one_loop(full_scan: Scan) -> None:
    spotter = session(full_scan, SPOTTER)
    commits = [c for c in claude_commands(SESSIONS / "claude-code" / "spotter-ae4a77f8.jsonl")
               if c.startswith(COMMIT) and "instrument hook controllers" in c]
    (same, n), *_ = Counter(commits).most_common()
    no_verify = [c for c in commits if "--no-verify" in c]
    assert n == 5 and len(no_verify) == 1  # 5 identical, then once with --no-verify (SOURCES.md)
    assert commits.index(same) + 5 == commits.index(no_verify[0])  # in a row (the first attempt said more)
    (loop,) = [lp for lp in spotter["loops"] if COMMIT in lp["what"]]
    assert loop["repeats"] == 6 and loop["failed"] == 6
    assert "(+1 variant)" in loop["what"]  # the --no-verify attempt goes on the same failing command
    assert "failure_tracker.failing_key" in loop["reasons"]
    assert loop["tokens"] > 0 and loop["calls"] >= 2


def test_the_repeated_poll_is_one_loop(full_scan: Scan) -> None:
    tool, n = longest_identical_run(codex_calls(SESSIONS / "codex" / "localpush-rollout-2026-02-23T12-40-23.jsonl"))
    assert tool.startswith("write_stdin") and n == 7
    (loop,) = [lp for lp in session(full_scan, POLLS)["loops"] if lp["what"].startswith("write_stdin")]
    # each poll returns new output: progress (issue 23), warned once by the progress budget at the 6th call,
    # which ends the loop (the 7th is not flagged)
    assert loop["repeats"] == n - 1 and loop["failed"] == 0
    assert loop["reasons"][0] == "loop_guard.poll_budget_warning" and loop["action"] == "warn"
    assert re.fullmatch(r"\+\d+:\d\d:\d\d", loop["time"])  # Codex steps have `t`: the time into the session


def test_the_failed_edit_streaks_are_loops(full_scan: Scan) -> None:
    (aider,) = sessions_of(full_scan, "aider")
    text = (SESSIONS / "aider" / "tradepirates.aider.chat.history.md").read_text(encoding="utf-8")
    assert text.count("Only 3 reflections allowed, stopping.") == 10
    streaks = [lp for lp in aider["loops"] if lp["failed"] >= 3]
    assert len(streaks) >= 5
    assert all(lp["failed"] == lp["repeats"] for lp in streaks)  # every repeat of an edit that failed


def test_nothing_on_a_healthy_session(full_scan: Scan) -> None:
    # claude-reliability (0 errors, no repeats), the Gemini CLI chat (all calls succeed; three reads of three
    # files in a row are not one region), the Cline/Roo tasks, the Codex rollout with no identical repeats
    healthy = ("0b6b4c9e-1111", "0b6b4c9e-2222", "session-2026-01-16T11-01", "1769053680585", "1760000000001",
               "1760000000002", "rollout-2025-11-17T15-30-28")
    for part in healthy:
        assert session(full_scan, part)["loops"] == [], part


def test_the_table_and_the_totals_per_agent(full_scan: Scan) -> None:
    lines = full_scan.out.splitlines()
    assert lines[0].split()[:4] == ["session", "agent", "call", "time"]
    totals = {t["agent"]: t for t in full_scan.report["totals"]}
    assert set(totals) == {*SESSIONS_PER_AGENT, "all"}
    loops = sum(len(s["loops"]) for s in full_scan.report["sessions"])
    assert totals["all"]["loops"] == loops and totals["all"]["sessions"] == sum(SESSIONS_PER_AGENT.values())
    summary = lines[-1]
    assert summary.startswith(f"loopguard scan: {sum(SESSIONS_PER_AGENT.values())} sessions") and f"{loops} loops" \
        in summary
    assert any(line.startswith("claude-code ") for line in lines)  # a totals row


def test_a_secret_in_a_session_is_never_shown_saved_or_reported(full_scan: Scan) -> None:
    assert "<redacted:openai-key:1>" in full_scan.out  # the commit's message was printed, redacted
    assert SECRET not in full_scan.out + full_scan.err
    assert SECRET not in json.dumps(full_scan.report)
    saved = list(full_scan.saved.iterdir())
    assert saved and all(SECRET not in p.read_text(encoding="utf-8") for p in saved)


def test_the_saved_sessions_are_the_ones_with_loops_and_validate(full_scan: Scan,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with_loops = [s for s in full_scan.report["sessions"] if s["loops"]]
    saved = sorted(full_scan.saved.glob("*.yaml"))
    assert len(saved) == len(with_loops)
    assert cli.main(["validate", *map(str, saved)]) == 0
    capsys.readouterr()
    # a saved trace replays to the same loops the scan printed
    spotter = session(full_scan, SPOTTER)
    (trace_file,) = [p for p in saved if p.stem == spotter["session"]]
    assert cli.main(["scan", str(trace_file)]) == 2  # a trace is not an agent's log: named, it is an error
    assert "no importer recognises" in capsys.readouterr().err


# ---- settings, options ---------------------------------------------------------------------------------------------
# sessions with no loop under default
QUIET = {k: v for k, v in LAYOUT.items() if "rust-port" in v or "coverage-test" in v or "acidicsoil" in v}
SMALL = {**QUIET, **{k: v for k, v in LAYOUT.items() if "codemie-session" in v}}


def test_each_agents_own_setting_for_its_place_is_honoured(tmp_path: Path) -> None:
    home = build_home(tmp_path / "home", SMALL)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(home / ".claude", elsewhere / "claude")
    shutil.move(home / ".codex", elsewhere / "codex")
    shutil.move(home / ".gemini", elsewhere / "gem-home" / ".gemini")
    env = {"HOME": str(home)}
    assert discover(env, home) == []
    env |= {"CLAUDE_CONFIG_DIR": str(elsewhere / "claude"), "CODEX_HOME": str(elsewhere / "codex"),
            "GEMINI_CLI_HOME": str(elsewhere / "gem-home")}
    found = discover(env, home)
    assert sorted((log.agent, log.path.parent.name) for log in found) == [
        ("claude-code", "-tmp-rel"), ("claude-code", "-tmp-rel"), ("codex", "17"), ("gemini-cli", "chats")]


def test_vs_code_variants_and_the_cline_cli_are_looked_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    roots = [tmp_path / "xdg" / "Cursor" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks" / "1",
             home / "Library" / "Application Support" / "Code" / "User" / "globalStorage"
             / "rooveterinaryinc.roo-cline" / "tasks" / "2",
             home / ".cline" / "data" / "tasks" / "3",
             tmp_path / "xdg" / "VSCodium" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks" / "4"]
    for task in roots:
        task.mkdir(parents=True)
        (task / "ui_messages.json").write_text("[]", encoding="utf-8")
    (home / ".cline" / "data" / "tasks" / "empty").mkdir()  # no task file: not a task
    found = discover({"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}, home, agents=["cline"])
    assert sorted(log.path.name for log in found) == ["1", "2", "3", "4"]
    assert {log.agent for log in found} == {"cline"}


def test_aider_history_in_the_working_folder_its_git_root_and_its_setting(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    (repo / ".aider.chat.history.md").write_text("# aider chat started at 2026-01-01 10:00:00\n", encoding="utf-8")
    (repo / "sub" / ".aider.chat.history.md").write_text("# aider chat started\n", encoding="utf-8")
    (repo / "named.md").write_text("# aider chat started\n", encoding="utf-8")
    env = {"HOME": str(tmp_path / "home")}
    got = [log.path for log in discover(env, repo / "sub", agents=["aider"])]
    assert got == [repo / "sub" / ".aider.chat.history.md", repo / ".aider.chat.history.md"]
    got = [log.path for log in discover({**env, "AIDER_CHAT_HISTORY_FILE": "../named.md"}, repo / "sub", ["aider"])]
    assert got[0].resolve() == repo / "named.md"


def test_since_keeps_the_logs_changed_in_the_last_days(tmp_path: Path) -> None:
    home = build_home(tmp_path / "home", QUIET)
    old = time.time() - 40 * 86_400
    for path in (home / ".codex").rglob("*.jsonl"):
        os.utime(path, (old, old))
    status, _, _ = run_scan(home, "--since", "30", "--report", str(tmp_path / "r.json"), cwd=home)
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert status == 0
    assert sorted(s["agent"] for s in report["sessions"]) == ["claude-code", "claude-code"]
    run_scan(home, "--since", "50", "--report", str(tmp_path / "r.json"), cwd=home)
    assert "codex" in {s["agent"] for s in json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["sessions"]}
    assert run_scan(home, "--since", "0", cwd=home)[0] == 2  # not a number of days


def test_agent_picks_the_agents(tmp_path: Path) -> None:
    home = build_home(tmp_path / "home", SMALL)
    report = tmp_path / "r.json"
    assert run_scan(home, "--agent", "codex", "--agent", "claude-code", "--report", str(report), cwd=home)[0] == 0
    assert sorted(s["agent"] for s in json.loads(report.read_text(encoding="utf-8"))["sessions"]) == [
        "claude-code", "claude-code", "codex"]
    status, _, err = run_scan(home, "--agent", "cursor", cwd=home)
    assert status == 2 and err.count("\n") == 1 and "unknown agent 'cursor'" in err


def test_no_logs_anywhere_is_no_loop(tmp_path: Path) -> None:
    status, out, err = run_scan(tmp_path, cwd=tmp_path)
    assert status == 0 and err == ""
    assert out.strip() == "loopguard scan: 0 sessions in 0 logs under default: 0 loops in 0 sessions (0 calls, 0 " \
        "tokens inside loops)"


@pytest.mark.parametrize("suffix", [".md", ".html", ".json"])
def test_report_forms(full_scan: Scan, tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"scan{suffix}"
    status, _, _ = run_scan(full_scan.home, "--agent", "codex", "--report", str(target))
    assert status == 1
    text = target.read_text(encoding="utf-8")
    assert "write_stdin" in text and "loop_guard.poll_budget_warning" in text
    if suffix == ".html":
        assert text.startswith("<!DOCTYPE html>") and "<script" not in text
    elif suffix == ".md":
        assert text.startswith("# loopguard scan: 3 sessions") and "| session | agent | call |" in text
    else:
        assert json.loads(text)["loopguard_scan"] == 1


def test_a_report_with_an_unknown_extension_is_one_line(full_scan: Scan, tmp_path: Path) -> None:
    status, _, err = run_scan(full_scan.home, "--agent", "gemini-cli", "--report", str(tmp_path / "scan.txt"))
    assert status == 2 and err.count("\n") == 1 and "unknown extension '.txt'" in err


def test_a_bad_log_is_one_line_and_the_scan_goes_on(tmp_path: Path) -> None:
    home = build_home(tmp_path / "home", SMALL)
    torn = home / ".codex" / "sessions" / "2026" / "01" / "01" / "rollout-2026-01-01T00-00-00-torn.jsonl"
    torn.parent.mkdir(parents=True)
    torn.write_text('{"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "x"}}\n{"ti',
                    encoding="utf-8")
    status, out, err = run_scan(home, cwd=home)
    assert status == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("loopguard: error: ~/.codex/sessions/2026/01/01/rollout-")
    assert "sessions in 5 logs" in out.splitlines()[-1]  # the four readable logs were scanned


def test_paths_given_are_detected_per_file_and_other_files_passed_over(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(SESSIONS / "aider", folder / "aider")
    shutil.copyfile(SESSIONS / "codex" / "acidicsoil-rollout-2025-11-17T15-30-28.jsonl", folder / "r.jsonl")
    (folder / "package.json").write_text('{"name": "x"}', encoding="utf-8")
    (folder / "aider" / "back").symlink_to(folder, target_is_directory=True)  # a link back up: walked once
    report = tmp_path / "r.json"
    status, _, err = run_scan(tmp_path, str(folder), "--report", str(report), cwd=tmp_path)
    agents = sorted(s["importer"] for s in json.loads(report.read_text(encoding="utf-8"))["sessions"])
    assert agents == ["aider", "aider", "aider", "codex"]
    assert "1 files in the folders named are not session logs" in err and status == 1
    assert run_scan(tmp_path, str(folder), "--agent", "codex", "--report", str(report), cwd=tmp_path)[0] == 0
    assert [s["importer"] for s in json.loads(report.read_text(encoding="utf-8"))["sessions"]] == ["codex"]
    status, _, err = run_scan(tmp_path, str(tmp_path / "missing.jsonl"), cwd=tmp_path)
    assert status == 2 and "missing.jsonl: no such file or folder" in err


# ---- loops from verdicts (no importer involved) --------------------------------------------------------------------
def trace(steps: list[dict[str, Any]]) -> Any:
    return trace_from_mapping({"loopguard": 1, "name": "t", "steps": steps})


def bash(command: str, ok: bool = True, tokens: int | None = None) -> list[dict[str, Any]]:
    llm = [{"llm": {"input_tokens": tokens, "output_tokens": 10}}] if tokens else []
    result = {"text": "ok"} if ok else {"error": "boom", "exit_code": 1}
    return [*llm, {"tool": "bash", "args": {"command": command}, "result": result}]


DEFAULT = resolve_policy("default")


def test_a_loop_runs_from_its_first_flag_and_counts_its_repeats_and_tokens() -> None:
    steps = bash("ls") + bash("cat a") + [s for _ in range(6) for s in bash("make test", ok=False, tokens=100)]
    (loop,) = find_loops(trace([*steps, *bash("git status")]), DEFAULT)
    # default warns at the 3rd identical call (call 4) and blocks from the 5th
    assert (loop.call, loop.end_call, loop.repeats, loop.failed, loop.calls) == (4, 7, 6, 6, 4)
    assert loop.what == "bash: make test" and loop.kind == "command" and loop.action == "block"
    assert loop.tokens == 4 * 110  # the four model turns that made the flagged calls
    assert loop.reasons[0] == "loop_guard.consecutive_warning"


def test_a_replay_that_stops_goes_on_with_the_rest_of_the_session() -> None:
    steps = [s for _ in range(10) for s in bash("sleep 1")] + [s for _ in range(4) for s in bash("curl x")]
    first, second = find_loops(trace(steps), DEFAULT)
    assert first.what == "bash: sleep 1" and first.stopped and first.action == "stop"
    assert second.what == "bash: curl x" and second.call == 12 and not second.stopped


def test_a_persons_prompt_ends_a_loop_and_healthy_work_has_none() -> None:
    prompt = [{"message": {"role": "user", "text": "try again"}}]
    steps = [s for _ in range(3) for s in bash("make")] + prompt + [s for _ in range(3) for s in bash("make")]
    assert [(lp.call, lp.repeats) for lp in find_loops(trace(steps), DEFAULT)] == [(2, 3), (5, 3)]
    # a policy whose loop guard keeps counting over the prompt flags the call right after it: a new loop still
    keeps = resolve_policy({"preset": "default", "loop_guard": {"reset_on_user_message": False}})
    steps = [s for _ in range(3) for s in bash("make")] + prompt + [s for _ in range(2) for s in bash("make")]
    assert [(lp.call, lp.repeats, lp.calls) for lp in find_loops(trace(steps), keeps)] == [(2, 3, 1), (3, 2, 2)]
    assert find_loops(trace([s for c in ("ls", "cat a", "make", "git diff") for s in bash(c)]), DEFAULT) == []


def test_the_bar_shows_only_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    logs = [LogFile(Path(f"/l{i}"), "codex", 0.0) for i in range(12)]
    tty, pipe = Terminal(), io.StringIO()
    assert list(_progress(logs, tty)) == logs and list(_progress(logs, pipe)) == logs
    assert "\rscanning 11/12 [" in tty.getvalue() and tty.getvalue().endswith("\r\x1b[K")
    assert pipe.getvalue() == ""
    few = Terminal()
    assert list(_progress(logs[:3], few)) == logs[:3] and few.getvalue() == ""


def test_saving_a_scan_again_replaces_its_traces(tmp_path: Path) -> None:
    # saved traces carry import's identity (digests of the log's path and run), so a second --save into the
    # same folder refreshes them: no NAME-2 copies, and a hand-written trace of the same name is kept
    home = build_home(tmp_path / "home", {**QUIET, **{k: v for k, v in LAYOUT.items() if POLLS in k}})
    saved = tmp_path / "saved"
    assert run_scan(home, "--save", str(saved))[0] == 1
    first = sorted(p.name for p in saved.iterdir())
    assert len(first) == 1
    assert run_scan(home, "--save", str(saved))[0] == 1
    assert sorted(p.name for p in saved.iterdir()) == first
    mine = saved / first[0]
    mine.write_text("loopguard: 1\nname: mine\nsteps: []\n", encoding="utf-8")
    assert run_scan(home, "--save", str(saved))[0] == 1
    assert mine.read_text(encoding="utf-8").startswith("loopguard: 1\nname: mine") and len(list(saved.iterdir())) == 2


class Crashing(Importer):
    """An importer with a bug: it recognises `{"crash": ...}` files and then fails on them."""

    name = "crashing"
    description = "a buggy plugin importer"

    def sniff(self, source: Source) -> bool:
        return isinstance(source.parsed, dict) and "crash" in source.parsed

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        yield from source.parsed["crash"]  # an int here: TypeError


CRASH_LINE = Crashing.convert.__code__.co_firstlineno + 1  # the line of `yield from` that raises


@pytest.mark.parametrize("command", ["scan", "import"])
def test_an_importer_that_crashes_is_exit_3_in_scan_as_in_import(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # a bug (ours or a plugin's) is exit 3 with the same line in both commands, never exit 2 (bad input); the
    # other logs are still read, and a scan's report lists the bug among its errors
    monkeypatch.setattr(scan_cmd, "available", lambda: [*available(), Crashing()])
    monkeypatch.setattr(import_cmd, "available", lambda: [*available(), Crashing()])
    odd = tmp_path / "odd.json"
    odd.write_text('{"crash": 5}', encoding="utf-8")
    good = tmp_path / "good.jsonl"
    shutil.copyfile(SESSIONS / "claude-code" / "claude-reliability-coverage-test-fix.jsonl", good)
    report = tmp_path / "scan.json"
    argv = ["scan", str(odd), str(good), "--report", str(report)] if command == "scan" else [
        "import", str(odd), str(good), "-o", str(tmp_path / "out")]
    assert cli.main(argv) == 3
    out, err = capsys.readouterr()
    bug = (f"internal error (please report it): {odd}: the crashing importer failed: "
           f"TypeError: 'int' object is not iterable at test_scan.py:{CRASH_LINE} in convert")
    assert err == f"loopguard: {bug}\n"
    if command == "scan":
        assert "1 sessions in 2 logs" in out
        assert json.loads(report.read_text(encoding="utf-8"))["errors"] == [bug]
    else:
        assert [p.name for p in (tmp_path / "out").iterdir()] == ["good.yaml"]
