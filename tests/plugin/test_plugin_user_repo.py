"""The plugin dropped into someone else's repository: its names never clash with the user's own packages."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SCENARIO = Path(__file__).resolve().parents[2] / "traces" / "scenarios" / "poll-spacebot-dedup.yaml"


def test_a_user_package_named_simulators_neither_shadows_nor_is_shadowed(pytester: pytest.Pytester) -> None:
    # `python -m pytest` puts the user's repo first on sys.path, where their own `simulators/` lives.
    pytester.makeini("[pytest]\nloopguard_paths = traces\n")
    (pytester.path / "simulators").mkdir()
    (pytester.path / "simulators" / "__init__.py").write_text("OWNER = 'user'\n", encoding="utf-8")
    (pytester.path / "simulators" / "scenario.py").write_text("raise ImportError('the user module')\n",
                                                               encoding="utf-8")
    (pytester.path / "traces").mkdir()
    shutil.copy(SCENARIO, pytester.path / "traces" / SCENARIO.name)
    pytester.makepyfile(test_mine="""
        import simulators

        def test_the_users_own_package_is_the_one_imported():
            assert simulators.OWNER == "user"
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*poll-spacebot-dedup.yaml::* PASSED*"])
    result.stdout.no_fnmatch_line("*ModuleNotFoundError*")
    result.stdout.no_fnmatch_line("*Traceback*")
