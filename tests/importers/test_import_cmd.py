"""`loopguard import`: traces written per run, the table, redaction, and bad input (one line, exit 2, others
still imported)."""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from planted_secrets import PLANTED, USER_RULE, assert_no_planted_secret, planted_payload

from pytest_loopguard.cli import _import_logs as import_cmd
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core._limits import MAX_FILE_BYTES, MAX_STRING
from pytest_loopguard.importers import ImportedRun, Importer, Source, available
from pytest_loopguard.io._format import load

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
    assert err == [f"loopguard: error: {tmp_path / 'empty'}: no .json, .jsonl, .traj or .aider.chat.history.md "
                   "files in this folder",
                   f"loopguard: error: {tmp_path / 'missing.json'}: no such file or folder; expected an agent log, "
                   "an event folder or a folder of logs"]


def test_run_ids_in_any_script_keep_their_letters(tmp_path: Path) -> None:
    for n, instance in enumerate(["日本語-タスク", "中文 任务", "ünïcode/1"]):
        (tmp_path / f"{n}.json").write_text(json.dumps(mini_log(instance)), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(tmp_path / "0.json"), str(tmp_path / "1.json"), str(tmp_path / "2.json"),
                     "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["ünïcode-1.yaml", "中文-任务.yaml", "日本語-タスク.yaml"]
    assert load(out / "中文-任务.yaml").name == "中文-任务"


def test_a_run_id_too_long_for_a_file_name_is_cut_and_the_other_sources_still_import(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long_a, long_b = "x" * 300, "x" * 300 + "b"
    for name, instance in [("a.json", long_a), ("b.json", long_b), ("good.json", "good")]:
        (tmp_path / name).write_text(json.dumps(mini_log(instance)), encoding="utf-8")
    out = tmp_path / "out"
    args = [str(tmp_path / n) for n in ("a.json", "b.json", "good.json")]
    assert cli.main(["import", *args, "-o", str(out)]) == 0, capsys.readouterr().err
    names = sorted(p.stem for p in out.iterdir())
    assert len(names) == 3 and "good" in names
    cut = [n for n in names if n != "good"]
    assert cut[0] != cut[1] and all(n.startswith("x" * 100) and len(n.encode()) <= 120 for n in cut)


def test_re_running_an_import_replaces_its_traces_even_in_another_format(tmp_path: Path) -> None:
    src = tmp_path / "run.json"
    src.write_text(json.dumps(mini_log("pkg__pkg-1")), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(src), "-o", str(out)]) == 0
    assert cli.main(["import", str(src), "-o", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["pkg__pkg-1.yaml"]
    # the same file named another way is the same source
    assert cli.main(["import", str(Path(os.path.relpath(src))), "-o", str(out), "--format", "jsonl"]) == 0
    assert [p.name for p in out.iterdir()] == ["pkg__pkg-1.jsonl"]  # one file per trace: the folder validates
    assert cli.main(["validate", str(out)]) == 0


def test_a_trace_from_another_source_is_never_overwritten(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    hand = out / "mine.yaml"
    hand.write_text("loopguard: 1\nname: mine\nsteps:\n  - tool: ls\n", encoding="utf-8")
    first, second, third = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    first.write_text(json.dumps(mini_log("same-id", output="from a")), encoding="utf-8")
    second.write_text(json.dumps(mini_log("same-id", output="from b")), encoding="utf-8")
    third.write_text(json.dumps(mini_log("mine")), encoding="utf-8")
    assert cli.main(["import", str(first), "-o", str(out)]) == 0
    capsys.readouterr()
    assert cli.main(["import", str(second), str(third), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["mine-2.yaml", "mine.yaml", "same-id-2.yaml", "same-id.yaml"]
    assert hand.read_text(encoding="utf-8").endswith("- tool: ls\n")
    # each keeps its own log's name (outside the working folder: the file name, never the machine's path)
    assert load(out / "same-id.yaml").source["origin"] == first.name
    assert load(out / "same-id-2.yaml").source["origin"] == second.name
    text = capsys.readouterr().out
    assert f"same-id-2: note: the name same-id is another run's (in this import or in {out})" in text
    assert cli.main(["validate", str(out)]) == 0


def test_an_output_folder_inside_the_logs_folder_is_not_read_as_logs(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.json").write_text(json.dumps(mini_log("a")), encoding="utf-8")
    out = logs / "traces"
    for _ in range(2):
        assert cli.main(["import", str(logs), "-o", str(out), "--format", "jsonl"]) == 0
    assert [p.name for p in out.iterdir()] == ["a.jsonl"]


def test_a_run_that_cannot_be_written_fails_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    (out / "blocked.yaml").mkdir(parents=True)  # a folder where the trace file would go
    for name in ("blocked", "fine"):
        (tmp_path / f"{name}.json").write_text(json.dumps(mini_log(name)), encoding="utf-8")
    assert cli.main(["import", str(tmp_path / "blocked.json"), str(tmp_path / "fine.json"), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"loopguard: error: {out / 'blocked.yaml'}: ")
    assert (out / "fine.yaml").is_file()


def test_a_tarball_of_logs_is_read_in_memory_like_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packed = tmp_path / "runs.tar.gz"
    with tarfile.open(packed, "w:gz") as tar:
        for name, data in [("trajs/a.traj.json", json.dumps(mini_log("a"))), ("trajs/b.traj.json",
                           json.dumps(mini_log("b"))), ("README.txt", "not a log")]:
            info = tarfile.TarInfo(name)
            info.size = len(data.encode())
            tar.addfile(info, io.BytesIO(data.encode()))
    out = tmp_path / "out"
    assert cli.main(["import", str(packed), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.yaml", "b.yaml"]
    assert load(out / "a.yaml").source["origin"] == f"{packed.name}:trajs/a.traj.json"
    assert cli.main(["import", str(packed), "-o", str(out), "--format", "jsonl"]) == 0  # re-run: replaced
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl", "b.jsonl"]
    broken = tmp_path / "broken.tgz"
    broken.write_bytes(packed.read_bytes()[:40])
    capsys.readouterr()
    assert cli.main(["import", str(broken), str(tmp_path / "a.traj"), "-o", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"loopguard: error: {broken}: unreadable archive (")
    assert err[0].endswith("expected a tar archive of agent logs")


def test_an_output_path_that_is_a_file_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "run.json"
    src.write_text(json.dumps(mini_log("r")), encoding="utf-8")
    taken = tmp_path / "taken"
    taken.write_text("notes", encoding="utf-8")
    assert cli.main(["import", str(src), "-o", str(taken)]) == 2
    assert capsys.readouterr().err == f"loopguard: error: {taken}: is a file; expected a folder for the traces (-o)\n"
    assert taken.read_text(encoding="utf-8") == "notes"


def test_run_ids_differing_only_in_case_get_distinct_files(tmp_path: Path) -> None:
    for instance in ("Repo-1", "repo-1"):
        (tmp_path / f"{instance}.src.json").write_text(json.dumps(mini_log(instance)), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(tmp_path / "Repo-1.src.json"), str(tmp_path / "repo-1.src.json"),
                     "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["Repo-1.yaml", "repo-1-2.yaml"]


class Crashing(Importer):
    """An importer with a bug: it recognises `{"crash": ...}` files and then fails on them."""

    name = "crashing"
    description = "a buggy plugin importer"

    def sniff(self, source: Source) -> bool:
        return isinstance(source.parsed, dict) and "crash" in source.parsed

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        yield from source.parsed["crash"]  # an int here: TypeError


CRASH_LINE = Crashing.convert.__code__.co_firstlineno + 1  # the line of `yield from` that raises


def test_an_importer_that_crashes_costs_only_its_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_cmd, "available", lambda: [*available(), Crashing()])
    odd = tmp_path / "odd.json"
    odd.write_text('{"crash": 5}', encoding="utf-8")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(mini_log("good")), encoding="utf-8")
    out = tmp_path / "out"
    # a bug is exit 3 (not 2, bad input), with where it was raised; the other sources are still imported
    assert cli.main(["import", str(odd), str(good), "-o", str(out)]) == 3
    err = capsys.readouterr().err
    assert err == (f"loopguard: internal error (please report it): {odd}: the crashing importer failed: "
                   f"TypeError: 'int' object is not iterable at test_import_cmd.py:{CRASH_LINE} in convert\n")
    assert [p.name for p in out.iterdir()] == ["good.yaml"]


def test_a_file_named_twice_or_also_inside_a_named_folder_is_imported_once(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    src = logs / "a.json"
    src.write_text(json.dumps(mini_log("a")), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(src), str(logs), str(tmp_path / "logs" / ".." / "logs" / "a.json"),
                     "-o", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["a.yaml"]


def test_no_planted_secret_survives_in_file_names_or_the_printed_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = PLANTED["openai-key"]
    log = {"trajectory_format": "mini-swe-agent-1.1", "instance_id": f"run {key}", "info": {}, "messages": [
        {"role": "user", "content": "task"},
        {"role": "tool", "tool_call_id": key, "content": "<returncode>0</returncode>"},  # an orphan: a warning
    ]}
    src = tmp_path / "s.json"
    src.write_text(json.dumps(log), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(src), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "orphan result for call id <redacted:openai-key:1>" in printed
    (written,) = out.iterdir()
    assert written.name == "run-redacted-openai-key-1.yaml"
    assert_no_planted_secret(printed + written.name + written.read_text(encoding="utf-8"))


def test_a_log_bigger_than_a_trace_file_imports_and_its_traces_load(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Logs are bounded by MAX_LOG_BYTES, not by a trace's MAX_FILE_BYTES; a string longer than a trace
    holds is cut to MAX_STRING with a warning, so `validate` accepts what `import` writes."""
    size = MAX_FILE_BYTES + 1024
    src = tmp_path / "big.json"
    src.write_text(json.dumps(mini_log("big", command="cat big.txt", output="y" * size)), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(src), "-o", str(out), "--format", "jsonl"]) == 0
    text = capsys.readouterr().out
    longest = size + len("<returncode>0</returncode>\n<output>\n\n</output>")  # mini_log's reply around it
    assert (f"big: warning: 1 string(s) longer than {MAX_STRING} characters (the longest {longest}) cut to "
            f"{MAX_STRING}, the longest a trace holds") in text
    assert cli.main(["validate", str(out)]) == 0
    result = next(s for s in load(out / "big.jsonl").steps if s.kind == "tool").result
    assert result is not None and result.text is not None and len(result.text) == MAX_STRING


def test_a_run_too_big_for_one_trace_file_is_an_error_and_leaves_no_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_cmd, "MAX_FILE_BYTES", 2000)
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    small.write_text(json.dumps(mini_log("small")), encoding="utf-8")
    large.write_text(json.dumps(mini_log("large", output="z" * 3000)), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(large), str(small), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"loopguard: error: {large}: run large gives a trace of ")
    assert err.endswith(" bytes; a trace file holds at most 2000\n")
    assert [p.name for p in out.iterdir()] == ["small.yaml"]


def test_a_log_above_the_log_bound_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_cmd, "MAX_LOG_BYTES", 100)
    src = tmp_path / "run.json"
    src.write_text(json.dumps(mini_log("r")), encoding="utf-8")
    assert cli.main(["import", str(src), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith(f"loopguard: error: {src}: file too large: ")


def test_the_help_lists_every_format_with_its_description(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["import", "--help"]) == 0
    text = capsys.readouterr().out
    listed = text.split("formats (--from FORMAT", 1)[1]
    assert all(f"  {i.name}" in listed and i.description[:40] in listed for i in available())
    assert "claude-code" in listed and "aider" in listed  # the coding agents' formats among them


def test_the_table_counts_calls_that_never_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a Claude Code batch: one call fails, its sibling is cancelled; then one the person refuses
    def line(n: int, kind: str, message: dict[str, object]) -> str:
        return json.dumps({"type": kind, "sessionId": "s1", "uuid": f"u{n}", "isSidechain": False,
                           "timestamp": f"2026-01-01T00:00:{n:02d}Z", "message": message}) + "\n"

    def call(n: int, ids: list[str]) -> str:
        return line(n, "assistant", {"id": f"m{n}", "role": "assistant", "content": [
            {"type": "tool_use", "id": i, "name": "Bash", "input": {"command": f"make {i}"}} for i in ids]})

    def result(n: int, call_id: str, text: str) -> str:
        return line(n, "user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": True}]})

    log = tmp_path / "s1.jsonl"
    log.write_text(line(1, "user", {"role": "user", "content": "build it"}) + call(2, ["a", "b"])
                   + result(3, "a", "Exit code 2") + result(4, "b", "<tool_use_error>Sibling tool call errored"
                                                                    "</tool_use_error>")
                   + call(5, ["c"]) + result(6, "c", "The user doesn't want to proceed with this tool use."),
                   encoding="utf-8")
    assert cli.main(["import", str(log), "-o", str(tmp_path / "out")]) == 0
    header, _, row = capsys.readouterr().out.splitlines()[:3]
    assert header.split()[:7] == ["trace", "from", "calls", "failed", "denied", "cancelled", "rejected"]
    assert row.split()[:7] == ["s1", "claude-code", "3", "1", "1", "1", "0"]


def test_a_folder_of_aider_histories_is_walked(tmp_path: Path) -> None:
    logs = tmp_path / "repo"
    logs.mkdir()
    sessions = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "sessions" / "aider"
    history = (sessions / "simple-calculator.aider.chat.history.md").read_bytes()
    (logs / ".aider.chat.history.md").write_bytes(history)  # where aider writes it: the repository's root
    (logs / "notes.md").write_text("# not a log\n", encoding="utf-8")  # other Markdown is not walked
    out = tmp_path / "out"
    assert cli.main(["import", str(logs), "-o", str(out)]) == 0
    (written,) = out.iterdir()
    assert sum(1 for s in load(written).steps if s.kind == "tool") == 20  # labels/sessions.yaml's count


def test_a_trace_keeps_the_logs_path_from_where_the_import_ran_never_the_machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 26 item 6: `source.origin` (and each step's `source.file`) held the importing machine's absolute
    # path, which then travelled with a shared corpus
    logs = tmp_path / "team" / "logs"
    logs.mkdir(parents=True)
    (logs / "chat.jsonl").write_bytes((Path(__file__).parent / "fixtures" / "openai_chat_records.jsonl").read_bytes())
    monkeypatch.chdir(tmp_path / "team")
    assert cli.main(["import", str(logs / "chat.jsonl"), "-o", str(tmp_path / "a")]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert cli.main(["import", str(logs / "chat.jsonl"), "-o", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    here = [load(p) for p in sorted((tmp_path / "a").iterdir())]
    away = [load(p) for p in sorted((tmp_path / "b").iterdir())]
    assert {t.source["origin"] for t in here} == {"logs/chat.jsonl"}  # relative to where the import ran
    assert {t.source["origin"] for t in away} == {"chat.jsonl"}  # outside it: the file name
    files = {s.source.file for t in here + away for s in t.steps if s.source is not None}
    assert files == {"logs/chat.jsonl", "chat.jsonl"} and not any(str(tmp_path) in f for f in files)
