"""`--backend dask` on `run`, `eval` (with `--sweep`) and `conform`: stdout, stderr, exit status and report files
byte for byte those of `-j 1` on the repository's traces, the real corpus (and, `slow`, the calibration tarball's
sweep), with the batches really spread over a local cluster of 2 workers; a worker killed once has its batch
retried, killed every time the batch is reported in one line; without Dask, one line naming the extra.

One cluster serves the module (`--scheduler` its address); it is the command's own cluster class, so making a
local cluster is what is tested. A killed worker's batch is retried on another one once
(`allowed-failures=1`), then reported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import jobs_helpers  # tests/cli is on sys.path: the workers import the work functions by name
import pytest

from pytest_loopguard.cli import _conform as conform_cmd
from pytest_loopguard.cli import _dask
from pytest_loopguard.cli import _eval as eval_cmd
from pytest_loopguard.cli import _jobs as run_jobs
from pytest_loopguard.cli import _main as cli

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "corpus"
REAL = SHARED / "real"
CALIBRATION = SHARED / "calibration" / "mini-swe-agent-gemini-3-pro-swebench.tar.gz"
GUARD = f"{sys.executable} {ROOT / 'examples' / 'guards' / 'python_guard.py'}"


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A local cluster of 2 worker processes for the module: its scheduler's address."""
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), _dask.Cluster(2, None) as cluster:
        yield cluster.client.scheduler.address


class Batches:
    """How many batches went to the cluster (a spy on `Cluster.results`)."""

    def __init__(self) -> None:
        self.sent = 0


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> Batches:
    """Small batches, so a few files (or runs) make several; report dates pinned."""
    monkeypatch.setattr(run_jobs, "MIN_BATCH", 1)
    monkeypatch.setattr(run_jobs, "MAX_BATCH", 8)
    monkeypatch.setattr(eval_cmd, "MIN_RUNS", 1)
    monkeypatch.setattr(conform_cmd, "MIN_TRACES", 1)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    spy = Batches()
    real = _dask.Cluster.results

    def results(self: _dask.Cluster, task: Any, batches: Any, describe: Any) -> Iterator[Any]:
        spy.sent += len(batches)
        return real(self, task, batches, describe)

    monkeypatch.setattr(_dask.Cluster, "results", results)
    return spy


def run(capsys: pytest.CaptureFixture[str], argv: list[str], report: Path | None = None) -> tuple[Any, ...]:
    """Status, stdout, stderr and the report file's bytes of one `loopguard` call."""
    if report is not None and report.exists():
        report.unlink()
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err, report.read_bytes() if report is not None else None


def assert_same_on_the_cluster(capsys: pytest.CaptureFixture[str], spy: Batches, scheduler: str, argv: list[str],
                               report: Path | None = None) -> tuple[Any, ...]:
    one = run(capsys, argv, report)
    before = spy.sent
    on_dask = run(capsys, [*argv, "--backend", "dask", "--scheduler", scheduler], report)
    assert spy.sent - before >= 2, "the cluster did not get the batches"
    assert on_dask == one, f"--backend dask differs from -j 1 for {argv}"
    return one


# ---- run ---------------------------------------------------------------------------------------------------
def test_run_on_the_repository_traces_is_the_output_of_one_process(
    scheduler: str, batches: Batches, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    status, out, _, _ = assert_same_on_the_cluster(capsys, batches, scheduler, ["run", "traces"])
    assert status == 0 and out.rstrip().endswith(" mismatched")


def test_run_with_a_report_coverage_and_json_is_the_output_of_one_process(
    scheduler: str, batches: Batches, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(ROOT)
    report = tmp_path / "traces.html"
    assert_same_on_the_cluster(capsys, batches, scheduler,
                               ["run", "--coverage", "--json", "--policy", "openhands", "--report", str(report),
                                "traces/loop_guard", "traces/context"], report=report)


def test_run_on_the_real_corpus_gives_the_skip_notes_of_one_process(
    scheduler: str, batches: Batches, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err, _ = assert_same_on_the_cluster(capsys, batches, scheduler, ["run", str(REAL)])
    assert status == 0 and out.strip() == "loopguard: 0 traces replayed, 0 mismatched"
    # one skip line per file that is no trace (a log to import, the labels file): the lines of one process
    assert sum(line.startswith("loopguard: ") and ("is not a trace" in line or "loopguard import it" in line)
               for line in err.splitlines()) >= 10


def write_folder(folder: Path) -> Path:
    for i in range(6):
        steps = "".join("  - {tool: click, args: {index: 3}}\n" for _ in range(3 + i))
        name = "kill_me" if i == 3 else f"t{i}"
        (folder / f"{name}.yaml").write_text(f"loopguard: 1\nname: {name}\npolicy: default\nsteps:\n{steps}",
                                            encoding="utf-8")
    return folder


def test_a_worker_killed_once_has_its_batch_retried_and_the_output_is_that_of_one_process(
    scheduler: str, batches: Batches, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(run_jobs, "WORK", jobs_helpers.killing_once_work)
    monkeypatch.chdir(write_folder(tmp_path))
    status, out, _, _ = assert_same_on_the_cluster(capsys, batches, scheduler, ["run", "."])
    assert (tmp_path / "kill_me.yaml.killed").exists(), "no worker was killed"
    assert status == 0 and "6 traces replayed" in out


def test_a_worker_killed_every_time_is_one_line_naming_the_batch_and_exit_3(
    scheduler: str, batches: Batches, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(run_jobs, "WORK", jobs_helpers.killing_work)
    monkeypatch.setattr(run_jobs, "MIN_BATCH", 2)
    monkeypatch.setattr(run_jobs, "MAX_BATCH", 2)
    monkeypatch.chdir(write_folder(tmp_path))
    status, out, err, _ = run(capsys, ["run", ".", "--backend", "dask", "--scheduler", scheduler])
    assert status == 3 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err == ("loopguard: error: a Dask worker died on batch 1 of 3 (2 files, kill_me.yaml .. t0.yaml), "
                   "on every try; the run is incomplete\n")


# ---- eval --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("options", [
    ["--sweep", "loop_guard.warn_at=2..4"],
    pytest.param(["--policy", "default", "--policy", "openhands", "--json"], marks=pytest.mark.slow),
    pytest.param(["--policy", "default", "--markdown"], marks=pytest.mark.slow),
    pytest.param(["--policy", "default", "--policy", "goose", "--sweep", "loop_guard.warn_at=2..4", "--json"],
                 marks=pytest.mark.slow),
], ids=lambda o: " ".join(o))
def test_eval_on_the_labelled_real_corpus_is_the_output_of_one_process(
    scheduler: str, batches: Batches, capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    status, out, _, _ = assert_same_on_the_cluster(
        capsys, batches, scheduler, ["eval", str(REAL), "--labels", str(REAL / "labels.yaml"), *options])
    assert status == 0 and out.strip()


def test_eval_on_local_processes_is_the_output_of_one_process(capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eval_cmd, "MIN_RUNS", 1)
    spawned = []
    real = eval_cmd._replays

    def replays(*args: Any) -> Any:
        spawned.append(args[0].jobs)
        return real(*args)

    monkeypatch.setattr(eval_cmd, "_replays", replays)
    argv = ["eval", str(REAL / "mini-swe-agent-deepseek"), "--sweep", "loop_guard.warn_at=2..3", "--json"]
    assert run(capsys, [*argv, "-j", "2"]) == run(capsys, argv)
    assert spawned == [2]


@pytest.mark.slow
def test_the_calibration_sweep_on_the_cluster_is_the_output_of_one_process(
    scheduler: str, batches: Batches, capsys: pytest.CaptureFixture[str]
) -> None:
    for output in (["--json"], []):
        status, out, _, _ = assert_same_on_the_cluster(
            capsys, batches, scheduler, ["eval", str(CALIBRATION), "--sweep", "loop_guard.warn_at=2..5", *output])
        assert status == 0 and "loop_guard.warn_at" in out


# ---- conform -----------------------------------------------------------------------------------------------
def test_conform_is_the_output_of_one_process(
    scheduler: str, batches: Batches, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(conform_cmd, "MIN_TRACES", 3)
    traces = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "traces" / "loop_guard").glob("*.yaml"))[:6]
    status, out, _, _ = assert_same_on_the_cluster(
        capsys, batches, scheduler, ["conform", GUARD, *traces, "--against", "default", "--reasons"])
    assert status == 0 and " 0 differ, 0 error(s)" in out and out.count("ok    ") == 6


# ---- without Dask, or without asking for it ----------------------------------------------------------------
def loopguard_without_dask(*argv: str) -> subprocess.CompletedProcess[str]:
    """`loopguard ARGV` in a fresh interpreter where `distributed` cannot be imported."""
    code = ("import sys\nsys.modules['distributed'] = None  # as if the extra were not installed\n"
            "from pytest_loopguard.cli import _main as cli\nsys.exit(cli.main(sys.argv[1:]))\n")
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", [
    ["run", "traces/loop_guard"],
    pytest.param(["eval", str(REAL / "mini-swe-agent-deepseek")], marks=pytest.mark.slow),
    pytest.param(["conform", GUARD, "traces/loop_guard"], marks=pytest.mark.slow),
], ids=lambda c: c[0])
def test_without_the_extra_the_backend_is_one_line_naming_it(command: list[str]) -> None:
    done = loopguard_without_dask(*command, "--backend", "dask")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("loopguard: error: --backend dask needs Dask's distributed package: "
                           "pip install 'pytest-loopguard[dask]'\n")


def test_scheduler_without_the_dask_backend_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err, _ = run(capsys, ["run", "traces/loop_guard", "--scheduler", "tcp://127.0.0.1:1"])
    assert status == 2 and out == "" and err.startswith("loopguard: error: --scheduler ADDRESS is a Dask scheduler")


@pytest.mark.parametrize(("address", "problem"), [
    ("tcp://127.0.0.1:9", "Timed out trying to connect to tcp://127.0.0.1:9 after 1 s"),
    ("not an address", "missing port number in address 'not an address'"),
])
def test_a_scheduler_that_cannot_be_reached_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, address: str, problem: str
) -> None:
    monkeypatch.setattr(_dask, "CONNECT_S", 1)
    status, out, err, _ = run(capsys, ["run", "traces/loop_guard", "--backend", "dask", "--scheduler", address])
    assert (status, out) == (2, "")
    assert err == f"loopguard: error: --scheduler {address}: cannot reach the Dask scheduler: {problem}\n"


def test_the_package_and_a_local_run_import_no_dask() -> None:
    code = ("import sys, pytest_loopguard, pytest_loopguard.eval, pytest_loopguard.live\n"
            "from pytest_loopguard.cli import _main as cli\n"
            "assert cli.main(['run', '-j', '2', 'traces/loop_guard']) == 0\n"
            "assert cli.main(['eval', '-j', '2', sys.argv[1]]) == 0\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')], 'dask imported'\n")
    subprocess.run([sys.executable, "-c", code, str(REAL / "mini-swe-agent-deepseek")], cwd=ROOT, check=True,
                   capture_output=True)


# ---- the command's own cluster, as a user starts it ---------------------------------------------------------
@pytest.mark.slow
def test_the_commands_own_local_cluster_gives_the_output_of_one_process() -> None:
    def loopguard(*argv: str) -> tuple[int, str, str]:
        done = subprocess.run([sys.executable, "-m", "pytest_loopguard.cli", *argv], cwd=ROOT, capture_output=True,
                              text=True, timeout=600)
        return done.returncode, done.stdout, done.stderr

    assert loopguard("run", "traces", "--backend", "dask", "-j", "2") == loopguard("run", "traces")


@pytest.mark.slow
def test_a_killed_worker_on_the_commands_own_cluster_is_one_line_on_stderr(tmp_path: Path) -> None:
    # the scheduler lives in the command's process here: what it logs when it gives the batch up stays unsaid
    code = ("import sys, jobs_helpers\nfrom pytest_loopguard.cli import _jobs, _main\n"
            "_jobs.WORK = jobs_helpers.killing_work\n_jobs.MIN_BATCH = 2\n"
            "sys.exit(_main.main(['run', '.', '--backend', 'dask', '-j', '2']))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(jobs_helpers.__file__).parent), *sys.path])}
    done = subprocess.run([sys.executable, "-c", code], cwd=write_folder(tmp_path), capture_output=True, text=True,
                          timeout=600, env=env)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == ("loopguard: error: a Dask worker died on batch 1 of 3 (2 files, kill_me.yaml .. t0.yaml), "
                           "on every try; the run is incomplete\n")
