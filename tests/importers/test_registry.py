"""The importer registry: built-ins, plugins through the `loopguard_importers` hook, and a team's module
installed through a real `loopguard.importers` entry point (the complete example in docs/import.md)."""

from __future__ import annotations

import json
import re
import runpy
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.errors import TraceError
from pytest_loopguard.importers import (
    ImportedRun,
    Importer,
    Source,
    available,
    builtin_importers,
    detect,
    get,
    import_runs,
)
from pytest_loopguard.importers.build import ImportedRunBuilder

DOC = Path(__file__).resolve().parents[2] / "docs" / "import.md"
# this module's formats, in detection order (other built-ins may come after them)
OWN = ["swe-agent", "mini-swe-agent-1", "mini-swe-agent-1.1", "openhands-v0", "openhands-v1",
       "magentic-one", "ag2-groupchat"]
BUILTIN = [i.name for i in builtin_importers()]


def doc_module() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    (module,) = [b for b in blocks if "class AcmeLog" in b]
    return module


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """docs/import.md's module installed as a distribution with a `loopguard.importers` entry point."""
    (tmp_path / "acme_importer.py").write_text(doc_module(), encoding="utf-8")
    info = tmp_path / "acme_importer-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-importer\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[loopguard.importers]\nacme = acme_importer\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("acme_importer", None)


def acme_log(path: Path) -> Path:
    rows = [{"acme_run": "run 7"}, {"tool": "search", "input": {"q": "x"}, "output": "none", "ok": False},
            {"tool": "open", "input": {"url": "https://example.com"}, "output": "page"}]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def test_builtin_names_and_detection_order() -> None:
    assert BUILTIN[: len(OWN)] == OWN
    assert len(set(BUILTIN)) == len(BUILTIN)
    assert all(i.description for i in builtin_importers())


def test_entry_point_module_from_the_docs(installed: Path, tmp_path: Path) -> None:
    pool = available()
    assert [i.name for i in pool] == [*BUILTIN, "acme"]
    log = acme_log(tmp_path / "acme.jsonl")
    assert detect(Source.from_path(log), pool).name == "acme"
    (run,) = import_runs(log, importers=pool)
    assert run.trace["name"] == "run-7"
    steps = run.trace["steps"]
    assert [s["tool"] for s in steps] == ["search", "open"]
    assert steps[0]["result"] == {"error": "none", "text": "none"} and steps[0]["source"]["index"] == 2
    assert cli.main(["import", "--from", "acme", str(log), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "run-7.yaml").exists()


def test_the_docs_module_runs_as_a_script(installed: Path) -> None:
    runpy.run_path(str(installed / "acme_importer.py"), run_name="__main__")


class _Shadow(Importer):
    name = "swe-agent"
    description = "claims a built-in name"

    def sniff(self, source: Source) -> bool:
        return True

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        yield ImportedRunBuilder("x", file=source.name).build()


def test_a_plugin_cannot_take_a_builtin_name() -> None:
    plugin = types.SimpleNamespace(loopguard_importers=hookimpl(lambda: [_Shadow()]))
    pool = available(plugins=[plugin])
    assert [i.name for i in pool] == BUILTIN
    assert not any(isinstance(i, _Shadow) for i in pool)


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(TraceError, match="unknown format 'nope'; expected one of ag2-groupchat, ") as info:
        get("nope", available())
    assert all(name in str(info.value) for name in OWN)


def test_unrecognised_and_truncated_files(tmp_path: Path) -> None:
    pool = available()
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(TraceError, match=r"other\.json: no importer recognises this file; expected an agent log"):
        detect(Source.from_path(other), pool)
    cut = tmp_path / "cut.json"
    cut.write_text('{"trajectory": [\n{"action": "ls"', encoding="utf-8")
    with pytest.raises(TraceError, match=r"cut\.json:2: invalid JSON .*expected a complete JSON document"):
        detect(Source.from_path(cut), pool)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TraceError, match=r"bin\.json: not UTF-8 text"):
        detect(Source.from_path(binary), pool)
    empty = tmp_path / "empty.jsonl"
    empty.write_text(" \n\n", encoding="utf-8")
    with pytest.raises(TraceError, match=r"empty\.jsonl: the file is empty; expected an agent log in one of: swe"):
        detect(Source.from_path(empty), pool)


def test_a_broken_jsonl_row_is_named_by_its_line(tmp_path: Path) -> None:
    row = {"instance_id": "x", "instruction": "do it", "history": [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "do it"}}]}
    log = tmp_path / "output.jsonl"
    log.write_text(json.dumps(row) + "\n\n" + json.dumps(row)[:40] + "\n", encoding="utf-8")
    source = Source.from_path(log)
    assert source.is_jsonl and source.first_row == row
    with pytest.raises(TraceError, match=r"output\.jsonl:3: invalid JSON on this line .*expected one JSON object"):
        import_runs(source)
