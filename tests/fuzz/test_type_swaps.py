"""Every value of a real log replaced, one place at a time, by values of other types: the importer that reads
the log (and every other importer's `sniff`) gives a trace or our one-line error, never another exception.

Where the seeded fuzz profile changes a random value, this sweep changes each place a log's shape has (list
items counted as one place) to a list, an object, a number, null, a boolean and a string: a list where a
name is looked up in a set (`unhashable type`), a number where a list is walked (`not iterable`). The logs
are cut to the items that bring a new shape, so a sweep costs seconds. The SDK fixtures run by default (with
four of the types); the real corpus, the recorded sessions and a Cline task folder (its two files together)
under `-m slow`.
"""

from __future__ import annotations

import copy
import json
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from import_mutations import FIXTURES, SHARED

from pytest_loopguard.errors import LoopguardError
from pytest_loopguard.importers import Source, available, detect, get, to_trace

OTHER_TYPES: tuple[Any, ...] = ([], {"k": 1}, 7, None, True, "s", -1.5, [{"a": "b"}])
QUICK_TYPES = (*OTHER_TYPES[:3], "s")  # the default run's: not hashable, not iterable, not a mapping
LONG_TEXT = 3_000  # characters: a longer string keeps its two ends (markers sit at the start or the end)
Place = tuple[str, ...]  # keys from the top, "*" for any item of a list


def places(doc: Any, path: Place = ()) -> Iterator[Place]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*path, key)
            yield from places(value, (*path, key))
    elif isinstance(doc, list):
        for value in doc:
            yield (*path, "*")
            yield from places(value, (*path, "*"))


def cut(doc: Any) -> Any:
    """`doc` with only the list items that bring a place or a (type, role, type field) not seen before."""
    if isinstance(doc, dict):
        return {key: cut(value) for key, value in doc.items()}
    if isinstance(doc, list):
        seen: set[Any] = set()
        kept = []
        for n, item in enumerate(doc):
            mark = (type(item).__name__, *(str(item.get(k)) for k in ("role", "type", "say", "ask"))) \
                if isinstance(item, dict) else (type(item).__name__,)
            new = set(places(item)) | {mark}
            if n < 3 or n == len(doc) - 1 or not new <= seen:
                kept.append(cut(item))
                seen |= new
        return kept
    if isinstance(doc, str) and len(doc) > LONG_TEXT:
        return doc[: LONG_TEXT // 2] + doc[-LONG_TEXT // 2:]
    return doc


def swapped(doc: Any, place: Place, value: Any, path: Place = ()) -> Any:
    if isinstance(doc, dict):
        return {k: copy.deepcopy(value) if (*path, k) == place else swapped(v, place, value, (*path, k))
                for k, v in doc.items()}
    if isinstance(doc, list):
        if (*path, "*") == place:
            return [copy.deepcopy(value) for _ in doc]
        return [swapped(v, place, value, (*path, "*")) for v in doc]
    return doc


def bugs_of(source: Source, fmt: str, what: str) -> str | None:
    """None when every importer's sniff and `fmt`'s conversion of `source` end in a trace or our error."""
    pool = available()
    try:
        for imp in pool:
            imp.sniff(source)
        for run in get(fmt, pool).convert(source):
            to_trace(run, source.name)
    except LoopguardError:
        return None
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return f"{what}: {type(exc).__name__}: {str(exc)[:120]} at {Path(frame.filename).name}:{frame.lineno}"
    return None


def _parsed(path: Path) -> tuple[Any, bool] | None:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()], True
        return json.loads(text), False
    except ValueError:  # not JSON (aider's Markdown) or past the digit limit on purpose: not this sweep's
        return None


def sweep_file(path: Path, types: tuple[Any, ...] = OTHER_TYPES) -> list[str]:
    parsed = _parsed(path)
    if parsed is None:
        return []
    doc, jsonl = parsed
    fmt = detect(Source.from_path(path), available()).name
    doc = cut(doc)
    found: dict[str, str] = {}  # one report per place in our code
    for place in sorted(set(places(doc)), key=str):
        for value in types:
            new = swapped(doc, place, value)
            text = "\n".join(json.dumps(row) for row in new) if jsonl and isinstance(new, list) else json.dumps(new)
            what = f"{path.name} ({fmt}) {'.'.join(place)} = {value!r}"
            bug = bugs_of(Source.from_bytes(path.name, text.encode()), fmt, what)
            if bug is not None:
                found.setdefault(bug.rsplit(" at ", 1)[-1], bug)
    return list(found.values())


def _logs(*roots: Path) -> list[Path]:
    return [p for root in roots for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in (".json", ".jsonl",
                                                                                                    ".traj")]


@pytest.mark.parametrize("path", _logs(FIXTURES), ids=lambda p: p.name)
def test_every_value_of_an_sdk_fixture_as_another_type(path: Path) -> None:
    assert sweep_file(path, QUICK_TYPES) == []


@pytest.mark.slow
@pytest.mark.parametrize("path", _logs(SHARED / "real", SHARED / "sessions"), ids=lambda p: p.name)
def test_every_value_of_a_corpus_log_as_another_type(path: Path) -> None:
    assert sweep_file(path) == []


@pytest.mark.slow
def test_every_value_of_a_cline_task_folder_as_another_type(tmp_path: Path) -> None:
    cline = SHARED / "sessions" / "cline"
    files = {"api_conversation_history.json": cline / "gmfstu-task1769053680585-api_conversation_history.json",
             "ui_messages.json": cline / "gmfstu-task1769053680585-ui_messages.json"}
    docs = {name: cut(json.loads(path.read_text(encoding="utf-8"))) for name, path in files.items()}
    found: dict[str, str] = {}
    task = tmp_path / "1769053680585"
    for target, doc in docs.items():
        for place in sorted(set(places(doc)), key=str):
            for value in OTHER_TYPES:
                task.mkdir(exist_ok=True)
                for name, each in docs.items():
                    (task / name).write_text(json.dumps(swapped(each, place, value) if name == target else each))
                bug = bugs_of(Source.from_path(task), "cline", f"{target} {'.'.join(place)} = {value!r}")
                if bug is not None:
                    found.setdefault(bug.rsplit(" at ", 1)[-1], bug)
    assert list(found.values()) == []
