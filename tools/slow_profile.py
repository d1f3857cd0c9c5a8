"""Write tests/slow_tests.txt, the tests the default run leaves to `-m slow`, from a `--durations` report.

    python -m pytest -n 2 -q --durations=0 -p no:randomly > durations.txt
    python tools/slow_profile.py durations.txt --over 3.0

A test goes into the profile when its call or its setup took at least `--over` seconds in that report (measure
on a loaded machine and the threshold moves with the load: the figure that matters is the default run's time,
`python -m pytest -n 0 -q`, under ~90 s on a quiet 2-core machine). Tests already marked `slow` in their file
never appear in a report of the default run, so the profile only adds to them. CI runs both sets.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "tests" / "slow_tests.txt"
LINE = re.compile(r"^(\d+(?:\.\d+)?)s (call|setup|teardown)\s+(\S.*)$")
HEADER = """\
# Tests the default run leaves to `python -m pytest -m slow` (CI runs both): each took at least {over} s in a
# --durations report of the whole default run. Regenerate with `python tools/slow_profile.py REPORT --over S`;
# tests/conftest.py marks these node ids `slow` at collection.
"""


def slow_ids(report: str, over: float) -> list[str]:
    found = set()
    for line in report.splitlines():
        m = LINE.match(line.strip())
        if m and m.group(2) != "teardown" and float(m.group(1)) >= over:
            found.add(m.group(3).strip())
    return sorted(found)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="the output of a pytest run with --durations=0")
    ap.add_argument("--over", type=float, default=3.0, help="seconds (default 3.0)")
    ap.add_argument("--merge", action="store_true", help="keep the ids already in the profile")
    args = ap.parse_args()
    ids = set(slow_ids(args.report.read_text(encoding="utf-8"), args.over))
    if args.merge and PROFILE.exists():
        ids |= {line for line in PROFILE.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")}
    PROFILE.write_text(HEADER.format(over=args.over) + "".join(f"{i}\n" for i in sorted(ids)), encoding="utf-8")
    print(f"{PROFILE.relative_to(ROOT)}: {len(ids)} tests")


if __name__ == "__main__":
    main()
