"""`loopguard run -j N`: stdout, stderr, exit status and report files byte for byte those of `-j 1`, on the
repository's traces, the real agent runs and a folder of good, bad, non-trace and duplicate files; a worker's
bug, a killed worker and Ctrl-C end the run as they should.

The pool is forced on small folders by shrinking the batch size (`pooled`), and a spy checks it really ran.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jobs_helpers  # tests/cli is on sys.path (rootdir-relative test modules); the workers import it by name
import pytest

from pytest_loopguard.cli import _corpus as stream
from pytest_loopguard.cli import _jobs as run_jobs
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.cli._jobs import batch_size, parse_jobs, usable_cpus
from pytest_loopguard.importers import import_runs, to_trace
from pytest_loopguard.io._format import dump

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "corpus" / "real"
HELPERS = Path(jobs_helpers.__file__).parent
JOBS = (2, 3, 8)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def clicks(n: int, name: str, expect: str = "", policy: str = "default") -> str:
    steps = "".join("  - {tool: click, args: {index: 3}}\n" for _ in range(n))
    return f"loopguard: 1\nname: {name}\npolicy: {policy}\nsteps:\n{steps}{expect}"


def jsonl(name: str, n: int, *, expect: str = "", torn: bool = False) -> str:
    lines = [f'{{"loopguard": 1, "name": "{name}", "policy": "default"{expect}}}']
    lines += ['{"tool": "click", "args": {"index": 3}}'] * n
    if torn:
        lines.append('{"tool": "cli')
    return "\n".join(lines) + "\n"


class Pools:
    """How many pools `run_jobs` started (a spy on `_Pool`)."""

    def __init__(self) -> None:
        self.started = 0


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> Pools:
    """Batches of one or two files, so a folder of a dozen files runs on the pool; report dates pinned."""
    monkeypatch.setattr(run_jobs, "MIN_BATCH", 1)
    monkeypatch.setattr(run_jobs, "MAX_BATCH", 2)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    pools = Pools()
    real = run_jobs._Pool

    class Spy(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pools.started += 1
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(run_jobs, "_Pool", Spy)
    return pools


def run(capsys: pytest.CaptureFixture[str], argv: list[str], report: Path | None = None) -> tuple[Any, ...]:
    """Status, stdout, stderr and the report file's bytes of one `loopguard` call."""
    if report is not None and report.exists():
        report.unlink()
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err, report.read_bytes() if report is not None else None


def assert_same_as_one_process(capsys: pytest.CaptureFixture[str], pools: Pools, argv: list[str],
                               jobs: tuple[int, ...] = JOBS, report: Path | None = None) -> tuple[Any, ...]:
    one = run(capsys, ["run", *argv], report)
    for n in jobs:
        before = pools.started
        many = run(capsys, ["run", "-j", str(n), *argv], report)
        assert pools.started == before + 1, "the pool did not run"
        assert many == one, f"-j {n} differs from -j 1 for {argv}"
    return one


# ---- the mixed folder ----------------------------------------------------------------------------------
@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """Good, failing, bad, non-trace, torn, duplicate and policy-file traces in one folder (and a policy)."""
    write(tmp_path, "pyproject.toml", "")
    write(tmp_path, "policies/strict.yaml", "preset: default\nloop_guard: {warn_at: 1}\n")
    t = tmp_path / "traces"
    counts = "expect: {outcome: incomplete, counts: {allow: 2, warn: 2, block: 1}}\n"
    write(t, "a_good.yaml", clicks(5, "passing", counts))
    write(t, "b_fail.yaml", clicks(6, "failing", "expect: {outcome: stopped}\n").replace(
        "  - {tool: click, args: {index: 3}}\n", "  - {tool: click, args: {index: 3}, expect: allow}\n", 4))
    write(t, "c_multi.yaml", clicks(2, "multi-1") + "---\n" + clicks(3, "passing"))  # a duplicate name
    write(t, "d_bad.yaml", "loopguard: 1\nname: bad\nsteps: 3\n")
    write(t, "e_otel.json", '{"resourceSpans": [{"scopeSpans": []}]}\n')
    write(t, "f_torn.jsonl", jsonl("torn", 4, torn=True))
    write(t, "g_stream_fail.jsonl", jsonl("stream-fail", 6, expect=', "expect": {"outcome": "completed"}'))
    write(t, "h_dup.jsonl", jsonl("failing", 2))
    write(t, "i_own_policy.yaml", "loopguard: 1\nname: own-policy\npolicy: ../policies/strict.yaml\n"
          "steps:\n  - {tool: a, expect: warn}\n  - {tool: b}\n")
    write(t, "j_notes.txt.yaml", "just: a mapping\n")
    (t / "k_binary.yaml").write_bytes(b"loopguard: 1\nname: \xff\xfe\n")
    write(t, "l_unknown_preset.yaml", clicks(2, "unknown-preset", policy="no-such-preset"))
    for i in range(4):
        write(t, f"m_{i}.jsonl", jsonl(f"many-{i}", 3 + i))
    return tmp_path


def test_a_mixed_folder_gives_the_output_of_one_process(
    mixed: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(mixed)
    status, out, err, _ = assert_same_as_one_process(capsys, pooled, ["traces"])
    # the folder holds what it should: a mismatch, bad inputs, a skip, a torn line, duplicates
    assert status == 2
    assert "traces/b_fail.yaml::failing" in out and "traces/g_stream_fail.jsonl::stream-fail" in out
    assert "duplicate trace name 'passing'" in err and "duplicate trace name 'failing'" in err
    assert "loopguard: traces/e_otel.json " in err and "torn last line ignored" in err
    assert "traces/d_bad.yaml" in err and "traces/k_binary.yaml" in err and "no-such-preset" in err


@pytest.mark.parametrize("option", [
    ["--json"],
    ["--coverage"],
    ["--json", "--coverage"],
    ["--policy", "openhands"],
    ["--policy", "../policies/strict.yaml"],
    ["--policy", "{preset: default, loop_guard: {warn_at: 2}}"],
], ids=lambda o: " ".join(o))
def test_options_give_the_output_of_one_process(
    mixed: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    option: list[str],
) -> None:
    monkeypatch.chdir(mixed / "traces")
    assert_same_as_one_process(capsys, pooled, [*option, "."])


@pytest.mark.parametrize("suffix", [".json", ".md", ".html"])
def test_reports_are_the_files_of_one_process(
    mixed: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    monkeypatch.chdir(mixed)
    report = mixed / f"report{suffix}"
    assert_same_as_one_process(capsys, pooled, ["--report", str(report), "traces"], report=report)


def test_files_named_one_by_one_give_the_output_of_one_process(
    mixed: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(mixed)
    named = sorted(str(p.relative_to(mixed)) for p in (mixed / "traces").iterdir())
    status, _, err, _ = assert_same_as_one_process(capsys, pooled, [*reversed(named), "traces/missing.yaml"])
    assert status == 2 and "traces/e_otel.json" in err and "traces/missing.yaml: no such file" in err


# ---- the repository's traces and the real runs --------------------------------------------------------
def test_the_repository_traces_give_the_output_of_one_process(
    pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    status, out, _, _ = assert_same_as_one_process(capsys, pooled, ["traces"])
    assert status == 0 and out.rstrip().endswith(" mismatched")


def test_the_repository_traces_report_and_coverage_are_those_of_one_process(
    pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    report = tmp_path / "traces.html"
    assert_same_as_one_process(capsys, pooled, ["--coverage", "--json", "--report", str(report), "traces"],
                               jobs=(3,), report=report)


def test_the_real_corpus_folder_gives_the_skip_notes_of_one_process(
    pooled: Pools, capsys: pytest.CaptureFixture[str]
) -> None:
    # agent logs, not traces: every file is skipped with the importer's hint (its parsed document crosses over)
    status, out, err, _ = assert_same_as_one_process(capsys, pooled, [str(REAL)])
    assert status == 0 and out.strip() == "loopguard: 0 traces replayed, 0 mismatched"
    assert err.count("loopguard import it") >= 10


def test_the_real_runs_imported_give_the_output_of_one_process(
    pooled: Pools, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import yaml

    labels = yaml.safe_load((REAL / "labels.yaml").read_text(encoding="utf-8"))["runs"]
    for i, entry in enumerate(labels):
        trace = to_trace(import_runs(REAL / entry["file"])[entry.get("row", 0)], f"real-{i}")
        dump(trace, tmp_path / f"real-{i:02d}.{('yaml', 'json', 'jsonl')[i % 3]}")
    for option in ([], ["--policy", "openhands", "--json"]):
        status, out, _, _ = assert_same_as_one_process(capsys, pooled, [*option, str(tmp_path)], jobs=(2, 8))
        assert status == 0 and "real-13" in out


# ---- a worker's bug, a killed worker, Ctrl-C ------------------------------------------------------------
@pytest.fixture
def buggy(tmp_path: Path) -> Path:
    for i in range(6):
        write(tmp_path, f"a{i}.yaml", clicks(3, f"fine-{i}"))
    write(tmp_path, "a9.jsonl", jsonl("torn-before", 2, torn=True))  # its warning is shown before the bug
    write(tmp_path, "b_late.yaml", clicks(2, "explodes"))  # a bug (jobs_helpers.exploding_executed)
    write(tmp_path, "z.yaml", clicks(2, "after"))
    return tmp_path


def assert_bug_ends_as_in_one_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                     folder: Path, bug: tuple[str, Any], work: Any,
                                     jobs: tuple[int, ...] = JOBS) -> tuple[Any, ...]:
    """`stream`'s function `bug[0]` swapped for the buggy `bug[1]` here and `work` (the same bug) in the
    workers: each -j N gives what -j 1 gave, which is returned."""
    monkeypatch.setattr(stream, *bug)
    one = run(capsys, ["run", str(folder)])
    monkeypatch.setattr(run_jobs, "WORK", work)
    for n in jobs:
        assert run(capsys, ["run", "-j", str(n), str(folder)]) == one
    return one


def test_a_bug_while_replaying_ends_the_run_as_in_one_process(
    buggy: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    one = assert_bug_ends_as_in_one_process(capsys, monkeypatch, buggy, ("_executed", jobs_helpers.exploding_executed),
                                            jobs_helpers.exploding_work)
    assert one[0] == 3 and one[1] == ""
    assert one[2].endswith("loopguard: internal error (please report it): KeyError: 'explodes'\n")
    assert "torn last line ignored" in one[2]


def test_a_bug_in_a_duplicate_is_never_met_as_in_one_process(
    buggy: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # an earlier file names a trace `explodes` too: one process never replays b_late.yaml's, a duplicate
    write(buggy, "a_first.yaml", clicks(2, "explodes"))
    one = assert_bug_ends_as_in_one_process(capsys, monkeypatch, buggy, ("_executed", jobs_helpers.exploding_executed),
                                            jobs_helpers.exploding_work)
    assert one[0] == 2 and "b_late.yaml: field 'name': duplicate trace name 'explodes'" in one[2]


@pytest.mark.parametrize(("name", "line"), [
    ("boom.yaml", "loopguard: internal error (please report it): ZeroDivisionError: boom in boom.yaml\n"),
    ("policyerr.yaml", "loopguard: error: policyerr.yaml: policy: unknown preset 'gone'\n"),
])
def test_an_error_while_reading_a_file_ends_the_run_as_in_one_process(
    buggy: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    name: str, line: str,
) -> None:
    write(buggy, name, clicks(2, "never"))
    (buggy / "b_late.yaml").unlink()
    one = assert_bug_ends_as_in_one_process(capsys, monkeypatch, buggy, ("file_runs", jobs_helpers.exploding_file_runs),
                                            jobs_helpers.exploding_work)
    assert one[0] in (2, 3) and one[2].endswith(line) and one[1] == ""


def test_an_exception_that_does_not_pickle_comes_back_by_name_and_message(
    buggy: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    one = assert_bug_ends_as_in_one_process(capsys, monkeypatch, buggy, ("_executed", jobs_helpers.raising_executed),
                                            jobs_helpers.unpicklable_work, jobs=(2,))
    assert one[2].endswith("internal error (please report it): Unpicklable: cannot be pickled back\n")


def test_a_killed_worker_ends_the_run_naming_its_file(
    buggy: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (buggy / "b_late.yaml").unlink()
    killer = write(buggy, "kill.yaml", clicks(2, "killed"))
    monkeypatch.setattr(run_jobs, "WORK", jobs_helpers.killing_work)
    status, out, err, _ = run(capsys, ["run", "-j", "2", str(buggy)])
    assert status == 3 and out == ""
    assert err.endswith(f"loopguard: error: a worker process died (killed by SIGKILL) while replaying {killer}; "
                        "the run is incomplete\n"), err
    assert err.count("\n") == 2  # the torn line's warning (a9.jsonl comes first), then the one error


def _session_processes(sid: int) -> list[int]:
    """The live processes of session `sid` (the subprocess started a session of its own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":  # state, ppid, pgrp, session; a zombie has ended
                found.append(int(entry.name))
    return found


def _wait_gone(pid: int) -> None:
    """Wait for a process that is not a child to end (pidfd: no sleeping, no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        assert select.select([fd], [], [], 60)[0], f"process {pid} still runs"
    finally:
        os.close(fd)


@pytest.mark.skipif(not hasattr(os, "pidfd_open") or not Path("/proc").is_dir(), reason="needs Linux")
def test_ctrl_c_ends_the_workers_without_tracebacks(buggy: Path, tmp_path: Path) -> None:
    write(buggy, "block.yaml", clicks(2, "blocked"))
    (buggy / "a9.jsonl").unlink()  # its warning would be shown or not depending on when Ctrl-C comes
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    script = write(tmp_path, "main.py", f"""
        import sys
        sys.path.insert(0, {str(HELPERS)!r})
        import jobs_helpers
        from pytest_loopguard.cli import _jobs as run_jobs, _main as cli

        run_jobs.WORK = jobs_helpers.blocking_work
        run_jobs.MIN_BATCH, run_jobs.MAX_BATCH = 1, 1
        if __name__ == "__main__":
            sys.exit(cli.main(sys.argv[1:]))
        """)
    proc = subprocess.Popen([sys.executable, str(script), "run", "-j", "3", str(buggy)], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "LOOPGUARD_TEST_FIFO": str(fifo)})
    try:
        with open(fifo, encoding="utf-8") as reader:  # returns once a worker is on block.yaml
            pid, ignores_ctrl_c = reader.readline().split()
            worker = int(pid)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert ignores_ctrl_c == "True"
    assert proc.returncode == 130, err
    assert err == "loopguard: interrupted\n" and out == ""
    for pid in [worker, *_session_processes(proc.pid)]:  # the workers, and the forkserver once it sees us gone
        _wait_gone(pid)
    assert _session_processes(proc.pid) == []


# ---- the pool's own rules -------------------------------------------------------------------------------
def test_a_small_corpus_runs_in_this_process(
    buggy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pools = Pools()
    monkeypatch.setattr(run_jobs, "_Pool", lambda *a: pools.__setattr__("started", 1))
    (buggy / "b_late.yaml").unlink()
    one = run(capsys, ["run", str(buggy)])
    assert run(capsys, ["run", "-j", "8", str(buggy)]) == one
    assert pools.started == 0


def test_batches_in_flight_stay_within_the_window(tmp_path: Path) -> None:
    files = [write(tmp_path, f"t{i:02d}.yaml", clicks(2, f"t{i}")) for i in range(40)]
    batches = [[(i, str(f))] for i, f in enumerate(files)]
    setup = run_jobs._Setup(os.getcwd(), None, True, False, run_jobs.replay_file)
    pool = run_jobs._Pool(2, setup)
    try:
        got: Iterator[list[Any]] = pool.results(batches, lambda i: str(files[i]))
        names = [events[0][0][0] for events in got]
    finally:
        pool.close()
    assert names == [f"t{i}" for i in range(40)]
    assert 2 <= pool.most_in_flight <= run_jobs.WINDOW_PER_WORKER * 2


def test_workers_send_passing_loaded_traces_without_their_steps(tmp_path: Path) -> None:
    passing = write(tmp_path, "p.yaml", clicks(5, "p", "expect: {outcome: incomplete}\n"))
    failing = write(tmp_path, "f.yaml", clicks(5, "f", "expect: {outcome: completed}\n"))
    (_, (result, _), _), = run_jobs.replay_file(passing, None, {}, True, False)
    assert result.trace.steps == () and result.counts() == {"allow": 2, "warn": 2, "block": 1}
    (_, (result, mismatches), _), = run_jobs.replay_file(failing, None, {}, True, False)
    assert mismatches and len(result.trace.steps) == 5  # its mismatch table shows the steps
    (_, (result, _), _), = run_jobs.replay_file(passing, None, {}, False, True)
    assert len(result.steps) == 5  # --coverage and --report read every step's verdicts


@pytest.mark.parametrize(("text", "expected"), [("1", 1), ("3", 3), ("16", 16), ("0", None), ("auto", None)])
def test_jobs_option(text: str, expected: int | None) -> None:
    assert parse_jobs(text) == (expected or usable_cpus())


@pytest.mark.parametrize("text", ["-1", "x", "1.5", ""])
def test_a_bad_jobs_option_is_one_line(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "-j", text, "traces"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (f"loopguard: error: argument -j/--jobs: expected an integer >= 1, 0 or 'auto' "
                                    f"(one per CPU), got {text!r}")


def test_usable_cpus_follows_the_process_then_its_affinity_then_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "process_cpu_count", lambda: 6, raising=False)  # Python 3.13+
    assert usable_cpus() == 6
    monkeypatch.delattr(os, "process_cpu_count")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 5}, raising=False)
    assert usable_cpus() == 3  # the CPUs this process may run on, not the machine's
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 12)
    assert usable_cpus() == 12
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert usable_cpus() == 1


def test_batch_size_spreads_a_corpus_over_the_workers() -> None:
    assert batch_size(10, 2) == run_jobs.MIN_BATCH
    assert batch_size(20_000, 16) == 157  # 128 batches: eight per worker
    assert batch_size(1_000, 2) == 128  # the floor: eight batches of 128, four per worker
    assert batch_size(10**7, 2) == run_jobs.MAX_BATCH


def test_a_plain_run_does_not_import_multiprocessing() -> None:
    code = ("import sys\nfrom pytest_loopguard.cli import _main as cli\n"
            "status = cli.main(['run', '-j', '1', 'traces/loop_guard'])\n"
            "print(status, 'multiprocessing' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.splitlines()[-1] == "0 False"


def test_python_warnings_of_a_worker_are_shown_as_one_process_shows_them(tmp_path: Path) -> None:
    # pytest records warnings itself, so the command runs in a process of its own, as a user runs it
    folder = tmp_path / "t"
    for i in range(3):
        write(folder, f"a{i}.yaml", clicks(2, f"fine-{i}"))
    write(folder, "b.yaml", clicks(2, "noisy-1"))
    write(folder, "c.yaml", clicks(2, "noisy-1"))  # a duplicate: never run by one process, so never warns
    write(folder, "warn1.yaml", clicks(2, "noisy-2"))
    write(folder, "warn2.yaml", clicks(2, "quiet"))
    script = write(tmp_path, "main.py", f"""
        import sys
        sys.path.insert(0, {str(HELPERS)!r})
        import jobs_helpers
        from pytest_loopguard.cli import _jobs as run_jobs, _main as cli
        from pytest_loopguard.cli import _corpus as stream

        stream.file_runs = jobs_helpers.warning_file_runs  # one process
        run_jobs.WORK = jobs_helpers.warning_work  # the workers
        run_jobs.MIN_BATCH, run_jobs.MAX_BATCH = 1, 1
        if __name__ == "__main__":
            sys.exit(cli.main(sys.argv[1:]))
        """)

    def command(*jobs: str) -> tuple[int, str, str]:
        done = subprocess.run([sys.executable, str(script), "run", *jobs, str(folder)], capture_output=True,
                              text=True, timeout=120)
        return done.returncode, done.stdout, done.stderr

    one = command()
    assert one[2].count("UserWarning: odd file") == 1 and "noisy trace noisy-1 in b.yaml" in one[2]
    assert "in c.yaml" not in one[2] and "read all of warn2.yaml" in one[2]
    for n in JOBS:
        assert command("-j", str(n)) == one


def test_a_result_that_cannot_cross_ends_the_run_at_its_file(
    buggy: Path, pooled: Pools, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (buggy / "b_late.yaml").unlink()
    write(buggy, "unsendable.yaml", clicks(2, "unsendable"))
    monkeypatch.setattr(run_jobs, "WORK", jobs_helpers.unsendable_work)
    status, out, err, _ = run(capsys, ["run", "-j", "2", str(buggy)])
    assert status == 3 and out == ""
    last = err.splitlines()[-1]
    assert last.startswith("loopguard: internal error (please report it): RuntimeError: a result cannot be sent "
                           "between processes (run with -j 1): ")
    assert "lambda" in last and "torn last line ignored" in err  # a9.jsonl came before it


def test_a_program_read_from_stdin_without_a_main_guard_can_run_jobs(mixed: Path) -> None:
    # multiprocessing would have each worker import the main module again: from stdin it has no file, and an
    # unguarded script would run its own code once more; the workers start without it
    def program(jobs: str) -> tuple[int, str, str]:
        code = ("from pytest_loopguard.cli import _jobs as run_jobs, _main as cli\n"
                "run_jobs.MIN_BATCH, run_jobs.MAX_BATCH = 1, 1\n"
                f"print('status', cli.main(['run', '-j', {jobs!r}, 'traces']))\n")
        done = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=120,
                              cwd=mixed)
        return done.returncode, done.stdout, done.stderr

    one = program("1")
    assert one[0] == 0 and one[1].endswith("status 2\n") and "Traceback" not in one[2]
    assert program("3") == one
