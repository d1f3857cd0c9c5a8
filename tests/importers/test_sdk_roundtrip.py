"""Every SDK-format fixture goes through `loopguard import` and comes out as traces `validate` accepts and `run`
replays, in YAML and JSONL, with every step pointing back into its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.io._format import load_file

FIXTURES = Path(__file__).parent / "fixtures"
SDK_FIXTURES = sorted(p for p in FIXTURES.iterdir() if p.name.startswith(("openai_", "anthropic_", "otel_", "tau_")))


@pytest.mark.parametrize("fmt", ["yaml", "jsonl"])
def test_import_validate_and_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    out = tmp_path / "out"
    assert cli.main(["import", *map(str, SDK_FIXTURES), "-o", str(out), "--format", fmt]) == 0
    files = sorted(out.iterdir())
    assert len(files) == 11  # runs: 2 tau-bench, 2 in the OTel export, one per other fixture
    for path in files:
        for trace in load_file(path):
            # each step names its log, as where the import ran sees it (never the machine's absolute path)
            assert trace.steps and all(s.source is not None and not Path(s.source.file).is_absolute()
                                       and (Path.cwd() / s.source.file.split(":")[0]).resolve().is_relative_to(
                                           FIXTURES.resolve()) for s in trace.steps)
    capsys.readouterr()
    assert cli.main(["validate", str(out)]) == 0
    assert cli.main(["run", str(out)]) == 0  # imported traces carry no expectations: nothing can mismatch
