"""aider chat histories: every corpus file's sessions, turns, edits, failures and commands match an independent
count made here with regexes over the raw lines (and SOURCES.md's numbers); the markers and their near misses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from files import write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import Source, available, detect, import_runs, to_trace
from pytest_loopguard.importers.aider import FAILED_EDIT_MARKERS
from pytest_loopguard.io._runner import execute

AIDER = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "sessions" / "aider"

# SOURCES.md §5 per file: sessions, user turns, applied edits, failed edits, reflection stops, shell commands,
# denied edits. Two user-turn counts differ from SOURCES.md's, whose count took every `#### ` block: afi-core's
# 49 include 9 answers aider logged itself as `#### ` lines ("Add file to the chat? ... [Yes]: all", a
# confirmation group's answer), simple-calculator's 37 two Markdown headings of a model reply (`#### If you're
# using **npm**:`, lines 1612 and 1617: no trailing two spaces, which every line aider writes for a person has).
EXPECTED = {
    "tradepirates": (72, 137, 61, 55, 10, 0, 0),
    "afi-core": (9, 49 - 9, 17, 1, 0, 10, 0),
    "simple-calculator": (1, 37 - 2, 18, 1, 0, 0, 1),
}


def _lines(name: str) -> list[str]:
    # numbered as `grep -n` numbers them (lines end at "\n"; a Windows "\r" before it is dropped)
    data = (AIDER / f"{name}.aider.chat.history.md").read_bytes().decode("utf-8")
    return [line.removesuffix("\r") for line in data.split("\n")]


def _at(lines: list[str], pattern: str) -> list[int]:
    rx = re.compile(pattern)
    return [n for n, line in enumerate(lines, 1) if rx.search(line)]


def _raw(name: str) -> dict[str, Any]:
    """What the file holds, read with regexes that know nothing of the importer."""
    lines = _lines(name)
    turns, previous = [], False
    for n, line in enumerate(lines, 1):
        typed = re.fullmatch(r"####( .*)?  ", line) is not None and "(Y)es/(N)o" not in line
        if typed and not previous:
            turns.append(n)
        previous = typed
    failed = _at(lines, r"^> The LLM did not conform to the edit format\.  $")
    lint = _at(lines, r"^> Attempt to fix lint errors\? .*: y  $")
    # a failure is sent back when the next model request (a usage line or an API error) comes before the
    # next person's turn, session or give-up
    nxt = re.compile(r"^(> Tokens: |> litellm\.|####|# aider chat started at |> Only \d+ reflections)")
    reflected = 0
    for n in failed + lint:
        following = next((line for line in lines[n:] if nxt.match(line)), "")
        reflected += following.startswith(("> Tokens: ", "> litellm."))
    return {
        "sessions": _at(lines, r"^# aider chat started at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$"),
        "turns": turns,
        "applied": _at(lines, r"^> Applied edit to \S.*  $"),
        "failed": failed,
        "stops": _at(lines, r"^> Only 3 reflections allowed, stopping\.  $"),
        "commands": _at(lines, r"^> Running \S.*  $"),
        "denied": _at(lines, r"^> Skipping edits to .*  $"),
        "reflected": reflected,
        "usage": _at(lines, r"^> Tokens: [\d.]+k? sent, "),
        "commits": _at(lines, r"^> Commit [0-9a-f]{7} "),
    }


def _import(name: str) -> Any:
    (run,) = import_runs(AIDER / f"{name}.aider.chat.history.md")
    return run


def _indices(run: Any, keep: Any) -> list[int]:
    return [s["source"]["index"] for s in run.trace["steps"] if keep(s)]


def _edit(s: dict[str, Any]) -> bool:
    return s.get("tool") == "edit"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_fact_of_the_history_is_where_the_raw_lines_put_it(name: str) -> None:
    raw, run = _raw(name), _import(name)
    steps = run.trace["steps"]
    sessions, turns, applied, failed, _stops, commands, denied = EXPECTED[name]
    assert (len(raw["sessions"]), len(raw["turns"]), len(raw["applied"]), len(raw["failed"]), len(raw["stops"]),
            len(raw["commands"]), len(raw["denied"])) == EXPECTED[name]

    def message(s: dict[str, Any], origin: str) -> bool:
        return "message" in s and s["message"].get("origin") == origin

    assert _indices(run, lambda s: message(s, "user") and "x-session" in s) == raw["sessions"]
    assert _indices(run, lambda s: message(s, "user") and "x-session" not in s) == raw["turns"]
    assert _indices(run, lambda s: _edit(s) and "error" not in s.get("result", {}) and "denied" not in s) \
        == raw["applied"]
    assert _indices(run, lambda s: _edit(s) and "error" in s.get("result", {})) == raw["failed"]
    assert _indices(run, lambda s: _edit(s) and "denied" in s) == raw["denied"]
    assert _indices(run, lambda s: s.get("tool") == "bash") == raw["commands"]
    assert _indices(run, lambda s: "x-reflections-stopped" in s) == raw["stops"]
    assert len(_indices(run, lambda s: "x-reflection" in s)) == raw["reflected"]
    assert _indices(run, lambda s: "llm" in s and "error" not in s["llm"]) == raw["usage"]
    assert [c["line"] for c in run.trace.get("x-commits", [])] == raw["commits"]
    assert run.counts["calls"] == applied + failed + commands + denied
    assert run.counts["failed"] == failed and run.counts["denied"] == denied
    assert run.counts["messages.user"] == sessions + turns
    assert {s["tool"] for s in steps if "tool" in s} <= {"edit", "bash"}
    for s in steps:
        assert s["source"]["file"] == str(AIDER / f"{name}.aider.chat.history.md")
        assert s["source"]["row"] is None and isinstance(s["source"]["index"], int)


def test_the_versions_and_models_the_files_were_written_with() -> None:
    seen = {name: (_import(name).trace["x-aider-versions"], _import(name).trace["source"]["model"])
            for name in EXPECTED}
    assert seen == {"tradepirates": (["0.86.2"], "deepseek/deepseek-chat"),
                    "afi-core": (["0.85.1", "0.85.2"], "gpt-4o"),
                    "simple-calculator": (["0.82.2"], "gemini/gemini-2.5-pro-exp-03-25")}


def test_failed_edits_name_the_file_the_error_names_and_carry_the_error() -> None:
    run = _import("tradepirates")
    failed = [s for s in run.trace["steps"] if _edit(s) and "error" in s["result"]]
    first = failed[0]
    assert first["source"]["index"] == 909 and first["args"] == {"path": "TODO.md"}
    assert first["result"]["error"].startswith("The LLM did not conform to the edit format.\n# 1 SEARCH/REPLACE")
    assert first["x-blocks-failed"] == 1 and first["x-blocks-applied"] == 1
    two = [s for s in failed if s.get("x-blocks-failed") == 2]
    assert len(two) == 10  # "# 2 SEARCH/REPLACE blocks failed to match!" 10 times (grep)


def test_a_session_that_gives_up_ends_with_the_stop_after_its_third_failed_edit() -> None:
    steps = _import("tradepirates").trace["steps"]
    stop = next(i for i, s in enumerate(steps) if "x-reflections-stopped" in s)
    assert steps[stop]["x-reflections-stopped"] == 3
    edits = [s for s in steps[:stop] if "tool" in s][-4:]
    assert [("error" in s["result"]) for s in edits][-3:] == [True, True, True]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_detected_by_its_name_and_validates_and_replays(name: str) -> None:
    path = AIDER / f"{name}.aider.chat.history.md"
    assert detect(Source.from_path(path), available()).name == "aider"
    run = _import(name)
    trace = to_trace(run)
    result = execute(trace)
    assert len(result.steps) == len(trace.steps)
    assert not run.warnings


def test_import_is_byte_identical_across_runs(tmp_path: Path) -> None:
    first = json.dumps(_import("tradepirates").trace, sort_keys=False)
    assert json.dumps(_import("tradepirates").trace, sort_keys=False) == first
    outs = []
    for n in (1, 2):
        out = tmp_path / f"out{n}"
        assert cli.main(["import", str(AIDER / "afi-core.aider.chat.history.md"), "-o", str(out)]) == 0
        outs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert outs[0] == outs[1] and list(outs[0]) == ["aider-afi-core.yaml"]


# ---- markers and near misses ---------------------------------------------------------------------------
HEADER = "\n# aider chat started at 2025-01-02 03:04:05\n\n> Aider v0.86.2  \n\n#### fix the bug  \n\n"


def _history(tmp_path: Path, body: str, name: str = ".aider.chat.history.md") -> Any:
    (run,) = import_runs(write(tmp_path, name, HEADER + body))
    return run


def _calls(run: Any) -> list[dict[str, Any]]:
    return [s for s in run.trace["steps"] if "tool" in s]


@pytest.mark.parametrize("marker", FAILED_EDIT_MARKERS)
def test_each_failed_edit_marker_is_a_failed_edit(tmp_path: Path, marker: str) -> None:
    line = marker + ("src/app.py" if marker.endswith(" to ") else "")
    run = _history(tmp_path, f"Here is the edit.\n\n> Tokens: 1k sent, 20 received.  \n> {line}  \n")
    (call,) = _calls(run)
    assert call["tool"] == "edit" and call["result"]["error"].startswith(marker) and run.counts["failed"] == 1
    assert call["args"] == ({"path": "src/app.py"} if marker.endswith(" to ") else {})


def test_search_replace_failure_detail_names_the_files(tmp_path: Path) -> None:
    body = ("reply\n\n> Tokens: 1k sent, 20 received.  \n> The LLM did not conform to the edit format.  \n"
            "> https://aider.chat/docs/troubleshooting/edit-errors.html  \n"
            "> # 2 SEARCH/REPLACE blocks failed to match!\n\n"
            "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in a.py\nx\n"
            "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in b.py\ny\n"
            "Just reply with fixed versions of the blocks above that failed to match.  \n\n"
            "fixed reply\n\n> Tokens: 2k sent, 30 received.  \n> Applied edit to a.py  \n")
    run = _history(tmp_path, body)
    failed, applied = _calls(run)
    assert failed["args"] == {"paths": ["a.py", "b.py"]} and failed["x-blocks-failed"] == 2
    assert applied["args"] == {"path": "a.py"} and "error" not in applied["result"]
    (reflection,) = [s for s in run.trace["steps"] if "x-reflection" in s]
    assert reflection["message"]["origin"] == "harness" and "failed to exactly match" in reflection["message"]["text"]


@pytest.mark.parametrize("text", [
    "#### the build error is in app.py, it did not conform to the edit format  \n",  # a person's words
    "The LLM did not conform to the edit format. I will retry.\n",  # the model's reply, unquoted
    "> Error: Read-only file C:\\x does not exist. Skipping.  \n",  # an aider notice with "error"
    "> Running tests is up to you  \n",  # "Running" with no shell command allowed before it
    "```\n> The LLM did not conform to the edit format\n```\n",  # quoted without the final period
])
def test_near_misses_are_no_failed_call(tmp_path: Path, text: str) -> None:
    run = _history(tmp_path, text)
    assert _calls(run) == [] and run.counts["failed"] == 0


def test_shell_commands_run_after_a_yes_and_denied_after_a_no(tmp_path: Path) -> None:
    body = ("```bash\nmake test\n```\n\n> Tokens: 1k sent, 9 received.  \n> make test  \n"
            "> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y  \n> Running make test  \n"
            "> Add command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: n  \n\n#### again  \n\n"
            "```bash\nrm -rf build\nmake\n```\n\n> Tokens: 1k sent, 9 received.  \n> rm -rf build\nmake  \n"
            "> Run shell commands? (Y)es/(N)o/(D)on't ask again [Yes]: n  \n")
    run = _history(tmp_path, body)
    calls = _calls(run)
    assert [(c["tool"], c["args"]["command"], "denied" in c) for c in calls] == [
        ("bash", "make test", False), ("bash", "rm -rf build", True), ("bash", "make", True)]
    assert calls[1]["denied"]["by"] == "user" and run.counts["denied"] == 2


def test_slash_commands_and_bang_commands_are_the_persons_messages(tmp_path: Path) -> None:
    run = _history(tmp_path, "#### /model gpt-4o  \n\n#### !ls -la  \n\n#### /code add a test  \n")
    users = [s for s in run.trace["steps"] if "message" in s and "x-session" not in s]
    assert [s.get("x-command") for s in users] == [None, "/model", "!", "/code"]
    assert _calls(run) == []
    assert run.run_id == f"aider-{tmp_path.name}"  # `<repo>/.aider.chat.history.md`: named after the repository


def test_a_multi_line_input_is_one_turn_and_blank_is_empty(tmp_path: Path) -> None:
    run = _history(tmp_path, "#### first line  \n####   \n#### third line  \n\n#### <blank>  \n")
    texts = [s["message"]["text"] for s in run.trace["steps"] if "message" in s and "x-session" not in s]
    assert texts == ["fix the bug", "first line\n\nthird line", ""]


def test_usage_lines_are_model_turns_with_the_reply_as_text(tmp_path: Path) -> None:
    run = _history(tmp_path, "I will edit app.py.\n\n> Tokens: 2.9k sent, 1.8k cache hit, 1.3k received. "
                             "Cost: $0.01 message, $0.02 session.  \n> Applied edit to app.py  \n")
    llm = next(s["llm"] for s in run.trace["steps"] if "llm" in s)
    assert llm == {"input_tokens": 2900, "output_tokens": 1300, "text": "I will edit app.py."}


def test_a_failed_model_request_is_unmapped_and_the_run_goes_on(tmp_path: Path) -> None:
    run = _history(tmp_path, "> litellm.RateLimitError: litellm.RateLimitError: quota  \n"
                             "> Retrying in 0.2 seconds...  \nreply\n\n> Tokens: 1k sent, 9 received.  \n"
                             "> Applied edit to a.py  \n")
    assert [s["llm"].get("error") for s in run.trace["steps"] if "llm" in s] == [None]
    assert "line 8: failed model request" in run.unmapped
    assert execute(to_trace(run)).outcome != "failed"


def test_detected_by_first_line_under_any_name(tmp_path: Path) -> None:
    path = write(tmp_path, "history.md", HEADER)
    assert detect(Source.from_path(path), available()).name == "aider"


# ---- bad input -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("data", "problem"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00binary", "not UTF-8 text"),
    (HEADER.encode() + b"#### caf\xe9  \n", "not UTF-8 text"),
    (HEADER.encode() + "#### Phase 1 — Foundation".encode()[:-12], "not UTF-8 text"),  # cut inside the dash
    (b"", "the file is empty"),
    (b"just some notes\n#### not a history\n", "no '# aider chat started at' line"),
])
def test_malformed_history_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              data: bytes, problem: str) -> None:
    path = write(tmp_path, ".aider.chat.history.md", data)
    assert cli.main(["import", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("loopguard: ") and problem in err[0], err


AFI = (AIDER / "afi-core.aider.chat.history.md").read_bytes()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(AFI)), noise=st.binary(max_size=64))
def test_any_truncated_or_garbled_history_imports_or_is_one_trace_error(tmp_path: Path, cut: int,
                                                                        noise: bytes) -> None:
    path = write(tmp_path, ".aider.chat.history.md", AFI[:cut] + noise)
    try:
        runs = import_runs(path)
    except TraceError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return
    for run in runs:
        execute(to_trace(run))
