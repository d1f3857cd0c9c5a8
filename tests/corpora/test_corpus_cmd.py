"""`loopguard corpus init|info|verify` on the command line, and corpora where `run` and `eval` take paths."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest
from corpus_files import REAL, REPO, tiny_corpus, writable_copy

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.corpora import MANIFEST_NAME, load_manifest


def test_init_writes_the_manifest_and_prints_its_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    assert cli.main(["corpus", "init", str(folder), "--licence", "MIT", "--name", "tiny", "--version", "1.0.0",
                     "--obtained", "made by the tests", "--url", "https://example.com", "--redacted",
                     "--policy", "own", "--policy", "roo"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"wrote {folder / MANIFEST_NAME}: 4 files"
    assert out[1:9] == [
        "corpus       tiny 1.0.0", "licence      MIT", f"folder       {folder}",
        "description  The agent runs of tiny.", "redacted     yes", "labels       none",
        "files        4 (1 log, 1 other, 2 trace)", "source       .: made by the tests <https://example.com>"]
    assert len(out) == 11
    assert out[9].startswith("published    own: 3 runs, 0 mismatched, 2 interventions, verdicts ")
    assert out[10].startswith("published    roo: 3 runs, 2 mismatched, 0 interventions, verdicts ")


@pytest.mark.parametrize(("argv", "says"), [
    ([], "name the corpus's licence with --licence"),
    (["--licence", "MIT", "--labels", "nope.yaml"], "--labels: no such file"),
    (["--licence", "MIT", "--policy", "no-such-preset"], "no-such-preset"),
])
def test_init_refuses_what_it_cannot_describe(tmp_path: Path, argv: list[str], says: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    assert cli.main(["corpus", "init", str(folder), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
    assert not (folder / MANIFEST_NAME).exists()


def test_a_trace_that_does_not_load_is_not_described(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    (folder / "traces" / "broken.yaml").write_text("loopguard: 1\nname: b\nsteps: [{tool: 3}]\n", encoding="utf-8")
    assert cli.main(["corpus", "init", str(folder), "--licence", "MIT"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"loopguard: error: {folder / 'traces' / 'broken.yaml'}: does not load: ") and "tool" in err


def test_update_keeps_the_description_and_refreshes_files_and_results(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    assert cli.main(["corpus", "init", str(folder), "--licence", "Apache-2.0", "--description", "Kept."]) == 0
    assert cli.main(["corpus", "init", str(folder), "--licence", "MIT"]) == 2
    assert "a manifest is already here; --update refreshes" in capsys.readouterr().err
    shutil.copy(folder / "traces" / "repeat-a.yaml", folder / "traces" / "repeat-c.yaml")
    (folder / "traces" / "repeat-c.yaml").write_text(
        (folder / "traces" / "repeat-a.yaml").read_text(encoding="utf-8").replace("repeat-a", "repeat-c"),
        encoding="utf-8")
    assert cli.main(["corpus", "verify", str(folder)]) == 1
    assert "repeat-c.yaml: a file the manifest does not list" in capsys.readouterr().err
    assert cli.main(["corpus", "init", str(folder), "--update", "--version", "0.2.0"]) == 0
    manifest = load_manifest(folder / MANIFEST_NAME)
    assert (manifest.licence, manifest.description, manifest.version) == ("Apache-2.0", "Kept.", "0.2.0")
    assert manifest.published_with[0].runs == 4
    assert cli.main(["corpus", "verify", str(folder)]) == 0


def test_info_json_is_the_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    assert cli.main(["corpus", "init", str(folder), "--licence", "MIT"]) == 0
    capsys.readouterr()
    assert cli.main(["corpus", "info", str(folder / MANIFEST_NAME), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["folder"] == str(folder) and shown["name"] == "tiny" and len(shown["files"]) == 4


def test_a_folder_stays_a_folder_for_run_even_with_a_manifest(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    assert cli.main(["corpus", "init", str(folder), "--licence", "MIT"]) == 0
    capsys.readouterr()
    assert cli.main(["run", str(folder)]) == 0  # the traces there (the manifest passed over, the log skipped)
    out, err = capsys.readouterr()
    assert "loopguard: 2 traces replayed, 0 mismatched" in out and MANIFEST_NAME not in err
    assert cli.main(["run", str(folder / MANIFEST_NAME)]) == 0  # the corpus: its traces, then its log's run
    assert "loopguard: 3 traces replayed, 0 mismatched" in capsys.readouterr().out
    assert cli.main(["run", str(folder / MANIFEST_NAME), "--policy", "roo"]) == 1  # your policy, their corpus
    assert "loopguard: 3 traces replayed, 2 mismatched" in capsys.readouterr().out


def test_conform_runs_a_corpus_through_an_external_guard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    assert cli.main(["corpus", "init", str(folder), "--licence", "MIT"]) == 0
    capsys.readouterr()
    guard = f"{sys.executable} {REPO / 'examples' / 'guards' / 'python_guard.py'}"
    assert cli.main(["conform", guard, str(folder / MANIFEST_NAME)]) == 0
    assert "conform: 2 trace(s) against its expectations: 2 agree, 0 differ" in capsys.readouterr().out


def test_eval_of_a_corpus_scores_with_its_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = writable_copy(REAL, tmp_path / "real")
    assert cli.main(["corpus", "init", str(folder), "--licence", "MIT", "--redacted"]) == 0  # labels.yaml found
    capsys.readouterr()
    assert cli.main(["eval", str(folder / MANIFEST_NAME), "--json"]) == 0
    by_corpus = json.loads(capsys.readouterr().out)
    assert cli.main(["eval", str(folder), "--labels", str(folder / "labels.yaml"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_corpus and by_corpus["labelled"] == 17


def test_labels_that_do_not_fit_their_runs_are_refused_by_init_and_verify(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = writable_copy(REAL, tmp_path / "real")
    labels = folder / "labels.yaml"
    good = labels.read_text(encoding="utf-8")
    assert "    calls: 11                 # trajectory has 12 entries" in good
    labels.write_text(good.replace("    calls: 11 ", "    calls: 12 ", 1), encoding="utf-8")
    assert cli.main(["corpus", "init", str(folder), "--licence", "MIT"]) == 2
    says = "field 'calls': the labels say 12 calls, the run has 11"
    assert says in capsys.readouterr().err and not (folder / MANIFEST_NAME).exists()
    labels.write_text(good, encoding="utf-8")
    assert cli.main(["corpus", "init", str(folder), "--licence", "MIT"]) == 0
    # labels changed after publishing, their checksum with them: the checksum holds, the labels do not fit
    labels.write_text(good.replace("    calls: 11 ", "    calls: 12 ", 1), encoding="utf-8")
    manifest = folder / MANIFEST_NAME
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(
        hashlib.sha256(good.encode()).hexdigest(), hashlib.sha256(labels.read_bytes()).hexdigest()), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["corpus", "verify", str(folder)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"loopguard: {labels}:") and says in err[0]


def test_a_name_that_is_nothing_is_bad_input_and_the_rest_still_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_corpus(tmp_path / "tiny")
    assert cli.main(["run", "no-such-corpus", str(folder / "traces"), "missing/x.yaml"]) == 2
    out, err = capsys.readouterr()
    assert "loopguard: 2 traces replayed, 0 mismatched" in out
    assert ("loopguard: error: no-such-corpus: no such file or folder, and no installed corpus of that name (entry "
            "points loopguard.corpora: none)\n") in err
    assert "missing/x.yaml: no such file or folder\n" in err  # a path, not a name: missing as before
