"""Seeded hostile agent logs for the import/eval fuzz profile, made from real logs of other programs.

A case starts from one base: a file of ../shared/corpus/real or ../shared/corpus/sessions, a member of the
calibration tarball, or an SDK fixture (tests/importers/fixtures). One to three mutations are applied: keys
deleted, duplicated or swapped, values of another type, huge strings and integers (past 2^53 and past
Python's 4,300 digits), numbers in a log's text made huge or odd (`Exit code 999…`, `¹`), deep nesting,
NaN/Infinity and numbers past a double, lone surrogate escapes, planted secrets as values and keys,
truncation at a random byte, invalid UTF-8, bit flips. The case is written under a hostile file name (a
newline, spaces, a secret, a long name) or packed into an archive (.tar, .tar.gz, .tar.xz, with hostile
member names, sometimes corrupted). Each case gets its own folder, so a check can tell what an import wrote
outside its output folder. The same seed always gives the same files.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import random
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_loopguard.importers.base import LOG_SUFFIXES

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "corpus"
FIXTURES = REPO / "tests" / "importers" / "fixtures"
CALIBRATION = SHARED / "calibration" / "mini-swe-agent-gemini-3-pro-swebench.tar.gz"
SECRET = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f"
NAMES = ("line\nbreak", "tab\there", "sp ace", "run_" + SECRET, "ユニコード", "x" * 200, "-dash", "a:b", "..dots")
VALUES: tuple[Any, ...] = (None, True, 0, -1, "", "x", [], {}, [1, "a"], {"k": None}, 2**53 + 1, 2**64, -(2**63),
                           1.5, "\ud800", SECRET, f"https://alice:Pw9sEcReT77x@db.example.com/{SECRET}")


@dataclass(frozen=True)
class Base:
    name: str  # the base file's name (its suffix decides how it is written)
    data: bytes


def bases(max_bytes: int | None = None) -> list[Base]:
    """Every base file (smaller than `max_bytes` when given), in a stable order."""
    found: list[Base] = []
    for root in (SHARED / "real", SHARED / "sessions", FIXTURES):
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.name.endswith(LOG_SUFFIXES):
                found.append(Base(path.name, path.read_bytes()))
    if CALIBRATION.is_file():
        with tarfile.open(CALIBRATION) as tar:
            for n, info in enumerate(tar):  # resolved.json and every 8th run: enough of one format
                fh = tar.extractfile(info) if info.isfile() else None
                if fh is not None and (info.name.endswith("resolved.json") or n % 8 == 0):
                    found.append(Base(info.name.rsplit("/", 1)[-1], fh.read()))
    return [b for b in found if max_bytes is None or len(b.data) <= max_bytes]


# ---- mutations of a parsed document --------------------------------------------------------------------
def _containers(doc: Any) -> list[Any]:
    out, stack = [], [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            out.append(item)
            stack.extend(item.values() if isinstance(item, dict) else item)
    return out


def _structural(rng: random.Random, doc: Any, recipe: list[str]) -> Any:
    places = _containers(doc)
    if not places:
        return doc
    place = rng.choice(places)
    op = rng.choice(("delete", "swap", "type", "huge-string", "huge-int", "digits", "deep", "secret-key",
                     "secret-value", "nan", "surrogate", "float", "text-digits"))
    recipe.append(op)
    if op == "text-digits":
        return _text_digits(rng, doc)
    keys = list(place) if isinstance(place, dict) else list(range(len(place)))
    if not keys:
        return doc
    key = rng.choice(keys)
    if op == "delete":
        del place[key]
    elif op == "swap" and len(keys) > 1:
        other = rng.choice(keys)
        place[key], place[other] = place[other], place[key]
    elif op == "type":
        place[key] = rng.choice(VALUES)
    elif op == "huge-string":
        place[key] = "y" * rng.choice((10_000, 300_000, 9 * 1024 * 1024))
    elif op == "huge-int":
        place[key] = rng.choice((2**53 + 1, 2**64, -(10**30), 10**400))
    elif op == "digits":
        place[key] = "@@DIGITS@@"
    elif op == "deep":
        place[key] = f"@@NEST{rng.choice((70, 2000, 100_000))}@@"
    elif op == "secret-key" and isinstance(place, dict):
        place[SECRET] = place.pop(key)
    elif op == "secret-value":
        place[key] = f"token {SECRET} at https://bob:Pw9sEcReT77x@example.org"
    elif op == "nan":
        place[key] = rng.choice((float("nan"), float("inf"), {"intValue": float("inf")}))
    elif op == "surrogate":
        place[key] = "bad \ud800 text"
    elif op == "float":
        place[key] = "@@BIGFLOAT@@"
    return doc


# numbers written inside a log's text ("Exit code 1", "<returncode>0</returncode>", "Tokens: 13k sent",
# "gen_ai.prompt.0.role", a process id): past Python's 4,300 digits, past any exit code, or a digit int() refuses
TEXT_NUMBERS = ("9" * 5000, "9" * 20, "1" * 400, "\u00b9")
_DIGIT_RUN = re.compile(r"\d+")


def _text_digits(rng: random.Random, doc: Any) -> Any:
    """Every digit run of one string that holds digits (a value or a key) replaced by one of TEXT_NUMBERS."""
    number = rng.choice(TEXT_NUMBERS)
    spots = [(place, key) for place in _containers(doc)
             for key in (place if isinstance(place, dict) else range(len(place)))
             if (isinstance(key, str) and _DIGIT_RUN.search(key)) or
             (isinstance(place[key], str) and _DIGIT_RUN.search(place[key]))]
    if not spots:
        return doc
    place, key = rng.choice(spots)
    if isinstance(key, str) and _DIGIT_RUN.search(key) and (rng.random() < 0.5 or not isinstance(place[key], str)):
        place[_DIGIT_RUN.sub(number, key)] = place.pop(key)
    else:
        place[key] = _DIGIT_RUN.sub(number, place[key])
    return doc


def _text(doc: Any) -> str:
    text = json.dumps(doc, ensure_ascii=True)
    text = text.replace('"@@DIGITS@@"', "9" * 4301).replace('"@@BIGFLOAT@@"', "1e400")
    return re.sub(r'"@@NEST(\d+)@@"', lambda m: "[" * int(m.group(1)) + "]" * int(m.group(1)), text)


def _bytes_op(rng: random.Random, data: bytes, recipe: list[str]) -> bytes:
    op = rng.choice(("truncate", "utf8", "flip", "duplicate-key", "text-digits"))
    recipe.append(op)
    if not data:
        return data
    at = rng.randrange(len(data))
    if op == "text-digits":  # the digit runs of a stretch of a text log (aider's Markdown has no JSON to parse)
        number = rng.choice(TEXT_NUMBERS).encode()
        return data[:at] + re.sub(rb"\d+", number, data[at:at + 4096]) + data[at + 4096:]
    if op == "truncate":
        return data[:at]
    if op == "utf8":
        return data[:at] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00")) + data[at:]
    if op == "flip":
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(flipped))
            flipped[i] ^= 1 << rng.randrange(8)
        return bytes(flipped)
    match = re.search(rb'"[A-Za-z_]+": ', data[at:])  # a key written twice: the later one wins in json
    return data if match is None else data[: at + match.start()] + match.group() + b"1, " + data[at + match.start():]


def mutate(rng: random.Random, base: Base, recipe: list[str]) -> bytes:
    """The base's bytes after one to three mutations."""
    data = base.data
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.6:
            lines = data.split(b"\n")
            jsonl = base.name.endswith(".jsonl") and len(lines) > 1
            i = rng.randrange(len(lines)) if jsonl else 0
            target = lines[i] if jsonl else data
            try:
                doc = json.loads(target)
            except (ValueError, RecursionError):  # already mutated past parsing: mutate the bytes
                data = _bytes_op(rng, data, recipe)
                continue
            new = _text(_structural(rng, doc, recipe)).encode()
            data = b"\n".join([*lines[:i], new, *lines[i + 1:]]) if jsonl else new
        else:
            data = _bytes_op(rng, data, recipe)
    return data


def _archive(rng: random.Random, members: list[tuple[str, bytes]], recipe: list[str]) -> tuple[str, bytes]:
    suffix = rng.choice((".tar", ".tar.gz", ".tar.xz"))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    packed = buffer.getvalue()
    # compressed here, not by tarfile: gzip's header would hold the time it was written (mtime=0: the same
    # seed gives the same bytes)
    if suffix == ".tar.gz":
        packed = gzip.compress(packed, mtime=0)
    elif suffix == ".tar.xz":
        packed = lzma.compress(packed)
    recipe.append(f"archive{suffix}")
    if rng.random() < 0.4:
        packed = _bytes_op(rng, packed, recipe)
    return suffix, packed


def generate(seed: int, count: int, folder: Path, max_bytes: int | None = None) -> list[tuple[Path, str]]:
    """`count` cases drawn from `seed`, each in its own folder under `folder`: (input path, recipe)."""
    rng = random.Random(seed)
    pool = bases(max_bytes)
    out = []
    for n in range(count):
        base = rng.choice(pool)
        recipe = [base.name]
        data = mutate(rng, base, recipe)
        stem, dot, suffix = base.name.partition(".")
        if rng.random() < 0.2:
            name = rng.choice(NAMES)
            recipe.append(f"name {name!r}")
            stem = name
        case = folder / f"case{n:05d}"
        case.mkdir(parents=True)
        if rng.random() < 0.15:
            other = rng.choice(pool)
            members = [(f"logs/{stem}{dot}{suffix}", data), (rng.choice(("resolved.json", "b.json", "c\nd.json")),
                                                             mutate(rng, other, recipe))]
            archive_suffix, packed = _archive(rng, members, recipe)
            path = case / f"logs{archive_suffix}"
            path.write_bytes(packed)
        else:
            path = case / f"{stem}{dot}{suffix}"
            path.write_bytes(data)
        out.append((path, " + ".join(recipe)))
    return out
