"""`loopguard run --coverage/--report` and `loopguard replay --html`: the command's side of report files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ..core._expect import Mismatch, check
from ..core._model import ReplayResult
from ..errors import LoopguardError
from ..runtime._replay import policy_for
from ._console import emit
from ._document import report_entry
from ._rule_coverage import coverage_table, rule_coverage
from ._write import report_format, write_report

__all__ = ["replay_html", "run_report"]


def _checked(path: str) -> None:
    try:
        report_format(path)
    except ValueError as exc:
        raise LoopguardError(str(exc)) from None


def run_report(args: argparse.Namespace, results: Sequence[tuple[ReplayResult, list[Mismatch]]], policy: Any) -> None:
    """Print the rule coverage (stderr when stdout carries JSON) and write the report file `args.report`."""
    if args.report:
        _checked(args.report)
    entries = [report_entry(r, m, policy_for(r.trace, policy)[0].engines) for r, m in results]
    if args.coverage:
        stream = sys.stderr if args.json else sys.stdout
        print(file=stream)
        emit(coverage_table(rule_coverage(entries)), stream)
    if args.report:
        meta = {"command": "loopguard run", "policy": args.policy, "matrix": [], "paths": list(args.paths)}
        write_report(args.report, entries, meta)


def replay_html(path: str, result: ReplayResult, policy: Any) -> None:
    """Write one trace's timeline, results and mismatches as a self-contained HTML page."""
    _checked(path)
    if report_format(path) != "html":
        raise LoopguardError(f"--html {path!r}: expected a .html file")
    mismatches = check(result)
    entry = report_entry(result, mismatches, policy_for(result.trace, policy)[0].engines)
    write_report(path, [entry], {"command": "loopguard replay", "policy": policy})
