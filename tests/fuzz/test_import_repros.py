"""Every defect in ../shared/fuzz-repros/import/ (one folder each, listed in its README's table) stays fixed:
each command of the folder's recipe, run on its files in place, ends accepted or as our one-line error with
exit 2, under 1 GiB and 10 s of CPU, writes nothing outside its output folder, and leaves only traces that
`loopguard validate` accepts. What the defect was about (a secret in the output, a file outside OUT, a
run overwritten) is checked on top, per folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from import_repros import REPO, Ended, files_under, judge, loopguard, traces_valid

REPROS = REPO.parent / "shared" / "fuzz-repros" / "import"
TABLE = REPROS / "README.md"
FOLDERS = [f for f in re.findall(r"^\| ([a-z0-9-]+) \|", TABLE.read_text(encoding="utf-8"), re.M) if f != "folder"
           ] if TABLE.is_file() else []
SECRETS = re.compile(r"sk-proj-|sk-ant-|ghp_|AKIA[0-9A-Z]{8}|Pw9sEcReT|xox[bp]-")


def ok(ended: Ended) -> list[str]:
    problem = judge(ended)
    return [] if problem is None else [f"{problem}: {ended}"]


def imported(cwd: Path, *src: str | Path, out: Path | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    """`import SRC -o OUT` judged, plus: nothing new outside OUT in `cwd`, every trace in OUT valid."""
    out = out or cwd / "out"
    before = files_under(cwd)
    problems = ok(loopguard("import", *src, "-o", out, *extra, cwd=cwd))
    outside = {f for f in files_under(cwd) - before if not (cwd / f).is_relative_to(out)}
    if outside:
        problems.append(f"written outside OUT: {sorted(outside)[:5]}")
    if (invalid := traces_valid(out, cwd)) is not None:
        problems.append(invalid)
    return problems


def secrets_in(ended: Ended, out: Path) -> list[str]:
    shown = [ended.stdout, ended.stderr, *(p.name for p in out.rglob("*"))]
    shown += [p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*") if p.is_file()]
    return [f"secret shown: {m.group()}" for text in shown for m in SECRETS.finditer(text)]


def _mapping_keys(here: Path, tmp: Path) -> list[str]:
    out = tmp / "out"
    ended = loopguard("import", here / "keys.traj.json", "-o", out, cwd=tmp)
    problems = ok(ended) + secrets_in(ended, out)
    if "0 distinct secrets redacted" in ended.stdout:
        problems.append("the summary counts no redacted secret")
    # the script imports from modules since renamed (`pytest_loopguard.model`, `.session`): the same names
    # come from the package itself now
    code = (here / "session_keys.py").read_text(encoding="utf-8")
    code = re.sub(r"from pytest_loopguard\.(model|session) import", "from pytest_loopguard import", code)
    script = subprocess.run([sys.executable, "-c", code], cwd=tmp, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60, check=False)
    if "secret as KEY still in file: False" not in script.stdout:
        problems.append(f"a live Session writes the key: {script.stdout[-300:]} {script.stderr[-300:]}")
    return problems


def _memory(here: Path, tmp: Path) -> list[str]:
    subprocess.run([sys.executable, here / "make.py", "9"], cwd=tmp, check=True, timeout=60)
    log = tmp / "big-output.traj.json"
    return imported(tmp, log) + ok(loopguard("eval", log, cwd=tmp))


def _each_file(*names: str, commands: tuple[str, ...] = ("import", "eval")) -> Callable[[Path, Path], list[str]]:
    def check(here: Path, tmp: Path) -> list[str]:
        problems: list[str] = []
        for name in names:
            if "import" in commands:
                problems += imported(tmp, here / name, out=tmp / f"out-{name}")
                problems += imported(tmp, here / name, out=tmp / f"out-jsonl-{name}", extra=("--format", "jsonl"))
            if "eval" in commands:
                problems += ok(loopguard("eval", here / name, cwd=tmp))
        return problems
    return check


def _surrogate_replay(here: Path, tmp: Path) -> list[str]:
    trace = here / "trace_surrogate.json"
    return (_each_file("surrogate_result.json")(here, tmp) + ok(loopguard("run", trace, cwd=tmp))
            + ok(loopguard("validate", trace, cwd=tmp)))


def _fails_validate(here: Path, tmp: Path) -> list[str]:
    problems = imported(tmp, here / "xbigint.json")
    if not list((tmp / "out").iterdir()):
        problems.append("nothing imported: the big x- integer should be kept (as text), not refuse the run")
    return problems


def _relative_origin(here: Path, tmp: Path) -> list[str]:
    out = tmp / "traces"
    problems = []
    for model in ("gemini", "deepseek"):
        problems += ok(loopguard("import", "astropy__astropy-12907.traj.json", "-o", out, cwd=here / model))
    written = sorted(p.name for p in out.iterdir())
    if len(written) != 2:
        problems.append(f"two logs, {len(written)} traces: {written}")
    elif not any("command: ls" in (out / w).read_text(encoding="utf-8") for w in written):
        problems.append("gemini's run is gone")
    return problems + [p for p in [traces_valid(out, tmp)] if p]


def _dangling(here: Path, tmp: Path) -> list[str]:
    out, victim = tmp / "out", tmp / "victim"
    out.mkdir()
    victim.mkdir()
    (out / "demo.yaml").symlink_to(victim / "written-outside.yaml")
    problems = ok(loopguard("import", here / "demo.traj.json", "-o", out, cwd=tmp))
    if any(victim.iterdir()):
        problems.append("written through the dangling symlink")
    if not (out / "demo.yaml").is_symlink():
        problems.append("the user's symlink was replaced")
    return problems


def _symlink_loop(here: Path, tmp: Path) -> list[str]:
    src = tmp / "src"
    src.mkdir()
    (src / "x.json").write_text("{}")
    (src / "a").symlink_to(".")
    (src / "b").symlink_to(".")
    return imported(tmp, src) + ok(loopguard("eval", src, cwd=tmp))


def _fifo(here: Path, tmp: Path) -> list[str]:
    fifo = tmp / "run.json"
    os.mkfifo(fifo)
    return ok(loopguard("eval", fifo, cwd=tmp)) + imported(tmp, fifo)


def _multiline(here: Path, tmp: Path) -> list[str]:
    folder = tmp / "logs"
    folder.mkdir()
    (folder / "line\nbreak.json").write_text('{"trajectory')
    problems = imported(tmp, here / "badchecksum.tar", out=tmp / "o1") + imported(tmp, folder, out=tmp / "o2")
    problems += ok(loopguard("eval", folder / "line\nbreak.json", cwd=tmp))
    problems += ok(loopguard("eval", here / "badchecksum.tar", cwd=tmp))
    return problems


def _reimport_duplicates(here: Path, tmp: Path) -> list[str]:
    src = tmp / "src"
    shutil.copytree(here / "src", src)  # the folder's name holds no secret; the log's names do
    out = tmp / "out"
    problems = ok(loopguard("import", src, "-o", out, cwd=tmp))
    first = sorted(p.name for p in out.iterdir())
    problems += ok(loopguard("import", src, "-o", out, cwd=tmp))
    for log in sorted(src.iterdir()):
        problems += ok(loopguard("import", log, "-o", out, cwd=tmp))
    again = sorted(p.name for p in out.iterdir())
    if again != first:
        problems.append(f"re-importing changed the traces: {first} -> {again}")
    return problems


def _gap(here: Path, tmp: Path) -> list[str]:
    out = tmp / "out"
    ended = loopguard("import", here / "gap.traj.json", "-o", out, cwd=tmp)
    return ok(ended) + secrets_in(ended, out)


CHECKS: dict[str, Callable[[Path, Path], list[str]]] = {
    "redaction-misses-mapping-keys": _mapping_keys,
    "memory-json-depth-scan-long-string": _memory,
    "surrogate-import-exit3": _each_file("surrogate.json"),
    "surrogate-replay-exit3": _surrogate_replay,
    "int-over-4300-digits": _each_file("bigint.json"),
    "otel-infinity-overflow": _each_file("otel_inf.json"),
    "corrupt-tarball-eval-exit3": _each_file("truncated.tar.gz", "badchecksum.tar"),
    "corrupt-tarball-import-lzma-exit3": _each_file("logs.tar.xz"),
    "eval-deep-json-recursionerror": _each_file("deep-first-line.jsonl", "deep-resolved.tar"),
    "imported-trace-fails-validate": _fails_validate,
    "reimport-relative-origin-overwrites-other-source": _relative_origin,
    "out-dangling-symlink-writes-outside": _dangling,
    "symlink-loop-walk-hang": _symlink_loop,
    "eval-fifo-hang": _fifo,
    "multiline-error-lines": _multiline,
    "error-names-trace-not-file": _each_file("hugetokens.json"),
    "reimport-duplicates-redacted-names": _reimport_duplicates,
    "gap-url-password-and-underscore-glued-key": _gap,
}


def test_every_folder_of_the_table_has_a_check() -> None:
    assert len(FOLDERS) == 18 and set(FOLDERS) == set(CHECKS)
    assert all((REPROS / f).is_dir() for f in FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS)
def test_repro_ends_accepted_or_refused_in_one_line(folder: str, tmp_path: Path) -> None:
    before = files_under(REPROS)
    problems = CHECKS[folder](REPROS / folder, tmp_path)
    assert files_under(REPROS) == before
    assert problems == []


@pytest.mark.parametrize("folder", FOLDERS)
def test_repro_through_scan(folder: str, tmp_path: Path) -> None:
    # the folder named to `loopguard scan` (each log in it detected), saving and reporting: accepted or our
    # one-line errors, no importer failing (an internal error, exit 3), nothing written
    # outside its folders, the saved traces valid, no planted secret shown
    before = files_under(REPROS)
    saved, report = tmp_path / "saved", tmp_path / "scan.json"
    ended = loopguard("scan", REPROS / folder, "--save", saved, "--report", report, cwd=tmp_path)
    assert ok(ended) == []
    assert "internal error" not in ended.stderr
    assert files_under(REPROS) == before and report.is_file()
    assert traces_valid(saved, tmp_path) is None
    assert secrets_in(ended, saved) == [] and not SECRETS.search(report.read_text(encoding="utf-8"))


# ---- our own repros (tests/fuzz/import-repros/): importer bugs found after the fuzz round ------------------
OWN = Path(__file__).resolve().parent / "import-repros"
OWN_FOLDERS = re.findall(r"^\| ([a-z0-9-]+) \|", (OWN / "README.md").read_text(encoding="utf-8"), re.M)[1:]


def _own_inputs(folder: str) -> list[Path]:
    """The folder's logs: its files, and its sub-folders as one source each (a Cline task folder)."""
    return sorted((OWN / folder).iterdir())


def test_every_own_folder_is_in_the_table() -> None:
    assert OWN_FOLDERS and sorted(OWN_FOLDERS) == sorted(p.name for p in OWN.iterdir() if p.is_dir())


@pytest.mark.parametrize("folder", OWN_FOLDERS)
def test_own_repro_is_imported_and_scanned_without_an_internal_error(folder: str, tmp_path: Path) -> None:
    # a well-formed log with one odd value: imported (exit 0, not refused), its trace valid, and eval and
    # scan (--save, --report) end in our terms, never exit 3
    before = files_under(OWN)
    for n, log in enumerate(_own_inputs(folder)):
        out = tmp_path / f"out{n}"
        ended = loopguard("import", log, "-o", out, cwd=tmp_path)
        assert ended.status == 0 and len(list(out.iterdir())) == 1, ended
        assert traces_valid(out, tmp_path) is None
        assert ok(loopguard("eval", log, cwd=tmp_path)) == []
        saved, report = tmp_path / f"saved{n}", tmp_path / f"scan{n}.json"
        scanned = loopguard("scan", log, "--save", saved, "--report", report, cwd=tmp_path)
        assert ok(scanned) == [] and scanned.status in (0, 1) and "internal error" not in scanned.stderr
        assert traces_valid(saved, tmp_path) is None
    assert files_under(OWN) == before
