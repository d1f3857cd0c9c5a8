"""Hypothesis strategies that turn the bundled traces, scenarios and presets into hostile input files.

A case starts from one bundled file (a trace or scenario from `traces/`, or a preset turned into a policy
file), applies one to three mutations (type swaps, missing and unknown keys, huge, negative and non-finite
numbers, deep nesting, long strings, YAML tags, anchors, aliases and alias bombs, torn text, invalid UTF-8,
a mutated policy beside the trace), and is written as YAML, JSON or JSONL. `generate` writes `count` cases
drawn from a seed; the same seed always gives the same files.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
PRESETS = REPO / "pytest_loopguard" / "presets"

NUMBERS = (-1, -(2**63), 0, 1, 2**31, 2**53, 2**53 + 1, 2**63, 2**64, 10**30, 10**400, 1e308, -1e308, 1e-300,
           0.5, float("nan"), float("inf"), float("-inf"), 10**9, 10**9 + 1, 10_000, 10_001)
VALUES = (None, True, False, "", "xyz", [], {}, [1, 2], {"a": 1}, "maybe", "../../etc/passwd.yaml", "default",
          "a" * 300, {"preset": "default"}, [[[]]])
TAGS = ("!!python/object/apply:os.system", "!!python/name:os.system", "!!binary", "!!set", "!custom", "!!omap",
        "!!float", "!!int", "!!bool", "!!str", "!!timestamp", "!!map", "!!seq", "!!null", "!<tag:x.org,2002:y>")
BAD_BYTES = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf", b"\r", b"\x85", b"\xe2\x80\xa8")
STRING_SIZES = (200, 10_000, 300_000)  # the 8 Mi limit itself is tested at its edge in tests/core
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
NEST = re.compile(r"""['"]?@@NEST(\d+)@@['"]?""")


@dataclass(frozen=True)
class Case:
    """One hostile input: the trace file's suffix and bytes, and a policy file it may name."""

    suffix: str
    text: bytes
    policy: bytes | None
    recipe: str

    def write(self, folder: Path, stem: str) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        if self.policy is not None:
            (folder / "pol.yaml").write_bytes(self.policy)
        path = folder / f"{stem}{self.suffix}"
        path.write_bytes(self.text)
        return path


def bases() -> list[tuple[str, Any]]:
    """(name, parsed document) of every bundled trace and scenario."""
    out = []
    for path in sorted((REPO / "traces").rglob("*.yaml")):
        if path.name == "loopguard-corpus.yaml":  # traces/ is a corpus package: its manifest is no trace
            continue
        for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_Loader):
            if isinstance(doc, dict):
                out.append((str(path.relative_to(REPO)), doc))
    return out


def policies() -> list[tuple[str, dict[str, Any]]]:
    """Every bundled preset as the mapping of a policy file that starts from it."""
    out = []
    for path in sorted(PRESETS.glob("*.yaml")):
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
        out.append((path.stem, {"preset": path.stem, **(raw.get("engines") or {})}))
    return out


def _paths(doc: Any) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    seen: set[int] = set()  # a shared or recursive value is entered once
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        value, path = stack.pop()
        out.append(path)
        if isinstance(value, (dict, list)):
            if id(value) in seen:
                continue
            seen.add(id(value))
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
    return sorted(out, key=repr)


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


@st.composite
def _structural(draw: st.DrawFn, doc: Any, recipe: list[str]) -> Any:
    """One change to the parsed document (in place); returns the document (a new one when the root changes)."""
    paths = _paths(doc)
    path = paths[draw(st.integers(0, len(paths) - 1))]
    op = draw(st.sampled_from(("swap", "number", "delete", "unknown", "nest", "string", "share", "recursive")))
    recipe.append(f"{op}@{'.'.join(map(str, path)) or '<root>'}")
    if op == "swap":
        new: Any = copy.deepcopy(draw(st.sampled_from(VALUES)))
    elif op == "number":
        new = draw(st.sampled_from(NUMBERS) | st.integers() | st.floats())
    elif op == "nest":
        new = f"@@NEST{draw(st.sampled_from((10, 63, 64, 65, 200, 5_000, 100_000)))}@@"
    elif op == "string":
        new = "k" * draw(st.sampled_from(STRING_SIZES))
    elif op == "delete":
        if not path:
            return doc
        parent = _parent(doc, path)
        del parent[path[-1]]
        return doc
    elif op == "unknown":
        parent = doc if not path else _parent(doc, path)
        if isinstance(parent, dict):
            parent[draw(st.sampled_from(("zz_unknown", "x-extra", "policy", "steps", "expect", "tool")))] = 1
        return doc
    elif op == "share":  # the same object twice: the YAML dumper writes an anchor and an alias
        other = paths[draw(st.integers(0, len(paths) - 1))]
        new = _parent(doc, other)[other[-1]] if other else doc
        if not path:
            return doc
    else:  # a list that holds itself: a recursive alias in YAML
        new = []
        new.append(new)
    if not path:
        return new
    _parent(doc, path)[path[-1]] = new
    return doc


def _bomb(levels: int) -> str:
    lines = ['x-l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"x-l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _dump(doc: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, default=str)
    if fmt == "jsonl" and isinstance(doc, dict) and isinstance(doc.get("steps"), list):
        header = {k: v for k, v in doc.items() if k != "steps"}
        return "\n".join(json.dumps(x, default=str) for x in (header, *doc["steps"])) + "\n"
    return str(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100))


def _nest(text: str, fmt: str) -> str:
    def deep(match: re.Match[str]) -> str:
        depth = int(match.group(1))
        return "[" * depth + "]" * depth if fmt != "yaml" or depth % 2 else "{a: " * depth + "1" + "}" * depth

    return NEST.sub(deep, text)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A hostile input derived from a bundled trace, scenario or preset."""
    recipe: list[str] = []
    name, doc = draw(st.sampled_from(_BASES))
    doc = copy.deepcopy(doc)
    recipe.append(name)
    policy_text: bytes | None = None
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("structural", "structural", "policy", "text")))
        if kind == "policy":
            preset, policy = draw(st.sampled_from(_POLICIES))
            policy = copy.deepcopy(policy)
            policy = draw(_structural(policy, recipe)) if draw(st.booleans()) else policy
            recipe.append(f"policy<{preset}>")
            if draw(st.booleans()) and isinstance(doc, dict):
                doc["policy"] = policy
            else:
                policy_text = _nest(_safe_dump(policy, "yaml"), "yaml").encode()
                if isinstance(doc, dict):
                    doc["policy"] = draw(st.sampled_from(("pol.yaml", "./pol.yaml", "../pol.yaml", "pol")))
        elif kind == "structural":
            doc = draw(_structural(doc, recipe))
    fmt = draw(st.sampled_from(("yaml", "yaml", "json", "jsonl")))
    text = _nest(_safe_dump(doc, fmt), fmt)
    fmt = fmt if not text.startswith("\0") else "yaml"
    text = text.lstrip("\0")
    data = text.encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(("tag", "bomb", "torn", "bytes", "duplicate")))
        recipe.append(op)
        data = _TEXT_OPS[op](draw, data)
    suffix = {"yaml": ".yaml", "json": ".json", "jsonl": ".jsonl"}[fmt]
    return Case(suffix, data, policy_text, " ".join(recipe))


def _safe_dump(doc: Any, fmt: str) -> str:
    try:
        return _dump(doc, fmt)
    except (ValueError, TypeError, RecursionError):  # a recursive structure has no JSON form: use YAML
        return "\0" + _dump(doc, "yaml")


def _tag(draw: st.DrawFn, data: bytes) -> bytes:
    lines = data.split(b"\n")
    spots = [i for i, line in enumerate(lines) if b": " in line]
    if not spots:
        return data
    i = spots[draw(st.integers(0, len(spots) - 1))]
    key, _, value = lines[i].partition(b": ")
    tag = draw(st.sampled_from(TAGS)).encode()
    lines[i] = key + b": " + tag + b" " + (value or b"x")
    return b"\n".join(lines)


def _bomb_op(draw: st.DrawFn, data: bytes) -> bytes:
    levels = draw(st.integers(2, 10))
    bomb = _bomb(levels).encode()
    lines = data.split(b"\n")
    spots = [i for i, line in enumerate(lines) if line.startswith(b"  ") and b": " in line]
    if spots and draw(st.booleans()):  # and use the biggest level somewhere inside
        i = spots[draw(st.integers(0, len(spots) - 1))]
        key, _, _ = lines[i].partition(b": ")
        lines[i] = key + f": *l{levels - 1}".encode()
    return bomb + b"\n".join(lines)


def _torn(draw: st.DrawFn, data: bytes) -> bytes:
    return data[: draw(st.integers(0, len(data)))]


def _bytes(draw: st.DrawFn, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    return data[:at] + draw(st.sampled_from(BAD_BYTES)) + data[at:]


def _duplicate(draw: st.DrawFn, data: bytes) -> bytes:
    lines = data.split(b"\n")
    i = draw(st.integers(0, len(lines) - 1))
    return b"\n".join([*lines[: i + 1], lines[i], *lines[i + 1:]])


_TEXT_OPS: dict[str, Callable[[st.DrawFn, bytes], bytes]] = {
    "tag": _tag, "bomb": _bomb_op, "torn": _torn, "bytes": _bytes, "duplicate": _duplicate,
}
_BASES = bases()
_POLICIES = policies()


def generate(seed_value: int, count: int, folder: Path) -> list[tuple[Path, str]]:
    """`count` cases drawn from `seed_value`, written under `folder`: (trace file, recipe) each."""
    written: list[tuple[Path, str]] = []

    @seed(seed_value)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def draw_one(case: Case) -> None:
        n = len(written)
        if n < count:
            written.append((case.write(folder / f"c{n:05d}", f"c{n:05d}"), case.recipe))

    draw_one()
    return written

