"""Every fenced block in README.md and docs/**/*.md does what the page says, run the way a reader would run it.

- ```python: a page's python blocks, in order, form one module (a later block uses an earlier one's imports),
  each block at its own line number so a traceback's line is the page's line. A page that defines `test_`
  functions runs under pytest (pytester, in a subprocess, without this repo's conftest); any other page runs as
  a script. Both run in a temporary copy of the repo's traces, docs, tests, README and pyproject, with `../shared`
  linked beside it as in a checkout.
- ```yaml: a complete trace (top-level `loopguard:`); it loads, and when it carries expectations it replays
  (or simulates) to them. A partial snippet is fenced ```yaml-fragment.
- ```console: each `$ loopguard ...` line runs through `cli.main` in that copy, in order; it must exit 0, or
  the code a trailing `# exit N` comment names. Other commands (pip, python -m pytest) are not run.
- ```json: parses. Every other language (text, yaml-fragment, toml, ini, ...) is prose; a fence needs one.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_blocks import ROOT, Block, all_blocks, blocks, markdown_files, prose

from pytest_loopguard.cli import _main as cli
from pytest_loopguard.core._expect import check
from pytest_loopguard.core._model import Trace
from pytest_loopguard.io._format import load_file, loads
from pytest_loopguard.io._runner import execute

pytest_plugins = ["pytester"]

EXECUTED = ("python", "yaml", "console", "json")
# what the examples may name, relative to the root (the tests' fixtures too); the package is installed
MIRRORED = ("traces", "labels", "docs", "tests", "README.md", "pyproject.toml")
SHARED = ROOT.parent / "shared"  # read-only material beside the repo (CI clones it there too)
PAGES_WITH_PYTHON = [p for p in markdown_files() if any(b.lang == "python" for b in blocks(p))]
# pages whose examples start the real Claude Code CLI (about a second a run): in the slow set
STARTS_CLAUDE_CODE = [p for p in PAGES_WITH_PYTHON if "MessagesAPI(" in p.read_text(encoding="utf-8")]


def _page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def mirror(into: Path) -> Path:
    """`into/repo`: a copy of what examples read from the repo root, so an example that writes files writes
    there; beside it `into/shared` links to the shared corpus, which examples name as `../shared/...`."""
    repo = into / "repo"
    repo.mkdir()
    for name in MIRRORED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy(source, repo / name)
    if SHARED.is_dir():
        (into / "shared").symlink_to(SHARED, target_is_directory=True)
    return repo


def page_module(path: Path) -> str:
    """The page's python blocks as one module, each block's code on the same lines as in the page."""
    lines: list[str] = []
    for block in (b for b in blocks(path) if b.lang == "python"):
        first = block.line  # the fence is on block.line, the code starts on the next line
        lines.extend([""] * (first - len(lines)))
        lines.extend(block.body.splitlines())
    return "\n".join(lines) + "\n"


def test_every_fence_names_its_language() -> None:
    bare = [b.where for p in markdown_files() for b in blocks(p) if not b.lang]
    assert bare == [], (
        "fences without a language (```text for output and prose, ```console for `$ ` commands, "
        f"```yaml-fragment for partial YAML): {bare}"
    )


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p in STARTS_CLAUDE_CODE else p
                                  for p in PAGES_WITH_PYTHON], ids=_page_id)
def test_python_examples_run(page: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    root = mirror(pytester.path)
    monkeypatch.chdir(root)  # pytester's subprocess runs in the current folder
    source = page_module(page)
    # named after the page: a traceback's `test_docs_x_md.py:35` is line 35 of docs/x.md
    module = root / ("test_" + re.sub(r"\W", "_", _page_id(page)) + ".py")
    module.write_text(source, encoding="utf-8")
    if re.search(r"^def test_", source, re.M):
        result = pytester.runpytest_subprocess(module.name, "-p", "no:cacheprovider", "-p", "no:xdist",
                                               "-W", "error::pytest.PytestUnknownMarkWarning")
        outcomes = result.parseoutcomes()
        tests = len(re.findall(r"^def test_", source, re.M))
        assert outcomes.get("passed") == tests and set(outcomes) <= {"passed", "warnings"}, (
            f"{_page_id(page)}: its python examples, run as a pytest module ({module.name} lines are the page's "
            f"lines), gave {outcomes}:\n{result.stdout.str()[-4000:]}"
        )
        return
    done = subprocess.run([sys.executable, module.name], cwd=root, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, (
        f"{_page_id(page)}: its python examples, run as a script ({module.name} lines are the page's lines), "
        f"exited {done.returncode}:\n{done.stderr[-4000:]}"
    )


def _has_expectations(trace: Trace) -> bool:
    return trace.expect is not None or any(s.expect is not None for s in trace.steps) or trace.mode == "simulate"


@pytest.mark.parametrize("block", all_blocks("yaml"), ids=lambda b: b.where)
def test_yaml_examples_are_traces_that_hold(block: Block, tmp_path: Path) -> None:
    assert re.search(r"^loopguard:", block.body, re.M), (
        f"{block.where}: a ```yaml block is a complete trace (top-level `loopguard: 1`); "
        "fence a partial one as ```yaml-fragment"
    )
    root = mirror(tmp_path)
    # named as a file in the corpus would be, so a relative policy file resolves as it would there
    traces = loads(block.body, path=str(root / "traces" / f"doc-example-{block.line}.yaml"))
    for trace in traces:
        if _has_expectations(trace):
            mismatches = check(execute(trace))
            assert mismatches == [], f"{block.where}: trace {trace.name}: " + "; ".join(map(str, mismatches))


@pytest.mark.parametrize("block", all_blocks("json"), ids=lambda b: b.where)
def test_json_examples_parse(block: Block) -> None:
    try:
        json.loads(block.body)
    except json.JSONDecodeError as exc:
        pytest.fail(f"{block.where}: line {block.line + exc.lineno}: {exc.msg} (fence a partial one as ```text)")


def _commands(block: Block) -> list[tuple[int, list[str], int]]:
    """The `$ loopguard ...` lines of a console block: (page line, argv, expected exit status)."""
    found = []
    for offset, line in enumerate(block.body.splitlines(), start=1):
        if not line.startswith("$ "):
            continue
        command, _, comment = line[2:].partition(" #")
        argv = shlex.split(command)
        if argv and argv[0] == "loopguard":
            status = re.search(r"\bexit (\d+)", comment)
            found.append((block.line + offset, argv[1:], int(status.group(1)) if status else 0))
    return found


@pytest.mark.parametrize("block", all_blocks("console"), ids=lambda b: b.where)
def test_console_examples_exit_as_shown(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(mirror(tmp_path))
    for line, argv, expected in _commands(block):
        status = cli.main(argv)
        out, err = capsys.readouterr()
        assert status == expected, (
            f"{block.path.relative_to(ROOT)}:{line}: `loopguard {shlex.join(argv)}` exited {status}, "
            f"expected {expected}:\n{err[-2000:] or out[-2000:]}"
        )


def test_test_ids_in_the_prose_name_real_traces() -> None:
    # `traces/x.yaml::name` in a sentence is a test id a reader will paste: the file and the trace must exist
    wrong = []
    for page in markdown_files():
        for number, line in enumerate(prose(page).splitlines(), start=1):
            for path, name in re.findall(r"`(traces/[^`\s:]+)::([^`\s\[]+)`", line):
                file = ROOT / path
                names = [t.name for t in load_file(file)] if file.is_file() else []
                if name not in names:
                    wrong.append(f"{_page_id(page)}:{number}: {path}::{name}")
    assert wrong == [], f"test ids naming no trace: {wrong}"


def test_every_markdown_file_a_page_names_is_in_the_repo() -> None:
    # the project's design notes (PRESETS.md, DESIGN.md, FORMATS.md) are not shipped: a page says what they say
    missing = []
    for page in markdown_files():
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            # link targets resolve from the page; a bare NOTES.md-style name from the root or docs/
            for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", line):
                if not (page.parent / target).is_file():
                    missing.append(f"{_page_id(page)}:{number}: {target}")
            for name in re.findall(r"(?<![\w/.-])([A-Z][A-Z_]+\.md)\b", line):
                if not any((base / name).is_file() for base in (ROOT, ROOT / "docs")):
                    missing.append(f"{_page_id(page)}:{number}: {name}")
    assert missing == [], f"pages name Markdown files that are not in the repo: {missing}"


def test_preset_sources_cite_files_in_the_repo() -> None:
    presets = sorted((ROOT / "pytest_loopguard" / "presets").glob("*.yaml"))
    cited = {p.name: re.findall(r"\b[A-Z]+\.md\b", p.read_text(encoding="utf-8")) for p in presets}
    assert {name: files for name, files in cited.items() if files} == {}
