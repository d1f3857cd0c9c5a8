"""One policy, one label in every output (issue 26 item 6): a policy file is called by its own name (its
`name:`, else its stem) in replay, run and diff alike, and a git revision of it is that name `@REV`; it was
`policies/agentco.yaml` in one output, `agentco` in another and `policies/agentco.yaml@HEAD` in a third."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli

TRACE = "loopguard: 1\nname: t\nsteps:\n" + "  - {tool: grep, args: {q: x}}\n" * 4


def test_a_policy_file_has_one_label_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "agentco.yaml").write_text("preset: default\nloop_guard: {warn_at: 2}\n",
                                                        encoding="utf-8")
    (tmp_path / "t.yaml").write_text(TRACE, encoding="utf-8")
    assert cli.main(["replay", "t.yaml", "--policy", "policies/agentco.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["policy"] == "agentco"
    assert cli.main(["run", "t.yaml", "--policy", "policies/agentco.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["policy"] == "agentco"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "policies"], check=True)
    subprocess.run([*git, "commit", "-qm", "p"], check=True)
    (tmp_path / "policies" / "agentco.yaml").write_text("preset: default\nloop_guard: {warn_at: 3}\n",
                                                        encoding="utf-8")
    cli.main(["diff", "t.yaml", "--before", "git:HEAD:policies/agentco.yaml", "--after", "policies/agentco.yaml",
              "--json"])
    data = json.loads(capsys.readouterr().out)
    assert (data["before"], data["after"]) == ("agentco@HEAD", "agentco")


# ---- --help agrees with the docs (issue 26 item 6) ------------------------------------------------------------
def help_text(capsys: pytest.CaptureFixture[str], command: str) -> str:
    assert cli.main([command, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_texts_say_what_the_docs_say(capsys: pytest.CaptureFixture[str]) -> None:
    assert "tar archive" in help_text(capsys, "import")  # docs/import.md: logs, folders, or a tar archive of logs
    labels = help_text(capsys, "eval")
    assert "corpus/real" not in labels and "docs/eval.md" in labels  # no path a pip user does not have
    diff, run = help_text(capsys, "diff"), help_text(capsys, "run")
    default = "default: the loopguard_paths ini option, as pytest reads it; else traces"
    assert default in run and default in diff


def test_diff_without_paths_reads_the_ini_files_trace_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nloopguard_paths = recordings\n", encoding="utf-8")
    (tmp_path / "recordings").mkdir()
    (tmp_path / "recordings" / "t.yaml").write_text(TRACE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["diff", "--before", "default", "--after", "spacebot", "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["traces"] == 1  # as `loopguard run` finds them
