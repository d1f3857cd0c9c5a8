"""External guards in the pytest plugin and `loopguard matrix`: `loopguard serve` behind the pipe gives the built-in
verdicts item for item (one process per worker, none left afterwards), and a broken guard fails its items in one
readable line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from guard_helpers import (
    SERVE_DEFAULT,
    TRACES,
    assert_gone,
    counting,
    external,
    flow,
    hostile,
    is_gone,
    loopguard,
    pids,
)

pytest_plugins = ["pytester"]

# traces whose expectations are default's (they pass), and two of other presets (under default, some fail)
UNDER_DEFAULT = [
    "loop_guard/default_consecutive_stop.yaml",
    "loop_guard/default_observation_cycle.yaml",
    "loop_guard/default_warn_runs_then_block.yaml",
    "failure_tracker/default_real_failing_key_in_a_row.yaml",
    "read_tracker/default_real_exact_reread.yaml",
    "context/default_unrecoverable_error.yaml",
]
OTHERS = ["loop_guard/roo_block_then_forget.yaml", "loop_guard/goose_sorted_typed_identity.yaml"]
ITEM = re.compile(r"^(PASSED|FAILED) (\S+)", re.MULTILINE)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    for name in (*UNDER_DEFAULT, *OTHERS):
        target = pytester.path / "traces" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TRACES / name, target)
    return pytester


def outcomes(project: pytest.Pytester, *args: str) -> dict[str, str]:
    """Each trace item's outcome (PASSED / FAILED) in a run of pytest with `args`."""
    result = project.runpytest("-p", "no:cacheprovider", "-rA", *args)
    found = dict((item, outcome) for outcome, item in ITEM.findall(result.stdout.str()))
    assert len(found) == len(UNDER_DEFAULT) + len(OTHERS), result.stdout.str()
    return found


@pytest.mark.parametrize("workers", ["0", pytest.param("2", marks=pytest.mark.slow)])
def test_serve_behind_the_pipe_passes_what_default_passes(project: pytest.Pytester, workers: str) -> None:
    built_in = outcomes(project, "-n", workers, "--loopguard-policy", "default")
    piped = outcomes(project, "-n", workers, "--loopguard-policy", flow(external(SERVE_DEFAULT, timeout_s=10)))
    assert piped == built_in
    assert [k for k, v in built_in.items() if v == "PASSED"] != [] and "FAILED" in built_in.values()
    assert all(built_in[k] == "PASSED" for k in built_in if "/default_" in k)


@pytest.mark.slow
def test_one_guard_process_per_worker_and_none_left(project: pytest.Pytester, tmp_path: Path) -> None:
    hellos = tmp_path / "hellos"
    # `--dist load` sends each of the 2 workers 2 of the 5 items at once: both run items
    result = project.runpytest("-p", "no:cacheprovider", "-n", "2", "--dist", "load", "--loopguard-policy",
                               flow(external(counting(hellos), timeout_s=10)), "traces/loop_guard")
    result.assert_outcomes(passed=3, failed=2)  # the roo and goose traces' expectations are not default's verdicts
    started = pids(hellos)
    assert len(started) == 2 and len(set(started)) == 2  # one process per worker, reused for its items
    for pid in started:
        assert_gone(pid)  # the workers ended theirs as they exited


def test_a_broken_guard_fails_each_item_in_one_line(project: pytest.Pytester, tmp_path: Path) -> None:
    started = tmp_path / "pids"
    broken = external(hostile("garbage", "--at", "before_call@1", "--pids", started))
    result = project.runpytest("-p", "no:cacheprovider", "--loopguard-policy", flow(broken), "traces/loop_guard")
    result.assert_outcomes(failed=5)
    out = result.stdout.str()
    assert "Traceback" not in out
    for name in ("default_consecutive_stop", "default_observation_cycle", "roo_block_then_forget"):
        # the item's report is the one line: file, trace, guard, run, step and what went wrong
        line = next(x for x in out.splitlines() if x.startswith(f"traces/loop_guard/{name}.yaml: trace "))
        assert re.fullmatch(r"traces/loop_guard/\w+\.yaml: trace [\w-]+: external guard `.+hostile\.py garbage .+`, "
                            r"run '[\w-]+', step 1 \(before_call \w+\): replied with a line that is not JSON: "
                            r"'<html>502 Bad Gateway</html>'", line), line
    assert len(pids(started)) == 5 and all(is_gone(pid) for pid in pids(started))


@pytest.mark.slow  # four processes of loopguard and two of loopguard serve
def test_matrix_of_wrapped_presets_is_the_presets_matrix(tmp_path: Path) -> None:
    paths = [TRACES / name for name in (*UNDER_DEFAULT[:3], *OTHERS)]
    files = []
    for preset in ("default", "roo"):
        serve = [*SERVE_DEFAULT[:-1], preset]
        policy = tmp_path / f"piped-{preset}.yaml"
        policy.write_text(json.dumps(external(serve, timeout_s=10, extends=preset)), encoding="utf-8")
        files.append(str(policy))
    presets = loopguard("matrix", *paths, "--policies", "default,roo", "--json")
    piped = loopguard("matrix", *paths, "--policies", ",".join(files), "--json")
    assert presets.returncode == piped.returncode == 0, presets.stderr + piped.stderr
    rows = [list(row["policies"].values()) for row in json.loads(presets.stdout)]
    assert rows == [list(row["policies"].values()) for row in json.loads(piped.stdout)]
    assert len(rows) == 5 and any(cell["first_intervention"] for row in rows for cell in row)
