"""`loopguard import SRC... -o OUT`: convert agent logs (SWE-agent, mini-swe-agent, OpenHands ...) into traces."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="+", metavar="SRC",
                   help="log files, event folders, folders of logs, or tar archives of logs (.tar, .tar.gz, .tgz, "
                        ".tar.bz2, .tar.xz)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="folder for the traces (created)")
    p.add_argument("--from", dest="fmt", metavar="FORMAT", help="the logs' format (default: detect per file)")
    p.add_argument("--format", dest="out_format", choices=("yaml", "jsonl"), default="yaml",
                   help="trace file format (default yaml)")
    p.add_argument("--redact", action="append", default=[], metavar="REGEX",
                   help="also redact what this regex matches; repeatable")
    p.add_argument("--no-redact", action="store_true", help="keep secrets as they are (no redaction at all)")
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = formats_epilog()


def formats_epilog() -> str:
    """The formats `--from` names, in detection order (the built-ins, then installed plugins' importers)."""
    from ..importers import available  # the parser of `import` alone is built with it: `import` needs it anyway

    width = max((len(i.name) for i in available()), default=0)
    lines = [f"  {i.name.ljust(width)}  {i.description}" for i in available()]
    return "formats (--from FORMAT; detected per file without it; docs/import.md):\n" + "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ._import_logs import import_logs  # the importers, redaction, the trace writer

    return import_logs(args)
