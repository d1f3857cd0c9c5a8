"""The replay core's layers (issue 11): model → engine contract → engines → policy → runtime → replay, none back up.

Read from the import statements themselves (module level and inside functions alike), so an import added
anywhere in a core module is checked; imports under `if TYPE_CHECKING:` are annotations only and may name a
higher layer (`runcontext` names `Engine` and `Policy` in its annotations).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "pytest_loopguard"

# Each module of the replay core and its layer: a module may import its own layer and those below it.
LAYERS: dict[str, int] = {
    # what engines may read: values, the conversation, tool tables, the run context and its turns
    **dict.fromkeys(["core._identity", "core._model", "core._conversation", "core._classify", "core._targets",
                     "core._runcontext", "core._limits", "core._shell", "errors", "core._safeload"], 0),
    # the engine contract
    **dict.fromkeys(["core.hookspecs", "engines.base", "engines.lru"], 1),
    # the engines
    **dict.fromkeys(["engines", "engines.loop_guard", "engines.read_tracker", "engines.failure_tracker",
                     "engines.budget", "engines.dedup", "engines.context", "engines.stuck_detector"], 2),
    "runtime._policy": 3,  # resolves engine names and checks their settings
    "runtime._guard": 4,
    "runtime._protocol": 5,  # the run protocol: the order of the Guard's calls, how a run ends
    "runtime._replay": 6,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The package modules a relative or absolute `from … import …` names (a name that is a module counts as one)."""
    if node.level:
        base = module.split(".") if module else []
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, *([node.module] if node.module else [])])
    elif node.module and node.module.startswith("pytest_loopguard"):
        target = node.module.removeprefix("pytest_loopguard").lstrip(".")
    else:
        return []
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}" if target else alias.name
        is_module = (PACKAGE / (sub.replace(".", "/") + ".py")).exists() or (PACKAGE / sub.replace(".", "/")).is_dir()
        out.append(sub if is_module else target)
    return out


def arrows() -> list[tuple[str, str, bool]]:
    """(importer, imported, under TYPE_CHECKING) for every import between two core modules."""
    found: list[tuple[str, str, bool]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        if module not in LAYERS:
            continue

        def visit(node: ast.AST, typing_only: bool, module: str = module, path: Path = path) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    for stmt in child.body:
                        visit_one(stmt, True, module, path)
                    for stmt in child.orelse:
                        visit_one(stmt, typing_only, module, path)
                else:
                    visit_one(child, typing_only, module, path)

        def visit_one(node: ast.AST, typing_only: bool, module: str, path: Path) -> None:
            if isinstance(node, ast.ImportFrom):
                found.extend((module, t, typing_only) for t in imported(module, path.name == "__init__.py", node)
                             if t in LAYERS)
            elif isinstance(node, ast.Import):
                found.extend((module, a.name.removeprefix("pytest_loopguard."), typing_only) for a in node.names
                             if a.name.removeprefix("pytest_loopguard.") in LAYERS)
            else:
                visit(node, typing_only)

        visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_every_core_module_is_placed_in_a_layer() -> None:
    for name in LAYERS:
        assert (PACKAGE / (name.replace(".", "/") + ".py")).exists() or (PACKAGE / name / "__init__.py").exists(), name
    engines = {module_name(p) for p in (PACKAGE / "engines").glob("*.py")}
    assert engines <= set(LAYERS), engines - set(LAYERS)


def test_no_import_runs_back_up_the_layers() -> None:
    found = arrows()
    # it reads the imports it should
    assert ("runtime._guard", "engines", False) in found and ("engines.context", "core.hookspecs", False) in found
    up = sorted({(a, b) for a, b, typing_only in found if not typing_only and LAYERS[b] > LAYERS[a]})
    assert up == []


def test_only_annotations_name_a_higher_layer() -> None:
    typing_up = sorted({(a, b) for a, b, typing_only in arrows() if typing_only and LAYERS[b] > LAYERS[a]})
    assert typing_up == [("core._runcontext", "engines.base"), ("core._runcontext", "runtime._policy")]
