"""`loopguard schema [--protocol] [-o OUT]`: the JSON Schema of the trace format (or of the guard protocol's
messages), for editors and validators."""

from __future__ import annotations

import argparse
import sys

from ._common import EXIT_OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="OUT", help="write it to OUT instead")
    p.add_argument("--protocol", action="store_true", help="the guard protocol's messages (docs/protocol.md) instead")


def run(args: argparse.Namespace) -> int:
    if args.protocol:
        from ..io._protocol_schema import protocol_schema_text as text
    else:
        from ..io._schema import schema_text as text

    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text())
    else:
        sys.stdout.write(text())
    return EXIT_OK
