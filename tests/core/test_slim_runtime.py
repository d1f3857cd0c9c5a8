"""The slim runtime: what an agent embeds works with none of the `pytest` extra's packages installed.

`pip install pytest-loopguard` installs pluggy, PyYAML and bashlex only (pyproject.toml); pytest, hypothesis,
faker and tabulate come with `pip install 'pytest-loopguard[pytest]'`. Each check runs in a fresh interpreter
whose import system refuses those packages, as an install without the extra would: the runtime's every module
imports and runs, and what does need the extra says so in one line naming it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_loopguard.errors import EXTRA_MODULES, MissingExtraError, needs_extra

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_loopguard"
INSTALL = "pip install 'pytest-loopguard[pytest]'"

# What an agent embeds: the values, the engines, the policy and Guard, the live session, recorder and adapters,
# trace I/O and the importers. None of their modules is pytest-only.
RUNTIME_PACKAGES = ("core", "engines", "runtime", "live", "io", "importers")
PYTEST_ONLY: frozenset[str] = frozenset()  # a runtime module that may need the extra (none so far)

# Installed first in the child: an import of a refused package fails as if it were not installed (and the
# blocked names are recorded, so a check can tell "not imported" from "imported and refused").
BLOCK = """
import sys

REFUSED = set({refused!r})
asked = []


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in REFUSED:
            asked.append(name)
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


assert not REFUSED & set(sys.modules), sorted(REFUSED & set(sys.modules))
sys.meta_path.insert(0, NotInstalled())
"""

EMBED = """
import importlib
import json
import tempfile
from pathlib import Path

import pytest_loopguard
from pytest_loopguard import Guard, Session, ToolCall, ToolResult, load, load_file, replay, resolve_policy
from pytest_loopguard.core._expect import check
from pytest_loopguard.live._adapters import openai_response

for name in {modules!r}:
    importlib.import_module(name)

# a Guard (README, "Guarding a live agent"): the 4th identical read in a row is blocked
guard = Guard(resolve_policy("default"))
read = ToolCall.of("read_file", {{"path": "src/app.py"}})
for attempt in range(1, 6):
    decision = guard.before_call(read)
    if not decision.runs:
        break
    decision = guard.after_call(read, ToolResult(text="def main(): ..."), decision)
guard_seen = [attempt, decision.action]

# a recorded Session of the same failing command, fed through the OpenAI adapter, then its recording replayed
path = Path(tempfile.mkdtemp()) / "live.jsonl"
reply = {{"choices": [{{"message": {{"role": "assistant", "content": None, "tool_calls": [
    {{"id": "c1", "type": "function", "function": {{"name": "run", "arguments": '{{"cmd": "pytest -x"}}'}}}}]}}}}],
    "usage": {{"prompt_tokens": 100, "completion_tokens": 12}}}}
with Session("default", record=path, now_ms=None) as session:
    while not session.ended:
        session.before_llm()
        turn = openai_response(reply)
        session.llm_result(turn.llm, turn.tool_calls)
        for c in turn.calls:
            decision = session.before_call(c.call)
            session.after_call(c.call, ToolResult(ok=False, text="1 failed", exit_code=1) if decision.runs else None)
again = replay(load(path))
live = [[s.action for s in session.steps], session.outcome, session.stopped_by]
replayed = [[s.action for s in again.steps], again.outcome, again.stopped_by]

# the bundled traces (not the simulated scenarios): each replays to the verdicts it expects
mismatched, replayed_traces = [], 0
for file in sorted(Path({traces!r}).glob("*/*.yaml")):
    for trace in load_file(file):
        if trace.mode == "replay":
            replayed_traces += 1
            mismatched += [f"{{file}}: {{m}}" for m in check(replay(trace))]

print(json.dumps({{"asked": asked, "loaded": sorted(m for m in sys.modules if m.partition(".")[0] in REFUSED),
                  "guard": guard_seen, "live": live, "replayed": replayed, "traces": replayed_traces,
                  "mismatched": mismatched}}))
"""


def runtime_modules() -> list[str]:
    """Every module of the runtime packages, read from the files (a new module is checked without a list)."""
    names = []
    for sub in RUNTIME_PACKAGES:
        for path in sorted((PACKAGE / sub).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            if name not in PYTEST_ONLY:
                names.append(name)
    return names


def run_without(refused: frozenset[str] | set[str], code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter (after BLOCK), in the repo root, with `args` as its argv."""
    source = BLOCK.format(refused=sorted(refused)) + code
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    return subprocess.run([sys.executable, "-c", source, *args], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=300)


def test_the_runtime_imports_and_runs_without_the_pytest_extra() -> None:
    modules = runtime_modules()
    assert len(modules) > 50 and "pytest_loopguard.runtime._guard" in modules  # the walk found the runtime
    out = run_without(EXTRA_MODULES, EMBED.format(modules=modules, traces=str(ROOT / "traces")))
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["loaded"] == []
    assert seen["guard"] == [4, "block"]
    assert seen["live"] == seen["replayed"] and seen["live"][1] == "stopped"
    assert seen["traces"] > 100 and seen["mismatched"] == []


def test_a_runtime_module_that_imports_an_extra_fails_the_check(tmp_path: Path) -> None:
    """The block is real: a module that imports tabulate (as the bench's tables do) fails to import."""
    out = run_without(EXTRA_MODULES, EMBED.format(modules=["pytest_loopguard.bench._replay"], traces=str(tmp_path)))
    assert out.returncode != 0
    assert "No module named 'tabulate'" in out.stderr


def test_strategies_without_hypothesis_name_the_extra() -> None:
    out = run_without({"hypothesis"}, "import pytest_loopguard.strategies\n")
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last == (
        "pytest_loopguard.errors.MissingExtraError: pytest_loopguard.strategies needs hypothesis, which comes"
        f" with the pytest extra: {INSTALL}"
    )


CLI = "import sys\nfrom pytest_loopguard.cli._main import main\nsys.exit(main(sys.argv[1:]))\n"


def test_the_timeline_without_tabulate_is_one_line_naming_the_extra() -> None:
    out = run_without(EXTRA_MODULES, CLI, "replay", "traces/loop_guard/branch_consecutive.yaml")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (
        f"loopguard: error: loopguard's table output needs tabulate, which comes with the pytest extra: {INSTALL}\n"
    )


def test_a_simulated_browser_without_faker_is_one_bad_file_naming_the_extra() -> None:
    scenario = "traces/scenarios/poll-static-page-spacebot.yaml"
    out = run_without(EXTRA_MODULES, CLI, "run", scenario, "traces/loop_guard/branch_consecutive.yaml")
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines() == [
        f"loopguard: error: {scenario}: a simulated browser page needs faker, which comes with the pytest extra:"
        f" {INSTALL}",
        "loopguard: 1 bad input",
    ]
    assert "loopguard: 1 traces replayed, 0 mismatched" in out.stdout  # the other file still ran


def test_the_plugin_autoloads_in_a_slim_install_without_breaking_pytest(tmp_path: Path) -> None:
    """An agent's own test suite, with pytest and the runtime but not the extra: pytest loads the plugin (the
    entry point is registered either way); its tests and the trace files replay, hypothesis-style."""
    (tmp_path / "test_agent.py").write_text(
        "from pytest_loopguard import Guard, ToolCall, resolve_policy\n\n\n"
        "def test_agent():  # the agent's own test of its guarded loop\n"
        "    guard = Guard(resolve_policy('default'))\n"
        "    assert guard.before_call(ToolCall.of('read_file', {'path': 'a.py'})).runs\n",
        encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\nloopguard_paths = traces\n", encoding="utf-8")
    (tmp_path / "traces").mkdir()
    trace = ROOT / "traces" / "loop_guard" / "branch_consecutive.yaml"
    (tmp_path / "traces" / trace.name).write_text(trace.read_text(encoding="utf-8"), encoding="utf-8")
    # entry-point plugins off (faker and hypothesis ship their own, absent from a slim install); ours by name
    argv = ["-p", "pytest_loopguard.pytest.plugin", "-q", str(tmp_path)]
    code = f"import sys, pytest\nsys.exit(pytest.main({argv!r}))"
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    source = BLOCK.format(refused=sorted(EXTRA_MODULES - {"pytest", "_pytest"})) + code
    out = subprocess.run([sys.executable, "-c", source], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "2 passed" in out.stdout


def test_needs_extra_leaves_other_import_errors_alone() -> None:
    with pytest.raises(ModuleNotFoundError) as caught, needs_extra("a feature"):
        import a_module_nobody_ships  # type: ignore[import-not-found]  # noqa: F401
    assert type(caught.value) is ModuleNotFoundError


def test_missing_extra_is_a_loopguard_error_and_an_import_error() -> None:
    with pytest.raises(MissingExtraError) as caught, needs_extra("a feature"):
        raise ModuleNotFoundError("No module named 'faker.providers'", name="faker.providers")
    assert caught.value.name == "faker"
    assert str(caught.value) == f"a feature needs faker, which comes with the pytest extra: {INSTALL}"


def test_a_table_tabulate_would_render_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_loopguard.report._console import fit_table

    assert fit_table([["plain", "1"]], ["name", "count"]) == "name    count\n------  -------\nplain   1"  # no tabulate
    monkeypatch.setitem(sys.modules, "tabulate", None)  # what `import tabulate` meets when it is not installed
    with pytest.raises(MissingExtraError, match=r"^loopguard's table output needs tabulate, .*\[pytest\]'$"):
        fit_table([["é — wide", "1"]], ["name", "count"])
