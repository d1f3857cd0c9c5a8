"""`pytest --loopguard-corpus NAME|PATH`: a shared corpus's traces and agent logs collected as tests and replayed
under their own policies or yours (`--loopguard-policy`), with or without xdist."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_files import tiny_corpus

from pytest_loopguard.corpora import init_corpus, pack_corpus

pytest_plugins = ["pytester"]


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> tuple[pytest.Pytester, Path]:
    """A project with a test of its own, and a corpus (two traces, one agent log) packed somewhere else."""
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    folder = tiny_corpus(tmp_path_factory.mktemp("shared") / "tiny")
    init_corpus(folder, name="tiny", licence="MIT")
    return pytester, folder


@pytest.mark.parametrize("workers", ["0", "2"])
def test_the_corpus_alone_runs_when_no_paths_are_given(project: tuple[pytest.Pytester, Path], workers: str) -> None:
    pytester, folder = project
    result = pytester.runpytest("-n", workers, "--loopguard-corpus", str(folder), "-v")
    result.assert_outcomes(passed=3)
    if workers == "0":  # in the manifest's order (xdist reports as each worker finishes)
        result.stdout.fnmatch_lines(["*/tiny/logs/swe-agent__test-repo-i1.traj::swe-agent__test-repo-i1 PASSED*",
                                     "*/tiny/traces/repeat-a.yaml::repeat-a PASSED*",
                                     "*/tiny/traces/repeat-b.yaml::repeat-b PASSED*"])
    result.stdout.fnmatch_lines(["loopguard: 3 traces replayed, 0 mismatched"])
    assert "test_own" not in result.stdout.str()  # the project's own tests were not asked for


def test_your_policy_on_their_corpus_and_your_own_paths_beside_it(project: tuple[pytest.Pytester, Path],
                                                                  tmp_path: Path) -> None:
    pytester, folder = project
    archive = pack_corpus(folder, tmp_path)
    result = pytester.runpytest("test_own.py", "--loopguard-corpus", str(archive), "--loopguard-policy", "roo")
    result.assert_outcomes(passed=2, failed=2)  # your test, the log's run; the traces expected default's warning
    result.stdout.fnmatch_lines(["*trace repeat-a under roo: incomplete: 1 mismatch*"])


@pytest.mark.parametrize(("args", "says"), [
    (["--loopguard-corpus", "no-such-corpus"], "ERROR: --loopguard-corpus: no-such-corpus: no such file or folder*"),
    (["--loopguard-corpus", "CORPUS", "--loopguard-update"], "ERROR: --loopguard-update rewrites your own traces*"),
])
def test_a_bad_corpus_option_is_a_usage_error(project: tuple[pytest.Pytester, Path], args: list[str],
                                              says: str) -> None:
    pytester, folder = project
    result = pytester.runpytest(*(str(folder) if a == "CORPUS" else a for a in args))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([says])
