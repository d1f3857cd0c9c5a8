"""Runs for eval: traces, raw logs through the importers, and tarballs read in memory with resolved.json."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from pytest_loopguard.errors import TraceError
from pytest_loopguard.eval._runs import call_count, load_runs

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "real"
ASTROPY = REAL / "mini-swe-agent-gemini-3-pro" / "astropy__astropy-12907.traj.json"


def test_a_raw_log_is_imported(tmp_path: Path) -> None:
    (run,) = load_runs([ASTROPY])
    assert (run.row, run.rows, run.outcome, run.member) == (0, 1, "unknown", None)
    assert call_count(run.trace) == 19  # labels.yaml: calls 19


def test_a_tarball_is_read_in_memory_with_its_resolved_flags(tmp_path: Path) -> None:
    tar_path = tmp_path / "runs.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        tar.add(ASTROPY, arcname="trajs/astropy__astropy-12907.traj.json")
        tar.add(ASTROPY, arcname="trajs/astropy__astropy-99999.traj.json")
        tar.add(ASTROPY, arcname="trajs/astropy__astropy-00000.traj.json")
        flags = json.dumps({"astropy__astropy-12907": True, "astropy__astropy-99999": False}).encode()
        info = tarfile.TarInfo("trajs/resolved.json")
        info.size = len(flags)
        tar.addfile(info, io.BytesIO(flags))
    runs = load_runs([tar_path])
    assert [(r.member, r.outcome) for r in runs] == [
        ("trajs/astropy__astropy-12907.traj.json", "resolved"),
        ("trajs/astropy__astropy-99999.traj.json", "failed"),
        ("trajs/astropy__astropy-00000.traj.json", "unknown"),
    ]
    assert runs[0].run_id == "runs.tar.gz:trajs/astropy__astropy-12907.traj.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.tar.gz"]  # nothing unpacked


def test_a_bad_resolved_json_is_one_line(tmp_path: Path) -> None:
    tar_path = tmp_path / "bad.tar"
    with tarfile.open(tar_path, "w") as tar:
        data = b'{"a": "yes"}'
        info = tarfile.TarInfo("resolved.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(TraceError, match="expected a mapping of instance id to true/false"):
        load_runs([tar_path])


def test_a_file_no_importer_knows_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"hello": 1}', encoding="utf-8")
    with pytest.raises(TraceError) as info:
        load_runs([tmp_path])
    assert "x.json" in str(info.value) and "\n" not in str(info.value)
