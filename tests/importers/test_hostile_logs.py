"""Agent logs are untrusted too. Deep JSON inside a log (a tool call's argument string) is kept as text with
the reason, never parsed by recursion into a crash or an internal error. Hostile logs through `loopguard
import`, `eval` and a live Session: no planted secret survives anywhere (trace files and their names, the
table, notes and error lines, a recorded JSONL, every report form), and the safe reader's decisions (lone
surrogates, big integers, NaN, digits, archives, FIFOs) hold at the CLI."""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

import pytest
from planted_secrets import (
    PLANTED,
    USER_RULE,
    USER_SECRET,
    assert_no_planted_secret,
    hostile_positions,
    recognisable,
)

from pytest_loopguard import Session, ToolCall, ToolResult, cli
from pytest_loopguard.core._limits import MAX_DEPTH
from pytest_loopguard.core._safeload import check_json_depth, one_line, parse_foreign_json, parse_json
from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import to_trace
from pytest_loopguard.importers.build import ImportedRunBuilder, exit_code, number_in_text, parse_arguments


def chat_log(run_id: str, args: dict[str, object]) -> dict[str, object]:
    """An OpenAI chat-completions run whose one tool call has `args` (structured: keys reach the trace)."""
    return {
        "id": run_id,
        "model": "gpt-4.1",
        "messages": [
            {"role": "user", "content": f"deploy with {args.get('note', '')}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "http", "arguments": json.dumps(args)}}]},
            {"role": "tool", "tool_call_id": "c1", "content": f"ok {json.dumps(args)}"},
            {"role": "assistant", "content": "done"},
        ],
        "x_extra": args,  # an unmapped field the importer keeps (or reports) as it is
    }


def everything_shown(out: Path, *texts: str) -> str:
    """All an import left: file names and contents under OUT, and what it printed."""
    names = [str(p.relative_to(out)) for p in out.rglob("*")]
    return "\n".join([*texts, *names, *(p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file())])


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_no_planted_secret_survives_import_or_report(kind: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    secret = recognisable(kind)
    logs = tmp_path / f"logs-{secret}"  # in a folder name and a file name too
    logs.mkdir()
    # a bearer token may hold `/` (base64): one in the folder's name runs on into the file's, and is
    # redacted as one span with it; the file name then holds no second copy (docs/import.md, "Redaction")
    log = logs / ("run.json" if kind == "bearer-token" else f"run_{secret}.json")
    log.write_text(json.dumps(chat_log(f"run_{secret}", hostile_positions())), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(log), "-o", str(out), "--redact", USER_RULE]) == 0
    printed = capsys.readouterr()
    assert "0 distinct secrets" not in printed.out
    assert_no_planted_secret(everything_shown(out, printed.out, printed.err))
    # an import that fails names the file in its error line, redacted like the rest
    bad = "bad.json" if kind == "bearer-token" else f"bad_{secret}.json"
    (logs / bad).write_text('{"id": "x", "messages": [', encoding="utf-8")
    assert cli.main(["import", str(logs), "-o", str(tmp_path / "out2"), "--redact", USER_RULE]) == 2
    printed = capsys.readouterr()
    assert "loopguard: error: " in printed.err
    assert_no_planted_secret(printed.out + printed.err)
    # every report form of the imported trace
    (trace,) = [p for p in out.iterdir() if p.suffix == ".yaml"]
    for report in ("r.json", "r.md", "r.html"):
        assert cli.main(["run", str(trace), "--report", str(tmp_path / report)]) in (0, 1)
        assert_no_planted_secret((tmp_path / report).read_text(encoding="utf-8"))
    assert cli.main(["run", str(trace), "--json"]) in (0, 1)
    assert cli.main(["eval", str(trace), "--json"]) == 0
    printed = capsys.readouterr()
    assert_no_planted_secret(printed.out + printed.err)


def test_no_planted_secret_survives_a_recorded_session(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    positions = hostile_positions()
    with Session("default", record=path, now_ms=None) as s:
        s.message("user", "go")
        call = ToolCall.of("http", positions)
        s.before_call(call)
        s.after_call(call, ToolResult(text=json.dumps(positions)))
        s.done(True, "done")
    text = path.read_text(encoding="utf-8")
    assert "<redacted:url-password:" in text and "<redacted:openai-key:" in text
    found = [s for s in PLANTED.values() if s in text]
    assert found == [] and USER_SECRET in text  # no user rule configured here: only the built-in kinds go


def test_reimporting_with_redaction_replaces_what_it_wrote(tmp_path: Path) -> None:
    # the run id holds a secret: its placeholder number depends on what else is imported with it
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a", "b"):
        (logs / f"{name}.json").write_text(json.dumps(chat_log(f"{name}_{PLANTED['github-token']}{name}",
                                                               {"n": 1})), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["import", str(logs), "-o", str(out)]) == 0
    first = sorted(p.name for p in out.iterdir())
    assert cli.main(["import", str(logs / "b.json"), "-o", str(out)]) == 0
    assert cli.main(["import", str(logs), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == first and len(first) == 2


def test_the_same_relative_name_from_two_folders_gives_two_traces(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "run.json").write_text(json.dumps(chat_log("same-id", {"from": folder})))
        monkeypatch.chdir(tmp_path / folder)
        assert cli.main(["import", "run.json", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["same-id-2.yaml", "same-id.yaml"]
    monkeypatch.chdir(tmp_path / "one")  # and again from the first folder: its own trace is replaced
    assert cli.main(["import", "run.json", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["same-id-2.yaml", "same-id.yaml"]


def test_a_symlink_in_the_output_folder_is_never_written_through(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "r1.yaml").symlink_to(elsewhere / "victim.yaml")  # dangling
    (elsewhere / "kept.yaml").write_text("mine")
    (out / "r1.jsonl").symlink_to(elsewhere / "kept.yaml")  # live
    (tmp_path / "r1.json").write_text(json.dumps(chat_log("r1", {"a": 1})))
    assert cli.main(["import", str(tmp_path / "r1.json"), "-o", str(out)]) == 0
    assert sorted(p.name for p in elsewhere.iterdir()) == ["kept.yaml"]
    assert (elsewhere / "kept.yaml").read_text() == "mine"
    assert (out / "r1-2.yaml").is_file() and (out / "r1.yaml").is_symlink()


def test_symlinked_folders_are_not_walked(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "x.json").write_text(json.dumps(chat_log("x", {"a": 1})))
    for name in "abcd":
        (src / name).symlink_to(".")
    assert cli.main(["import", str(src), "-o", str(tmp_path / "out")]) == 0
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["x.yaml"]


def test_big_integers_are_kept_as_text_and_the_trace_validates(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "big.json"
    log.write_text(json.dumps(chat_log("big", {"id": 2**64, "small": 2**53})))
    out = tmp_path / "out"
    assert cli.main(["import", str(log), "-o", str(out)]) == 0
    assert "integer(s) beyond ±2^53 written as text" in capsys.readouterr().out
    assert "'18446744073709551616'" in (out / "big.yaml").read_text()
    assert cli.main(["validate", str(out)]) == 0


@pytest.mark.parametrize("fmt", ["yaml", "jsonl"])
def test_a_lone_surrogate_is_replaced_and_the_trace_replays(tmp_path: Path, fmt: str) -> None:
    log = tmp_path / "s.json"
    log.write_text(json.dumps(chat_log("s", {"t": "a\ud800b"})))  # json.dumps writes the escape "\ud800"
    out = tmp_path / "out"
    assert cli.main(["import", str(log), "-o", str(out), "--format", fmt]) == 0
    assert "a\ufffdb" in (out / f"s.{fmt}").read_text(encoding="utf-8")
    assert cli.main(["run", str(out / f"s.{fmt}")]) in (0, 1)
    assert cli.main(["eval", str(log)]) == 0


def test_corrupt_archives_and_fifos_end_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packed = tmp_path / "logs.tar.xz"
    with tarfile.open(packed, "w:xz") as tar:
        data = json.dumps(chat_log("t", {"pad": "z" * 50_000})).encode()
        info = tarfile.TarInfo("in\nside.json")
        info.size = len(data)
        import io

        tar.addfile(info, io.BytesIO(data))
    raw = bytearray(packed.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    packed.write_bytes(bytes(raw))
    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    for argv in (["import", str(packed), "-o", str(tmp_path / "o")], ["eval", str(packed)],
                 ["eval", str(fifo)], ["import", str(fifo), "-o", str(tmp_path / "o")]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("loopguard: error: ") and str(tmp_path) in err[0], err


def test_the_safe_reader_decides_once() -> None:
    assert parse_foreign_json('{"a": "\\ud800", "\\udfff": ["\\ud83d\\ude00"]}') == {"a": "\ufffd", "\ufffd": ["😀"]}
    assert parse_json('{"loopguard": 1, "t": "\\udc00"}')["t"] == "\ufffd"  # traces decide the same
    assert parse_foreign_json(str(2**64)) == 2**64  # a log may hold a 64-bit id
    for text, problem in [("[NaN]", "NaN is not a JSON number"), ("[1e400]", "beyond a 64-bit float"),
                          ("[" + "9" * 4301 + "]", "an integer of 4301 digits"), ("[" * 65 + "]" * 65, "deeper")]:
        with pytest.raises(TraceError, match=problem):
            parse_foreign_json(text, "log.json")
    assert one_line("a\nb\tc\u2028") == "a\\nb\\tc\\u2028"


def test_the_depth_scan_keeps_no_memory_per_character() -> None:
    import tracemalloc

    text = "[" * 64 + '"' + "x\\n" * 500_000 + '"' + "]" * 64
    tracemalloc.start()
    check_json_depth(text)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100_000  # the old scan kept ~115 bytes per character: 115 MB here


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_trace_with_a_lone_surrogate_replays(tmp_path: Path, suffix: str) -> None:
    header = {"loopguard": 1, "name": "s"}
    steps = [{"tool": "read", "args": {"p": "a"}, "result": {"ok": ok, "text": "x\ud800y"}} for ok in (True, False)]
    text = (json.dumps({**header, "steps": steps}) if suffix == ".json"
            else "\n".join(json.dumps(line) for line in [header, *steps]))  # json.dumps writes "\ud800"
    trace = tmp_path / f"s{suffix}"
    trace.write_text(text, encoding="utf-8")
    assert cli.main(["validate", str(trace)]) == 0
    assert cli.main(["run", str(trace)]) == 0


def test_an_openhands_row_with_odd_types_is_imported_not_a_bug(tmp_path: Path) -> None:
    # found by the import fuzz profile: a model response's `message` that is a string, not a mapping
    real = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "real" / "openhands"
    row = json.loads((real / "multi_swe_bench_examples" / "output.jsonl").read_text().splitlines()[0])
    bent = 0
    for event in row["history"]:
        response = event.get("tool_call_metadata", {}).get("model_response") if isinstance(event, dict) else None
        if isinstance(response, dict) and response.get("choices"):
            response["choices"][0]["message"] = "a string"
            bent += 1
    assert bent > 0
    log = tmp_path / "output.jsonl"
    log.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert cli.main(["import", str(log), "-o", str(tmp_path / "out")]) == 0


def test_deep_argument_text_is_kept_raw_with_the_reason() -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    args, extra = parse_arguments(deep)
    assert args == {} and extra == {"x-arguments": deep,
                                    "x-arguments-error": f"nested deeper than {MAX_DEPTH} levels"}


def test_argument_text_at_the_depth_limit_is_parsed() -> None:
    inner = MAX_DEPTH - 1
    args, extra = parse_arguments('{"a": ' + "[" * inner + "]" * inner + "}")
    assert extra == {} and list(args) == ["a"]


@pytest.mark.parametrize("text", ["9" * 5000, "9" * 17, "\u00b9", "1e3", "", " 1", "+1", "0x10"])
def test_a_number_in_a_logs_text_past_its_bounds_or_odd_is_none(text: str) -> None:
    # int() raises on 5,000 digits and on "¹" (which str.isdigit admits): a log's number is read bounded
    assert exit_code(text) is None and number_in_text(text) is None


def test_a_number_in_a_logs_text_within_its_bounds_is_read() -> None:
    assert exit_code("-1") == -1 and exit_code(str(2**31 - 1)) == 2**31 - 1 and exit_code(str(2**31)) is None
    assert number_in_text("\u0663") == 3 and number_in_text("-1") is None and number_in_text("12", 0, 11) is None
    assert number_in_text(7) == 7 and number_in_text(True) is None and number_in_text(2**53 + 1) is None


def test_a_count_past_what_a_trace_holds_is_left_out_with_a_warning() -> None:
    b = ImportedRunBuilder("odd", file="odd.json")
    b.llm(index=0, input_tokens=10**20, output_tokens=5)
    b.rejected("bad", index=1, input_tokens=3, output_tokens=10**4000)
    step = b.tool("ls", {}, index=2)
    b.set_result(step, {"text": "x", "tokens": 10**10, "bytes": 4, "exit_code": -(2**60)})
    b.compacted(index=3, tokens_before=2 * 10**9)
    b.steps[0]["t"] = 2**60
    run = b.build()
    steps = to_trace(run).steps
    llm, rejected = steps[0].llm, steps[1].rejected.llm
    assert [len(run.warnings), llm.input_tokens, llm.output_tokens, rejected.output_tokens] == [6, None, 5, None]
    assert (steps[2].result.tokens, steps[2].result.bytes, steps[2].result.exit_code) == (None, 4, None)
    assert all("is past what a trace holds" in w for w in run.warnings)
