"""inifile.trace_paths: `loopguard_paths` found and read as pytest itself finds and reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopguard.cli._inifile import find_ini, trace_paths
from pytest_loopguard.errors import LoopguardError

pytest_plugins = ["pytester"]

# (file, text): each a configuration pytest accepts, with the traces somewhere other than `traces`
LAYOUTS = {
    "pytest.ini": ("pytest.ini", "[pytest]\nloopguard_paths =\n    corpus/a\n    corpus/b\n"),
    "pyproject": ("pyproject.toml", '[tool.pytest.ini_options]\nloopguard_paths = ["corpus/a", "corpus/b"]\n'),
    "tox.ini": ("tox.ini", "[tox]\nenvlist = py311\n[pytest]\nloopguard_paths = corpus/a\n"),
    "setup.cfg": ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\nloopguard_paths = corpus/b\n"),
    "no option": ("pytest.ini", "[pytest]\naddopts = -q\n"),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_same_folders_as_pytest_from_a_subfolder(layout: str, pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    name, text = LAYOUTS[layout]
    (pytester.path / name).write_text(text, encoding="utf-8")
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    config = pytester.parseconfig(sub)  # pytest's own answer, the oracle
    expected = [(config.rootpath / p).resolve() for p in config.getini("loopguard_paths")]
    assert [Path(p).resolve() for p in trace_paths(sub)] == expected
    assert len(expected) >= 1 and config.inipath == pytester.path / name


def test_pyproject_without_a_pytest_table_and_tox_without_a_section_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n", encoding="utf-8")
    (tmp_path / "tox.ini").write_text("[tox]\n", encoding="utf-8")
    (tmp_path / "setup.cfg").write_text("[tool:pytest]\nloopguard_paths = here\n", encoding="utf-8")
    found = find_ini(tmp_path)
    assert found is not None and found[0].name == "setup.cfg"


def test_the_nearest_file_wins_and_an_empty_pytest_ini_counts(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nloopguard_paths = outer\n", encoding="utf-8")
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "pytest.ini").write_text("", encoding="utf-8")
    assert trace_paths(tmp_path / "inner") == [str(tmp_path / "inner" / "traces")]
    assert trace_paths(tmp_path) == [str(tmp_path / "outer")]


def test_pytest_9_native_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pytest]\nloopguard_paths = ["x"]\n', encoding="utf-8")
    assert trace_paths(tmp_path) == [str(tmp_path / "x")]


def test_a_broken_config_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options\n", encoding="utf-8")
    with pytest.raises(LoopguardError, match=r"pyproject.toml: "):
        trace_paths(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nloopguard_paths = 3\n', encoding="utf-8")
    with pytest.raises(LoopguardError, match=r"loopguard_paths: expected a list of folders, got 3"):
        trace_paths(tmp_path)
