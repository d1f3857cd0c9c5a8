"""`loopguard schema [-o OUT]`: the JSON Schema of the trace format, for editors and validators."""

from __future__ import annotations

import argparse
import sys

from ._common import EXIT_OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="OUT", help="write it to OUT instead")


def run(args: argparse.Namespace) -> int:
    from ..io._schema import schema_text

    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(schema_text())
    else:
        sys.stdout.write(schema_text())
    return EXIT_OK
