"""Building small corpora for the corpus tests: a folder of two traces and one real agent log, made writable."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "corpus"  # read-only material beside the repo, as tests/files.py's callers find it
REAL = SHARED / "real"
LOG = REAL / "swe-agent" / "swe-agent__test-repo-i1.traj"  # a healthy SWE-agent run, 5 calls

TRACE = """\
loopguard: 1
name: {name}
policy: default
steps:
  - tool: shell
    args: {{command: "ls"}}
  - tool: shell
    args: {{command: "ls"}}
  - tool: shell
    args: {{command: "ls"}}
    expect: {{action: warn, reason: loop_guard.consecutive_warning}}
expect: {{outcome: incomplete}}
"""


def writable_copy(source: Path, dest: Path) -> Path:
    """`source` copied to `dest` with every file and folder writable (the shared corpus is read-only)."""
    shutil.copytree(source, dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dest


def tiny_corpus(folder: Path) -> Path:
    """`folder` holding two traces and one agent log (no manifest yet)."""
    (folder / "traces").mkdir(parents=True)
    for name in ("repeat-a", "repeat-b"):
        (folder / "traces" / f"{name}.yaml").write_text(TRACE.format(name=name), encoding="utf-8")
    (folder / "logs").mkdir()
    shutil.copy(LOG, folder / "logs" / LOG.name)
    (folder / "logs" / LOG.name).chmod(0o644)
    (folder / "README.md").write_text("Two traces and a log.\n", encoding="utf-8")
    return folder
