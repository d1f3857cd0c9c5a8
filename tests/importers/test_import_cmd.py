"""`loopguard import`: traces written per run, the table, redaction, and bad input (one line, exit 2, others
still imported)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planted_secrets import USER_RULE, assert_no_planted_secret, planted_payload

from pytest_loopguard import cli
from pytest_loopguard.traceio import load

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
REAL = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "real"


def mini_log(instance: str, command: str = "ls", output: str = "a.py") -> dict[str, object]:
    return {
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": instance,
        "info": {"exit_status": "Submitted", "mini_version": "1.15.0"},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "<pr_description>fix it</pr_description>"},
            {"role": "assistant", "content": f"THOUGHT: look\n\n```bash\n{command}\n```"},
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{output}\n</output>"},
            {"role": "assistant", "content": f"THOUGHT: done\n\n```bash\necho {SUBMIT}\n```"},
            {"role": "user", "content": "diff --git a/a.py b/a.py"},
        ],
    }


def test_imports_real_files_one_trace_per_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    status = cli.main(["import", str(REAL / "openhands" / "multi_swe_bench_examples" / "output.jsonl"),
                       str(REAL / "swe-agent" / "pydicom__pydicom-1458.traj"), "-o", str(out)])
    assert status == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["ponylang__ponyc-4588.yaml", "ponylang__ponyc-4593.yaml", "ponylang__ponyc-4595.yaml",
                     "pydicom__pydicom-1458.yaml"]
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("pydicom__pydicom-1458"))
    assert row.split()[1:5] == ["swe-agent", "11", "3", "0"]  # 11 calls, 3 syntax-error edits, no rejections
    assert "4 traces written" in text
    trace = load(out / "ponylang__ponyc-4593.yaml")
    assert trace.source["kind"] == "imported"
    assert sum(1 for s in trace.steps if s.kind == "tool") == 32


def test_jsonl_output_loads(tmp_path: Path) -> None:
    src = tmp_path / "run.traj.json"
    src.write_text(json.dumps(mini_log("pkg__pkg-1")), encoding="utf-8")
    assert cli.main(["import", str(src), "-o", str(tmp_path / "out"), "--format", "jsonl"]) == 0
    trace = load(tmp_path / "out" / "pkg__pkg-1.jsonl")
    assert [s.kind for s in trace.steps] == ["message", "message", "llm", "tool", "llm", "done"]


def test_bad_sources_get_one_line_each_and_the_good_one_is_still_imported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(mini_log("good-run")), encoding="utf-8")
    truncated = tmp_path / "truncated.json"
    truncated.write_text(json.dumps(mini_log("cut"))[:200], encoding="utf-8")
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"hello": "world"}', encoding="utf-8")
    out = tmp_path / "out"
    status = cli.main(["import", str(truncated), str(good), str(unknown), "-o", str(out)])
    assert status == 2
    assert [p.name for p in out.iterdir()] == ["good-run.yaml"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2
    assert err[0].startswith(f"loopguard: error: {truncated}:1: invalid JSON")
    assert "expected a complete JSON document" in err[0]
    assert err[1].startswith(f"loopguard: error: {unknown}: no importer recognises this file")
    assert "Traceback" not in "".join(err)


def test_unknown_from_is_one_line_and_nothing_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "run.json"
    src.write_text(json.dumps(mini_log("r")), encoding="utf-8")
    assert cli.main(["import", "--from", "nope", str(src), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown format 'nope'" in err[0] and "mini-swe-agent-1" in err[0]
    assert not (tmp_path / "out").exists()


def test_from_names_the_format_of_a_file_detection_would_miss(tmp_path: Path) -> None:
    log = mini_log("undeclared")
    del log["trajectory_format"], log["info"]  # nothing left to detect it by
    src = tmp_path / "run.json"
    src.write_text(json.dumps(log), encoding="utf-8")
    assert cli.main(["import", str(src), "-o", str(tmp_path / "a")]) == 2
    assert cli.main(["import", "--from", "mini-swe-agent-1", str(src), "-o", str(tmp_path / "b")]) == 0
    assert load(tmp_path / "b" / "undeclared.yaml").source["kind"] == "imported"


def test_no_planted_secret_survives_import(tmp_path: Path) -> None:
    payload = json.dumps(planted_payload())
    src = tmp_path / "secret.json"
    src.write_text(json.dumps(mini_log("secret", command=f"echo '{payload}'", output=payload)), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(src), "-o", str(out), "--redact", USER_RULE]) == 0
    written = (out / "secret.yaml").read_text(encoding="utf-8")
    assert_no_planted_secret(written)
    assert "<redacted:openai-key:1>" in written
    # the same secret in the command and in the output gets the same placeholder
    trace = load(out / "secret.yaml")
    call = next(s for s in trace.steps if s.kind == "tool")
    assert call.result is not None and call.result.text is not None
    assert "<redacted:custom:1>" in call.call.args["command"] and "<redacted:custom:1>" in call.result.text


def test_no_redact_keeps_the_text(tmp_path: Path) -> None:
    secret = planted_payload()["env"]["OPENAI_API_KEY"]  # type: ignore[index]
    src = tmp_path / "s.json"
    src.write_text(json.dumps(mini_log("s", command=f"echo {secret}")), encoding="utf-8")
    assert cli.main(["import", str(src), "-o", str(tmp_path / "out"), "--no-redact"]) == 0
    assert secret in (tmp_path / "out" / "s.yaml").read_text(encoding="utf-8")


def test_bench_import_counts_runs_and_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    for n in range(3):
        (folder / f"r{n}.json").write_text(json.dumps(mini_log(f"r{n}")), encoding="utf-8")
    assert cli.main(["bench", "--import", str(folder)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(str(folder)))
    assert row.split()[1:4] == ["3", "3", "18"]  # files, runs, steps (6 steps per fixture run)


def test_a_folder_of_logs_with_an_event_folder_inside(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    conversation = logs / "nested" / "conv-9"
    conversation.mkdir(parents=True)
    events = [
        {"kind": "MessageEvent", "id": "m", "source": "user", "llm_message": {"content": [{"text": "hi"}]}},
        {"kind": "ActionEvent", "id": "a", "tool_name": "terminal", "tool_call_id": "c",
         "action": {"kind": "ExecuteBashAction", "command": "ls"}},
        {"kind": "ObservationEvent", "id": "o", "tool_call_id": "c", "action_id": "a",
         "observation": {"content": [{"type": "text", "text": "x"}], "exit_code": 0}},
    ]
    for n, event in enumerate(events):
        (conversation / f"event-{n:05d}-{event['id']}.json").write_text(json.dumps(event), encoding="utf-8")
    (logs / "a.traj.json").write_text(json.dumps(mini_log("a")), encoding="utf-8")
    (logs / "notes.txt").write_text("not a log", encoding="utf-8")
    assert cli.main(["import", str(logs), "-o", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.yaml", "conv-9.yaml"]
    assert "openhands-v1" in capsys.readouterr().out


def test_an_empty_folder_and_a_missing_path_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert cli.main(["import", str(tmp_path / "empty"), str(tmp_path / "missing.json"), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"loopguard: error: {tmp_path / 'empty'}: no .json, .jsonl or .traj files in this folder",
                   f"loopguard: error: {tmp_path / 'missing.json'}: no such file or folder; expected an agent log, "
                   "an event folder or a folder of logs"]
