"""The package's layers (docs/architecture.md): every module has one, imports only its own and lower ones, and no
import circle exists between modules.

Read from the import statements themselves, at module level and inside functions alike, so an import added
anywhere is checked. Imports under `if TYPE_CHECKING:` are annotations only and are not edges. Neither are
the names a package's `__init__` resolves when first read (`pytest_loopguard._lazy`) nor the engine modules the
registry imports by name: those load after the importing module has finished.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
PACKAGES = {"pytest_loopguard": REPO / "pytest_loopguard",
            "loopguard_simulators": REPO / "simulators" / "loopguard_simulators"}

# The layers, lowest first: a module belongs to the layer of the longest prefix below that names it (a prefix
# names itself and the modules under it; "pytest_loopguard" names the package root alone, so a new flat module
# has no layer until it is given one).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # the package root (its version and lazy public names), errors, which build is installed and mypyc's options
    ("base", ("pytest_loopguard", "pytest_loopguard._lazy", "pytest_loopguard.errors", "pytest_loopguard.buildinfo",
              "pytest_loopguard._mypyc")),
    # values, identity, classification, the run context, expectations, the engine hook contract, safe reading
    ("core", ("pytest_loopguard.core",)),
    ("engines", ("pytest_loopguard.engines",)),
    # policies, the Guard, replay
    ("runtime", ("pytest_loopguard.runtime",)),
    # trace files, and running one: io/_runner runs a scenario file through the simulators, which read
    # trace mappings with io/_format, so the two share a layer
    ("io", ("pytest_loopguard.io", "loopguard_simulators")),
    ("importers", ("pytest_loopguard.importers",)),
    # what a live agent embeds beside the Guard
    ("live", ("pytest_loopguard.live",)),
    # the Guard inside agent frameworks: each module drives a live Session from its framework's hook points
    ("integrations", ("pytest_loopguard.integrations",)),
    ("eval", ("pytest_loopguard.eval",)),
    # corpus packages: manifests, checksums, archives, discovery; they load traces (io), import logs, look for
    # unredacted secrets with live's rules and check labels with eval's
    ("corpora", ("pytest_loopguard.corpora",)),
    ("report", ("pytest_loopguard.report",)),
    # `loopguard scan`'s finding, import-in-memory, replay and loop grouping (its report renders with report's
    # tables)
    ("scan", ("pytest_loopguard.scan",)),
    ("bench", ("pytest_loopguard.bench",)),
    ("cli", ("pytest_loopguard.cli",)),
    ("pytest", ("pytest_loopguard.pytest", "pytest_loopguard.strategies")),
]
RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}


def modules() -> dict[str, tuple[Path, bool]]:
    """Every module of both packages: dotted name → (file, whether it is a package's `__init__`)."""
    found = {}
    for top, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            parts = [top, *path.relative_to(root).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (path, is_package)
    return found


MODULES = modules()


def names(prefix: str, module: str) -> bool:
    return module == prefix or (prefix != "pytest_loopguard" and module.startswith(prefix + "."))


def layer_of(module: str) -> str | None:
    """The layer of the longest prefix that names `module`."""
    best: tuple[int, str] | None = None
    for layer, prefixes in LAYERS:
        for prefix in prefixes:
            if names(prefix, module) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), layer)
    return None if best is None else best[1]


def targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules of both packages an import statement names (`from P import m` names P.m when m is a module)."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names if a.name.split(".")[0] in PACKAGES)
        return
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    if target.split(".")[0] not in PACKAGES:
        return
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        yield sub if sub in MODULES else target


@functools.cache  # parsed when a test asks: not at collection, in every xdist worker
def runtime_imports() -> frozenset[tuple[str, str]]:
    """(importer, imported) for every import between two modules that runs, at module level or in a function."""
    edges: set[tuple[str, str]] = set()
    for module, (path, is_package) in MODULES.items():

        def visit(node: ast.AST, module: str = module, is_package: bool = is_package) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    for stmt in child.orelse:
                        visit(stmt)
                elif isinstance(child, (ast.Import, ast.ImportFrom)):
                    edges.update((module, t) for t in targets(module, is_package, child) if t != module)
                else:
                    visit(child)

        visit(ast.parse(path.read_text(encoding="utf-8")))
    return frozenset(edges)


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The import circles: each strongly connected group of two or more modules (Tarjan), as one circle through it."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [circle(sorted(group), graph) for group in sorted(groups)]


def circle(group: list[str], graph: dict[str, list[str]]) -> list[str]:
    """A shortest path from the group's first module back to itself, within the group: the circle to name."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in graph[v]:
                if w == start:
                    return [*paths[v], start]
                if w in members and w not in paths:
                    paths[w] = [*paths[v], w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no circle through {group}")  # pragma: no cover - a strongly connected group has one


def test_every_module_is_placed_in_a_layer() -> None:
    unplaced = sorted(m for m in MODULES if layer_of(m) is None)
    assert unplaced == []
    # every prefix names something that exists, so a renamed subpackage cannot leave its layer empty
    for layer, prefixes in LAYERS:
        for prefix in prefixes:
            assert any(names(prefix, m) for m in MODULES), (layer, prefix)


def test_no_import_climbs_the_layers() -> None:
    imports = runtime_imports()
    # it reads the imports it should: module level, inside a function, relative and absolute
    assert ("pytest_loopguard.runtime._dispatch", "pytest_loopguard.engines") in imports
    assert ("pytest_loopguard.io._runner", "loopguard_simulators.scenario") in imports  # inside a function
    assert ("pytest_loopguard.pytest.plugin", "pytest_loopguard.pytest._fixtures") in imports
    assert ("pytest_loopguard.report._document", "pytest_loopguard") in imports  # `from .. import __version__`
    assert ("pytest_loopguard", "pytest_loopguard.live._session") not in imports  # under `if TYPE_CHECKING:` only
    placed = [(a, b, layer_of(a), layer_of(b)) for a, b in imports]
    up = sorted(f"{a} ({la}) imports {b} ({lb})" for a, b, la, lb in placed
                if la is not None and lb is not None and RANK[lb] > RANK[la])
    assert up == []


def test_no_import_circle() -> None:
    found = [" -> ".join(c) for c in cycles(set(runtime_imports()))]
    assert found == [], "import circles (function-level imports included):\n" + "\n".join(found)


@pytest.mark.parametrize(("edges", "expected"), [
    ({("a", "b"), ("b", "c")}, []),
    ({("a", "b"), ("b", "a"), ("b", "c")}, [["a", "b", "a"]]),
    ({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d")}, [["a", "b", "c", "a"], ["d", "e", "d"]]),
])
def test_the_circle_search_finds_every_circle(edges: set[tuple[str, str]], expected: list[list[str]]) -> None:
    assert cycles(edges) == expected
