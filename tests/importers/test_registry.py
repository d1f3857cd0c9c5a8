"""The importer registry: built-ins, a team's module installed through a real `loopguard.importers` entry
point (the complete example in docs/import.md), classes registered in code, and the older
`loopguard_importers` hook (behind an entry point or passed to `available`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core.hookspecs import hookimpl
from pytest_loopguard.errors import LoopguardError, TraceError
from pytest_loopguard.importers import (
    IMPORTERS,
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
from pytest_loopguard.importers.sdk_formats import sdk_importers

DOC = Path(__file__).resolve().parents[2] / "docs" / "import.md"
# this module's formats, in detection order (other built-ins may come after them)
OWN = ["swe-agent", "mini-swe-agent-1", "mini-swe-agent-1.1", "openhands-v0", "openhands-v1",
       "magentic-one", "ag2-groupchat", "gemini-cli", "cline", "aider", "claude-code", "codex"]
BUILTIN = [i.name for i in builtin_importers()]


def doc_module() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    (module,) = [b for b in blocks if "class AcmeLog" in b]
    return module


def doc_entry_point() -> str:
    """The entry-point line docs/import.md gives for its module."""
    (toml,) = re.findall(r'```toml\n\[project\.entry-points\."loopguard\.importers"\]\n(.*?)\n```',
                         DOC.read_text(encoding="utf-8"), re.DOTALL)
    return toml.replace('"', "")


def install(site: Path, module: str, source: str, entry_points: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`module` (its `source`) installed in `site` as a distribution declaring `entry_points`."""
    (site / f"{module}.py").write_text(source, encoding="utf-8")
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[loopguard.importers]\n{entry_points}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    IMPORTERS.refresh()  # this process may have read the entry points already


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    """The importer registry as a test left it is read again afterwards: what it installed is gone."""
    yield
    for module in ("acme_importer", "acme_hooks"):
        sys.modules.pop(module, None)
    IMPORTERS.refresh()


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None) -> Path:
    """docs/import.md's module installed as a distribution with its `loopguard.importers` entry point."""
    install(tmp_path, "acme_importer", doc_module(), doc_entry_point(), monkeypatch)
    return tmp_path


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
    # in its own process: the script registers its class in the registry of the process that runs it
    done = subprocess.run([sys.executable, str(installed / "acme_importer.py")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr


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


HOOK_MODULE = '''
from pytest_loopguard.core.hookspecs import hookimpl
from acme_importer import AcmeLog


class AcmeOld(AcmeLog):
    name = "acme-old"


@hookimpl
def loopguard_importers():
    return [AcmeOld()]
'''


def test_the_older_hook_module_behind_an_entry_point_still_works(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None) -> None:
    (tmp_path / "acme_importer.py").write_text(doc_module(), encoding="utf-8")
    install(tmp_path, "acme_hooks", HOOK_MODULE, "acme_hooks = acme_hooks", monkeypatch)
    pool = available()
    assert [i.name for i in pool] == [*BUILTIN, "acme-old"]
    (run,) = import_runs(acme_log(tmp_path / "acme.jsonl"), fmt="acme-old", importers=pool)
    assert run.trace["name"] == "run-7"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("acme = acme_importer:Missing",
         "cannot load: AttributeError: module 'acme_importer' has no attribute 'Missing'"),
        ("acme = acme_importer:Iterator", "expected an Importer subclass or a module with IMPORTER, got "),
        ("acme-log = acme_importer:AcmeLog", "the class is named 'acme'; name the entry point after it"),
        ("otel = acme_importer:AcmeLog", "'otel' is a built-in importer; pick another name"),
    ],
)
def test_a_broken_entry_point_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None,
                                          entry: str, message: str) -> None:
    install(tmp_path, "acme_importer", doc_module(), entry, monkeypatch)
    name, value = entry.split(" = ")
    where = f"importer plugin '{name}' ({value}, entry point group loopguard.importers)"
    with pytest.raises(LoopguardError) as info:
        available()
    assert str(info.value).startswith(f"{where}: {message}") and "\n" not in str(info.value)
    assert [i.name for i in available()] == BUILTIN  # reported once: the built-ins stay usable


def test_a_registered_class_comes_after_the_builtins_and_is_detected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None) -> None:
    namespace: dict[str, object] = {}
    exec(compile(doc_module(), "acme_importer.py", "exec"), namespace)  # the page's own module
    acme = namespace["AcmeLog"]
    assert isinstance(acme, type) and issubclass(acme, Importer)
    registry = IMPORTERS.__class__("importer", Importer, "loopguard.importers.test", "IMPORTER",
                                   builtins={"openai-chat": "pytest_loopguard.importers.openai_chat:ChatImporter"})
    assert registry.register(acme) is acme
    assert list(registry.classes()) == ["openai-chat", "acme"]
    log = acme_log(tmp_path / "acme.jsonl")
    assert detect(Source.from_path(log), [cls() for cls in registry.classes().values()]).name == "acme"
    with pytest.raises(TypeError, match="expected a subclass of Importer"):
        registry.register(ImportedRunBuilder)


def test_the_sdk_formats_keep_their_detection_order() -> None:
    sdk = [i.name for i in sdk_importers()]
    assert BUILTIN[-len(sdk):] == sdk  # last: the coding agents' own logs (Cline's is Anthropic-style) come first
