"""The shared real corpus (../shared/corpus/real, with its labels) as a corpus package: described, packed, moved
and verified elsewhere, it runs (`loopguard run`) and scores (`loopguard eval`) exactly as before it was packed;
a tampered file fails `verify` with a line naming the file."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from corpus_files import REAL, writable_copy

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.corpora import MANIFEST_NAME, init_corpus, pack_corpus, unpack_corpus

RUN_FILE = "swe-agent/pydicom__pydicom-1458.traj"


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The real corpus described and packed in a folder of its own, the archive moved away and the folder
    deleted; with what `run --json` and `eval --json` printed from the folder before it went."""
    work = tmp_path_factory.mktemp("publish")
    folder = writable_copy(REAL, work / "real")
    init_corpus(folder, name="real-agent-runs", version="1.0.0", licence="see SOURCES.md",
                description="Real agent runs with hand-made loop labels.", labels=str(folder / "labels.yaml"),
                policies=["own", "roo"], obtained="byte-for-byte copies of public repositories (SOURCES.md)",
                redacted=True)
    before = {name: command_json(name, str(folder / MANIFEST_NAME), folder) for name in ("run", "eval")}
    archive = pack_corpus(folder, work)
    assert archive.name == "real-agent-runs-1.0.0.tar.gz"
    moved = tmp_path_factory.mktemp("elsewhere") / archive.name
    shutil.move(archive, moved)
    shutil.rmtree(folder)  # nothing of the original is left to read
    return moved, before


def command_json(command: str, ref: str, folder: Path | str, *extra: str) -> str:
    """`loopguard COMMAND REF --json`'s output with the corpus's folder written as `CORPUS`."""
    from contextlib import redirect_stdout
    from io import StringIO

    buffer = StringIO()
    with redirect_stdout(buffer):
        assert cli.main([command, ref, "--json", *extra]) == 0
    return buffer.getvalue().replace(str(folder), "CORPUS")


def test_packed_moved_and_verified_elsewhere_it_runs_and_scores_as_before(
        packed: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive, before = packed
    assert cli.main(["corpus", "verify", str(archive)]) == 0
    assert "real-agent-runs 1.0.0: ok (16 files, 17 runs, checksums match; replayed under own, roo: as published)" \
        in capsys.readouterr().out
    installed = unpack_corpus(archive, tmp_path / "installed").folder
    for name in ("run", "eval"):
        assert command_json(name, str(installed / MANIFEST_NAME), installed) == before[name]
    run = json.loads(before["run"])
    assert len(run) == 17 and {e["passed"] for e in run} == {True}
    assert sum(e["counts"].get("warn", 0) for e in run) > 0
    scored = json.loads(before["eval"])
    assert scored["runs"] == 17 and scored["labelled"] == 17


def test_the_archive_runs_as_the_unpacked_folder_does(packed: tuple[Path, dict[str, str]]) -> None:
    archive, before = packed
    got = command_json("run", str(archive), "\0")  # its temporary folder differs: compare the rest
    assert [(e["trace"], e["counts"], e["outcome"]) for e in json.loads(got)] == [
        (e["trace"], e["counts"], e["outcome"]) for e in json.loads(before["run"])]


def test_a_tampered_file_fails_verify_with_a_line_naming_it(
        packed: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive, _ = packed
    folder = unpack_corpus(archive, tmp_path / "installed").folder
    target = folder / RUN_FILE
    target.write_bytes(target.read_bytes().replace(b"edit 287:295", b"edit 287:296", 1))
    assert cli.main(["corpus", "verify", str(folder)]) == 1
    out, err = capsys.readouterr()
    assert err.splitlines() == [f"loopguard: {target}: field 'sha256': checksum mismatch: sha256 "
                                f"{hashlib.sha256(target.read_bytes()).hexdigest()[:12]}..., the manifest says "
                                f"f081b131803e... (the file was changed)"]
    assert out == "real-agent-runs 1.0.0: 1 problem(s)\n"


def test_a_tampered_archive_fails_verify_naming_the_member(
        packed: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive, _ = packed
    forged = tmp_path / "forged.tar.gz"
    with tarfile.open(archive) as source, tarfile.open(forged, "w:gz") as out:
        for info in source:
            data = source.extractfile(info)
            assert data is not None
            body = data.read()
            if info.name.endswith(RUN_FILE):
                body = body.replace(b"E999 SyntaxError", b"E999 SyntaxErrer", 1)
            info.size = len(body)
            out.addfile(info, __import__("io").BytesIO(body))
    assert cli.main(["corpus", "verify", str(forged)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"loopguard: {forged}:real-agent-runs-1.0.0/{RUN_FILE}: field "
                                               "'sha256': checksum mismatch"), err


def test_a_run_that_no_longer_gives_the_published_verdicts_fails_verify(
        packed: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive, _ = packed
    folder = unpack_corpus(archive, tmp_path / "installed").folder
    manifest = folder / MANIFEST_NAME
    text = manifest.read_text(encoding="utf-8")
    published = text.split("policy: roo\n", 1)[1].split("verdicts: ", 1)[1][:64]
    manifest.write_text(text.replace(published, "ab" * 32), encoding="utf-8")
    assert cli.main(["corpus", "verify", str(folder)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"loopguard: {manifest}: field 'published_with': replayed under 'roo', the runs give other results than "
        "published: verdicts differ"]
    assert cli.main(["corpus", "verify", "--no-replay", str(folder)]) == 0
