"""No planted secret survives `loopguard scan`: every built-in kind as a value, a mapping key, a URL password,
inside a run id, a tool name, a folder and a file name, through what scan prints (tables, totals, error
lines), each `--report` form and `--save DIR` (the saved traces' names and contents), for logs named as
paths and for sessions found in an agent's own place under the home folder."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from planted_secrets import (
    PLANTED,
    USER_RULE,
    USER_SECRET,
    all_secrets,
    assert_no_planted_secret,
    hostile_positions,
    recognisable,
    url_with_password,
)

from pytest_loopguard import cli

SESSIONS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "sessions"
REPORTS = ("scan.json", "scan.md", "scan.html")
PLACE_SETTINGS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_CONFIG_HOME", "APPDATA",
                  "AIDER_CHAT_HISTORY_FILE", "USERPROFILE")


def looping_chat_log(run_id: str, args: dict[str, object], repeats: int = 8) -> dict[str, object]:
    """An OpenAI chat-completions run that calls one tool with `args` `repeats` times, failing each time:
    a loop, so the call's arguments reach the loops table, the report and the saved trace."""
    messages: list[dict[str, object]] = [{"role": "user", "content": f"deploy with {args.get('note', '')}"}]
    for i in range(repeats):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": f"http_{run_id}", "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"error: failed {json.dumps(args)}"})
    messages.append({"role": "assistant", "content": "done"})
    return {"id": run_id, "model": f"gpt-{run_id}", "messages": messages, "x_extra": args}


def scan(*argv: str, home: Path | None = None) -> tuple[int, str, str]:
    with pytest.MonkeyPatch.context() as mp:
        if home is not None:
            for name in PLACE_SETTINGS:
                mp.delenv(name, raising=False)
            mp.setenv("HOME", str(home))
            mp.chdir(home)
        out, err = io.StringIO(), io.StringIO()
        mp.setattr("sys.stdout", out)
        mp.setattr("sys.stderr", err)
        status = cli.main(["scan", *argv, "--redact", USER_RULE])
    return status, out.getvalue(), err.getvalue()


def everything_left(*texts: str, folders: tuple[Path, ...] = (), files: tuple[Path, ...] = ()) -> str:
    """What scan printed, plus the names and contents of every file it wrote."""
    written = [p for folder in folders if folder.is_dir() for p in folder.rglob("*")]
    names = [str(p) for p in written]
    contents = [p.read_text(encoding="utf-8") for p in [*written, *files] if p.is_file()]
    return "\n".join([*texts, *names, *contents])


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_no_planted_secret_survives_a_scan_of_logs_named_as_paths(kind: str, tmp_path: Path) -> None:
    secret = recognisable(kind)
    logs = tmp_path / f"logs-{secret}"  # in a folder name and a file name too
    logs.mkdir()
    # a bearer token may hold `/`: in the folder's name it runs on into the file's (see test_hostile_logs)
    log = logs / ("run.json" if kind == "bearer-token" else f"run_{secret}.json")
    log.write_text(json.dumps(looping_chat_log(f"run_{secret}", hostile_positions())), encoding="utf-8")
    # a log that cannot be read: its error line names it
    (logs / ("bad.json" if kind == "bearer-token" else f"bad_{secret}.json")).write_text("{", encoding="utf-8")
    for report in REPORTS:
        saved = tmp_path / f"saved-{report}"
        status, out, err = scan(str(logs), "--report", str(tmp_path / report), "--save", str(saved))
        assert status == 2 and "1 loops in 1 sessions" in out and "loopguard: error: " in err, (out, err)
        assert len(list(saved.iterdir())) == 1  # the session with the loop, saved
        assert_no_planted_secret(everything_left(out, err, folders=(saved,), files=(tmp_path / report,)))
        assert "redacted:" in (tmp_path / report).read_text(encoding="utf-8")  # (HTML escapes the `<`)


def claude_session_with_secrets(text: str) -> str:
    """A Claude Code session whose repeated command carries every planted kind (as a value and as a URL
    password) and whose tool inputs carry each as a mapping key too."""
    values = " ".join(recognisable(kind).replace("\n", " ") for kind in PLANTED if kind != "private-key-body")
    urls = " ".join(url_with_password(kind) for kind in PLANTED)
    out = []
    for line in text.splitlines():
        entry = json.loads(line)
        content = entry.get("message", {}).get("content") if isinstance(entry.get("message"), dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                tool_input = block["input"]
                if isinstance(tool_input.get("command"), str):
                    tool_input["command"] = tool_input["command"].replace(
                        "git commit", f"git commit --author {USER_SECRET} -m '{values} {urls}'")
                tool_input.update(hostile_positions()["keys"])
                tool_input[USER_SECRET] = "user rule"
        out.append(json.dumps(entry))
    return "\n".join(out) + "\n"


def test_no_planted_secret_survives_a_scan_of_an_agents_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines = (SESSIONS / "claude-code" / "spotter-ae4a77f8.jsonl").read_text(encoding="utf-8").splitlines(True)
    corpus = "".join(lines[1320:1490])  # the stretch with the repeated commit: a loop, in a tenth of the file
    session = claude_session_with_secrets(corpus)
    assert all(s in session for s in (PLANTED["openai-key"], PLANTED["slack-token"], USER_SECRET))
    kinds = sorted(PLANTED)
    groups = [kinds[i::3] for i in range(3)]  # three kinds a project: a name holds at most 255 bytes
    for n, group in enumerate(groups):
        # the project folder and the session file are named with the secrets, as a user's own could be
        name = "-".join(recognisable(kind).replace("/", "_") for kind in group)
        project = home / ".claude" / "projects" / f"-home-u-{name}"
        project.mkdir(parents=True)
        (project / f"{n:08d}-{name}.jsonl").write_text(session, encoding="utf-8")
    for report in REPORTS:
        saved = tmp_path / f"saved-{report}"
        status, out, err = scan("--report", str(tmp_path / report), "--save", str(saved), home=home)
        assert status == 1 and f"{len(groups)} sessions" in out and err == "", (out, err)
        assert len(list(saved.iterdir())) == len(groups)
        assert_no_planted_secret(everything_left(out, err, folders=(saved,), files=(tmp_path / report,)))
    shutil.rmtree(home)


def test_the_check_finds_a_planted_secret() -> None:
    # the check itself: a secret left whole, or its last twenty characters, fails it
    for secret in all_secrets():
        for text in (f"x {secret} y", secret[-20:]):
            with pytest.raises(AssertionError):
                assert_no_planted_secret(text)


def test_a_bearer_token_named_twice_in_one_path_is_redacted_twice() -> None:
    # the first token's body may run on through `/` and `-` (base64 holds them); it stops before the next
    # "Bearer " word, so the second copy is still recognised
    from pytest_loopguard.live._redact import Redactor

    token = PLANTED["bearer-token"]
    shown = Redactor.configured().text(f"~/projects/-home-Bearer {token}/0001-Bearer {token}.jsonl")
    assert token not in shown and shown.count("<redacted:bearer-token:") == 2, shown
