"""`loopguard scan [PATHS...]`: find the coding agents' session logs, replay them in memory, print the loops in them.

Without PATHS, each agent's own place (scan/_discover.py); with PATHS, those files and folders, each file's
format detected. Nothing is written unless `--report` or `--save` asks; the logs are only read. Everything
printed, reported or saved is redacted as `loopguard import` redacts (the same rules and `--redact`), and paths
under the home folder are shown from `~`. Exit status: 0 no loop found, 1 loops found, 2 a log could not be
read or an option is bad (this wins over 1, as in `run`).
"""

from __future__ import annotations

import argparse

from ._common import policy_type


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not days > 0 or days == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of days, got {text!r}")
    return days


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATHS",
                   help="log files or folders (default: each agent's own place: ~/.claude, ~/.codex, ~/.gemini, "
                        "VS Code's Cline/Roo tasks, this project's aider history; docs/scan.md)")
    p.add_argument("--since", type=_days, metavar="DAYS", help="only logs changed in the last DAYS days")
    p.add_argument("--agent", action="append", default=[], metavar="NAME",
                   help="only this agent's logs (claude-code, codex, gemini-cli, cline, aider, or any importer's "
                        "name); repeatable")
    p.add_argument("--policy", type=policy_type, help="replay under this preset or policy file (default: default)")
    p.add_argument("--report", metavar="PATH", help="also write the findings to a .json, .md or .html file")
    p.add_argument("--save", metavar="DIR", help="write the sessions with loops as redacted traces into DIR")
    p.add_argument("--redact", action="append", default=[], metavar="REGEX",
                   help="also redact what this regex matches; repeatable")


def run(args: argparse.Namespace) -> int:
    from ._scan_run import scan  # the importers, the replay, redaction: only when the command runs

    return scan(args)
