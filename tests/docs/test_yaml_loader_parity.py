"""libyaml's CSafeLoader and the pure-Python SafeLoader (traceio's fallback) read every bundled YAML alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_blocks import ROOT, all_blocks

from pytest_loopguard.io import _format as traceio

# Every YAML file the project ships or collects: the trace corpus, the presets, any policy files.
YAML_FILES = sorted(
    p for p in ROOT.rglob("*.y*ml")
    if p.suffix in (".yaml", ".yml") and not {".venv", ".git", "node_modules"} & set(p.relative_to(ROOT).parts)
)
DOC_BLOCKS = all_blocks("yaml")
LOADERS = {"libyaml": getattr(yaml, "CSafeLoader", None), "pure": yaml.SafeLoader}


def _load(text: str, loader: Any) -> Any:
    try:
        return list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as exc:
        return f"{type(exc).__name__}: {exc}"


def _traces(text: str, loader: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    # traceio's own reading path (documents, then nodes for line numbers) under the given loader
    monkeypatch.setattr(traceio, "_Loader", loader)
    return [traceio.dumps(t) for t in traceio.loads(text)]


def test_libyaml_is_present_so_both_loaders_are_compared() -> None:
    assert LOADERS["libyaml"] is not None, "PyYAML without libyaml: CSafeLoader missing, parity cannot be checked"
    assert len(YAML_FILES) > 50 and any(p.parent.name == "presets" for p in YAML_FILES)


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_bundled_yaml_file_loads_alike(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text(encoding="utf-8")
    fast, pure = (_load(text, loader) for loader in LOADERS.values())
    assert pure == fast, f"{path.relative_to(ROOT)}: the pure-Python loader reads it differently: {pure!r}"
    assert not isinstance(fast, str), f"{path.relative_to(ROOT)}: {fast}"
    if path.is_relative_to(ROOT / "traces") and path.name != "loopguard-corpus.yaml":  # a trace, not the manifest
        assert _traces(text, yaml.SafeLoader, monkeypatch) == _traces(text, LOADERS["libyaml"], monkeypatch)


@pytest.mark.parametrize("block", DOC_BLOCKS, ids=lambda b: b.where)
def test_doc_yaml_example_loads_alike(block: Any) -> None:
    fast, pure = (_load(block.body, loader) for loader in LOADERS.values())
    assert pure == fast, f"{block.where}: the pure-Python loader reads it differently: {pure!r}"
