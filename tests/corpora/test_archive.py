"""Corpus archives: `pack` writes the same bytes every time and refuses secrets and unlisted files; unpacking is
safe (no path out of the folder, no link, bounded sizes) and every refusal is one line naming the member."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest
from corpus_files import tiny_corpus
from planted_secrets import PLANTED

import pytest_loopguard.corpora._archive as archive_module
from pytest_loopguard.cli import _main as cli
from pytest_loopguard.corpora import MANIFEST_NAME, CorpusError, init_corpus, pack_corpus, unpack_corpus


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tiny_corpus(tmp_path / "tiny")
    init_corpus(folder, name="tiny", version="2.0", licence="MIT", obtained="made by the tests")
    return folder


def test_packing_twice_gives_the_same_bytes_sorted_with_fixed_owner_and_time(corpus: Path, tmp_path: Path) -> None:
    first = pack_corpus(corpus, tmp_path / "a.tar.gz")
    (corpus / "traces" / "repeat-a.yaml").touch()  # a newer mtime changes nothing packed
    os.utime(corpus / "README.md", (1, 1))
    second = pack_corpus(corpus, tmp_path / "b.tar.gz")
    assert hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()
    with tarfile.open(first) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == ["tiny-2.0/" + MANIFEST_NAME, "tiny-2.0/README.md", "tiny-2.0/logs/swe-agent__test-repo-i1.traj",
                     "tiny-2.0/traces/repeat-a.yaml", "tiny-2.0/traces/repeat-b.yaml"]
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime, m.mode, m.type) for m in members} == {
        (0, 0, "", "", 946_684_800, 0o644, tarfile.REGTYPE)}


def test_pack_names_the_archive_after_the_corpus_in_a_folder(corpus: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dist"
    out.mkdir()
    assert cli.main(["corpus", "pack", str(corpus), "-o", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out / 'tiny-2.0.tar.gz'}\n"


def test_pack_refuses_a_file_the_manifest_does_not_list(corpus: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    (corpus / "notes.txt").write_text("left here\n", encoding="utf-8")
    assert cli.main(["corpus", "pack", str(corpus), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{corpus / 'notes.txt'}: a file the manifest does not list" in err
    assert not list(tmp_path.glob("*.tar.gz"))


@pytest.mark.parametrize("redacted", [False, True])
def test_pack_refuses_an_unredacted_secret_naming_file_line_and_rule_never_the_secret(
        tmp_path: Path, redacted: bool) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    trace = folder / "traces" / "repeat-a.yaml"
    trace.write_text(trace.read_text(encoding="utf-8").replace(
        'command: "ls"}', f'command: "curl -H \'x-api-key: {PLANTED["anthropic-key"]}\'"}}', 1), encoding="utf-8")
    init_corpus(folder, licence="MIT", redacted=redacted)
    with pytest.raises(CorpusError) as caught:
        pack_corpus(folder, tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{folder}: not packed: {trace}:6: column 42: an unredacted secret (anthropic-key); ")
    assert "\n" not in message
    assert PLANTED["anthropic-key"] not in message and "sk-ant" not in message


def test_a_variable_reference_a_placeholder_or_an_allowed_value_is_no_secret(tmp_path: Path) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    (folder / "README.md").write_text(
        "git remote set-url origin https://oauth2:${GITLAB_TOKEN}@gitlab.com/x.git\n"
        "curl -H 'Authorization: Bearer <redacted:bearer-token:1>' https://api\n"
        "export KEY=sk-test0000000000000000000000000000\n", encoding="utf-8")
    init_corpus(folder, licence="MIT")
    with pytest.raises(CorpusError, match="openai-key"):  # the last line is a key until the manifest allows it
        pack_corpus(folder, tmp_path)
    manifest = folder / MANIFEST_NAME
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(
        "redacted: false\n", "redacted: false\nsecrets:\n  allow: ['sk-test0+']\n"), encoding="utf-8")
    assert pack_corpus(folder, tmp_path).is_file()


def _tar(path: Path, members: list[tuple[str, bytes | str]]) -> Path:
    """A .tar.gz of (name, bytes) regular members, or (name, "->target") symlinks."""
    with tarfile.open(path, "w:gz") as tar:
        for name, body in members:
            info = tarfile.TarInfo(name)
            if isinstance(body, str):
                info.type, info.linkname = tarfile.SYMTYPE, body.removeprefix("->")
                tar.addfile(info)
            else:
                info.size = len(body)
                tar.addfile(info, io.BytesIO(body))
    return path


def _manifest_of(corpus: Path) -> bytes:
    return (corpus / MANIFEST_NAME).read_bytes()


@pytest.mark.parametrize(("member", "says"), [
    ("../evil.txt", "no '..'"),
    ("/etc/evil.txt", "absolute"),
    ("tiny-2.0/../../evil.txt", "no '..'"),
    ("other-1.0/evil.txt", "a second top folder 'other-1.0'"),
    ("evil.txt", "not inside the archive's one folder"),
])
def test_unpacking_refuses_a_member_outside_the_folder(corpus: Path, tmp_path: Path, member: str, says: str) -> None:
    bad = _tar(tmp_path / "bad.tar.gz", [("tiny-2.0/" + MANIFEST_NAME, _manifest_of(corpus)), (member, b"x")])
    with pytest.raises(CorpusError) as caught:
        unpack_corpus(bad, tmp_path / "dest")
    message = str(caught.value)
    assert message.startswith(f"{bad}:{member}: ") and says in message and "\n" not in message
    assert {p.name for p in tmp_path.iterdir()} == {"tiny", "bad.tar.gz"}  # nothing written, no staging folder left


def test_a_symlink_member_is_never_created_and_verify_reports_the_file_missing(
        corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    members: list[tuple[str, bytes | str]] = [("tiny-2.0/" + MANIFEST_NAME, _manifest_of(corpus))]
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != MANIFEST_NAME):
        rel = path.relative_to(corpus).as_posix()
        members.append((f"tiny-2.0/{rel}", "->/etc/passwd" if rel == "README.md" else path.read_bytes()))
    bad = _tar(tmp_path / "linked.tar.gz", members)
    unpacked = unpack_corpus(bad, tmp_path / "dest").folder
    assert not (unpacked / "README.md").exists() and not (unpacked / "README.md").is_symlink()
    assert cli.main(["corpus", "verify", str(bad)]) == 1
    assert capsys.readouterr().err == f"loopguard: {bad}:tiny-2.0/README.md: missing: the manifest lists it\n"


def test_unpacking_stops_at_the_size_and_count_caps(corpus: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    archive = pack_corpus(corpus, tmp_path)
    monkeypatch.setattr(archive_module, "MAX_CORPUS_BYTES", 5_000)
    with pytest.raises(CorpusError, match=r"tiny-2\.0/logs/swe-agent__test-repo-i1\.traj: more than 5000 bytes"):
        unpack_corpus(archive, tmp_path / "dest")
    monkeypatch.setattr(archive_module, "MAX_CORPUS_FILES", 2)
    monkeypatch.setattr(archive_module, "MAX_CORPUS_BYTES", 1 << 30)
    with pytest.raises(CorpusError, match=r"tiny-2\.0/logs/swe-agent__test-repo-i1\.traj: more than 2 members"):
        unpack_corpus(archive, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


@pytest.mark.parametrize(("content", "says"), [
    (b"not an archive at all", "unreadable archive"),
    (None, "no loopguard-corpus.yaml in the archive's folder; not a corpus archive"),
])
def test_what_is_no_corpus_archive_is_one_line(tmp_path: Path, content: bytes | None, says: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.tar.gz"
    if content is None:
        _tar(path, [("logs/run.json", b"{}")])
    else:
        path.write_bytes(content)
    assert cli.main(["corpus", "verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and str(path) in err


def test_unpack_into_an_existing_folder_is_refused(corpus: Path, tmp_path: Path) -> None:
    archive = pack_corpus(corpus, tmp_path)
    (tmp_path / "dest").mkdir()
    with pytest.raises(CorpusError, match="already exists; unpack into a new folder"):
        unpack_corpus(archive, tmp_path / "dest")
