"""Installed corpora: a package whose distribution declares a `loopguard.corpora` entry point is found by name
(here a wheel-less install: a package and its dist-info folder on sys.path), and runs by name."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus_files import tiny_corpus

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.corpora import (
    ENTRY_POINT_GROUP,
    CorpusError,
    init_corpus,
    installed_corpora,
    resolve_corpus,
    verify_corpus,
)


def install(site: Path, package: str, entry_points: str, version: str = "1.0") -> Path:
    """A package (`site/PACKAGE/`, a corpus inside) and the dist-info folder pip would write for it, without a
    wheel: what `importlib.metadata` reads to find entry points."""
    folder = tiny_corpus(site / package)
    (folder / "__init__.py").write_text('"""A corpus package."""\n', encoding="utf-8")
    info = site / f"{package}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry_points}\n", encoding="utf-8")
    return folder


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path; the modules imported from it are forgotten afterwards."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    yield site
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(site)):
            del sys.modules[name]


def test_an_installed_corpus_is_found_by_name_and_runs_by_name(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = install(site, "acme_corpus", "acme-runs = acme_corpus")
    init_corpus(folder, name="acme-runs", version="1.2.0", licence="MIT")
    import acme_corpus  # noqa: F401  # imported, as a package is: its __pycache__ is not part of the corpus

    assert list(installed_corpora()) == ["acme-runs"]
    corpus = resolve_corpus("acme-runs")
    assert corpus.folder == folder and corpus.manifest.version == "1.2.0"
    assert [p.name for p in corpus.trace_paths] == ["repeat-a.yaml", "repeat-b.yaml"]
    assert [p.name for p in corpus.log_paths] == ["swe-agent__test-repo-i1.traj"] and corpus.labels_path is None
    assert resolve_corpus("acme-runs==1.2.0").folder == folder
    assert verify_corpus(folder)[1] == []
    assert cli.main(["run", "acme-runs"]) == 0
    out = capsys.readouterr().out
    assert "loopguard: 3 traces replayed, 0 mismatched" in out  # two traces and the log's one run
    assert cli.main(["corpus", "list"]) == 0
    assert capsys.readouterr().out == "acme-runs  (acme_corpus)\n"
    assert cli.main(["corpus", "info", "acme-runs"]) == 0
    assert "corpus       acme-runs 1.2.0\n" in capsys.readouterr().out


def test_an_entry_point_may_name_a_folder_attribute(site: Path) -> None:
    package = site / "holder"
    package.mkdir()
    (package / "__init__.py").write_text("from pathlib import Path\nFOLDER = Path(__file__).parent / 'data'\n",
                                         encoding="utf-8")
    info = site / "holder-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: holder\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nheld = holder:FOLDER\n", encoding="utf-8")
    init_corpus(tiny_corpus(package / "data"), name="held", licence="MIT")
    assert resolve_corpus("held").folder == package / "data"


@pytest.mark.parametrize(("entry", "ref", "says"), [
    ("acme-runs = acme_corpus", "acme-runs==2.0", "version 0.1.0 is installed; 2.0 was asked for"),
    ("other = acme_corpus", "other", "the entry point 'other' names a corpus whose manifest says 'acme-runs'"),
    ("gone = no_such_package", "gone", "entry point gone = no_such_package (loopguard.corpora): no such package"),
    ("acme-runs = acme_corpus", "acme-run", "no installed corpus of that name (entry points loopguard.corpora: "
                                            "acme-runs)"),
])
def test_what_does_not_resolve_is_one_line(site: Path, entry: str, ref: str, says: str) -> None:
    init_corpus(install(site, "acme_corpus", entry), name="acme-runs", licence="MIT")
    with pytest.raises(CorpusError) as caught:
        resolve_corpus(ref)
    assert says in str(caught.value) and "\n" not in str(caught.value)
