"""Every bundled trace and scenario replays to identical JSON in another process (another hash seed) and in
pytest-xdist workers: nothing in a verdict may depend on set order, object ids or which process ran it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pytest_loopguard.io._format import iter_trace_files, load_file
from pytest_loopguard.io._runner import execute

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
FILES = [str(p) for p in iter_trace_files([REPO / "traces"])]
# prints one line per trace: its file, name and result as canonical JSON
DUMP = """
import json, sys, warnings
from pytest_loopguard.io._runner import execute
from pytest_loopguard.io._format import load_file
warnings.simplefilter("ignore")
for path in sys.argv[1:]:
    for trace in load_file(path):
        print(json.dumps([path, trace.name, execute(trace).to_dict()], sort_keys=True, default=str))
"""


def here() -> list[str]:
    lines = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in FILES:
            for trace in load_file(path):
                lines.append(json.dumps([path, trace.name, execute(trace).to_dict()], sort_keys=True, default=str))
    return lines


def in_process(hash_seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run([sys.executable, "-c", DUMP, *FILES], env=env, capture_output=True, text=True,
                         check=True, cwd=REPO).stdout
    return out.splitlines()


def test_the_corpus_is_large_enough_to_mean_something() -> None:
    assert len(FILES) >= 100


def test_every_trace_replays_to_the_same_json_in_two_processes() -> None:
    expected = here()
    assert in_process("1") == expected
    assert in_process("2") == expected


XDIST_TEST = """
import json, warnings
from pathlib import Path
import pytest
from pytest_loopguard.io._runner import execute
from pytest_loopguard.io._format import load_file

FILES = {files!r}
OUT = Path({out!r})

@pytest.mark.parametrize("path", FILES)
def test_dump(path, worker_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lines = [json.dumps([path, t.name, execute(t).to_dict()], sort_keys=True, default=str)
                 for t in load_file(path)]
    (OUT / (str(FILES.index(path)) + "-" + worker_id)).write_text("\\n".join(lines))
"""


def test_every_trace_replays_to_the_same_json_under_xdist(pytester: pytest.Pytester) -> None:
    out = pytester.path / "out"
    out.mkdir()
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_dump=XDIST_TEST.format(files=FILES, out=str(out)))
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=len(FILES))
    dumped = sorted(out.iterdir(), key=lambda p: int(p.name.split("-")[0]))
    assert {p.name.split("-")[1] for p in dumped} == {"gw0", "gw1"}  # both workers replayed some
    lines = [line for p in dumped for line in p.read_text().splitlines()]
    assert lines == here()
