"""The package's and each subpackage's public names are exactly what its `__init__` exports (an accidental export
fails here), each the object its module defines, and none of them is imported before it is read."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import pytest_loopguard

INTENDED = [
    "NOT_REACHED",
    "Action",
    "Clock",
    "Decision",
    "Guard",
    "LoopguardError",
    "LoopguardWarning",
    "Outcome",
    "Policy",
    "PolicyError",
    "Recorder",
    "RedactionError",
    "Redactor",
    "ReplayResult",
    "ScenarioError",
    "Session",
    "SessionError",
    "StepResult",
    "ToolCall",
    "ToolReply",
    "ToolResult",
    "Trace",
    "TraceError",
    "Verdict",
    "compiled",
    "dump",
    "dumps",
    "load",
    "load_file",
    "replay",
    "resolve_policy",
]


def test_all_is_the_intended_sorted_list() -> None:
    assert pytest_loopguard.__all__ == INTENDED
    assert ruff_order(INTENDED) == INTENDED


def test_every_exported_name_exists() -> None:
    for name in pytest_loopguard.__all__:
        assert getattr(pytest_loopguard, name) is not None, name


def test_the_main_names_import() -> None:
    from pytest_loopguard import Policy, Trace, Verdict, load, replay
    from pytest_loopguard.core._model import Trace as ModelTrace
    from pytest_loopguard.io._format import load as load_function
    from pytest_loopguard.runtime._policy import Policy as PolicyClass
    from pytest_loopguard.runtime._replay import replay as replay_function

    assert (Trace, Policy, replay, load) == (ModelTrace, PolicyClass, replay_function, load_function)
    assert Verdict("e", "allow", "e.ok").action == "allow"


def test_strategies_are_importable_without_pytest_in_their_imports() -> None:
    import ast
    import inspect

    from pytest_loopguard.pytest import _strategies as strategies

    tree = ast.parse(inspect.getsource(strategies))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "pytest" not in imported and "hypothesis" in imported
    assert sorted(strategies.__all__) == strategies.__all__


def test_errors_are_also_the_builtins_they_resemble() -> None:
    assert issubclass(pytest_loopguard.TraceError, ValueError)
    assert issubclass(pytest_loopguard.PolicyError, ValueError)
    for name in ("TraceError", "PolicyError", "ScenarioError"):
        assert issubclass(getattr(pytest_loopguard, name), pytest_loopguard.LoopguardError)


ROOT_HOMES = {
    "buildinfo": "compiled",
    "errors": "LoopguardError LoopguardWarning PolicyError RedactionError ScenarioError SessionError TraceError",
    "core._model": "Action NOT_REACHED Outcome ReplayResult StepResult ToolCall ToolResult Trace Verdict",
    "runtime._policy": "Policy resolve_policy",
    "runtime._guard": "Clock Decision Guard",
    "runtime._replay": "replay",
    "live._recorder": "Recorder",
    "live._redact": "Redactor",
    "live._session": "Session ToolReply",
    "io._format": "dump dumps load load_file",
}


def test_every_public_name_resolves_to_the_object_its_module_defines() -> None:
    assert ruff_order([n for names in ROOT_HOMES.values() for n in names.split()]) == INTENDED
    for home, names in ROOT_HOMES.items():
        for name in names.split():
            assert getattr(pytest_loopguard, name) is getattr(importlib.import_module(f"pytest_loopguard.{home}"), name)
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        pytest_loopguard.nothing_here  # noqa: B018


LAZY = """
import sys
import pytest_loopguard
core = sorted(m for m in sys.modules if m.startswith("pytest_loopguard."))
print("AFTER-IMPORT", core)
import pytest_loopguard.runtime._replay
from pytest_loopguard import replay
print("REPLAY", type(replay).__name__, type(pytest_loopguard.replay).__name__)
"""


def test_importing_the_package_imports_no_core_and_replay_stays_the_function() -> None:
    """pytest imports the package in every process (xdist's controller too): the core loads on first use. The
    package's `replay` is the function, whatever has been imported."""
    done = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["AFTER-IMPORT ['pytest_loopguard._lazy']", "REPLAY function function"]


# Each subpackage's public names: what users and the other layers use, by the module that defines each ("" is
# the package itself). A subpackage exports only its own modules' names; the package root gathers the few users
# import most.
SUBPACKAGES: dict[str, dict[str, str]] = {
    "core": {
        "_classify": "KINDS Classifier Kind ToolRule parse_rules target_of",
        "_conversation": "Deferred Entry PromptView Role Transcript chars_over_four",
        "_expect": "Mismatch check check_reached check_run describe_expect",
        "_identity": ("FLAT_SAME_AS IDENTITIES IdentityMode canonical_json flat_canonical_json is_flat key_part "
                      "ordered_js_json"),
        "_limits": ("MAX_DEPTH MAX_EXTENDS MAX_FILE_BYTES MAX_GENERATED_CHARS MAX_INT MAX_LOG_BYTES MAX_NODES "
                    "MAX_SCENARIO_COUNT MAX_SETTING MAX_SETTING_ITEMS MAX_STEPS MAX_STRING MAX_TURNS"),
        "_model": ("ACTIONS NOT_REACHED OUTCOMES PHASES Action Done LLMCall Message NotReached Outcome Rejected "
                   "ReplayResult RunExpect Step StepAction StepExpect StepResult StepSource Task ToolCall ToolResult "
                   "Trace Verdict combine plain"),
        "_runcontext": "RunContext Turn",
        "_safeload": "check_json_depth parse_json parse_yaml plain_value read_bytes read_text",
        "_shell": "Command Effect",
        "_steps": "DoneStep LLMStep MessageStep PhaseStep RejectedStep ToolStep make_step",
        "_targets": "CallTarget",
        "hookspecs": "PROJECT hookimpl hookspec",
    },
    "engines": {
        "base": ("ENGINES ENGINE_ORDER ENTRY_POINT_GROUP Engine EngineSettings SettingError load_engine_plugins "
                 "register_engine registry registry_version"),
    },
    "runtime": {
        "_guard": "Clock Decision Guard",
        "_policy": "ALIASES Policy preset_names resolve_policy resolving_once",
        "_policy_option": "parse_policy_option",
        "_replay": "Replayer policy_for replay turn_plan",
    },
    "io": {
        "_format": ("ORIGIN_ROLES STEP_ACTIONS SUFFIXES dump dumps iter_trace_files load load_file loads "
                    "parse_step_expect step_to_mapping trace_from_mapping trace_to_mapping validate_paths"),
        "_golden": ("SCENARIO_STEP_EXPECTS apply_update_requests edit_to_json expectation_edits has_expectations "
                    "observed_trace unchecked_expectations"),
        "_headers": "TraceHeader read_headers",
        "_runner": "check_scenario execute load_runnable simulate validate_runnable",
        "_schema": "schema_text trace_schema",
        "_stream": "StreamedRun replay_jsonl",
    },
    "importers": {
        "_convert": "import_runs import_traces tar_traces to_trace",
        "base": "ImportedRun Importer Row Source trace_name",
        "bench": "import_bench",
        "build": "ImportedRunBuilder",
        "recognise": "skip_note",
        "registry": "ENTRY_POINT_GROUP IMPORTERS available builtin_importers detect get register_importer",
    },
    "live": {
        "_adapters": ("RAW_ARGUMENTS AdaptedCall ModelTurn anthropic_response anthropic_result "
                      "anthropic_tool_result openai_function_call_output openai_response openai_result "
                      "openai_tool_message"),
        "_recorder": "Recorder",
        "_redact": "BUILTIN_RULES Redactor configured_rules",
        "_serve": "GuardServer serve",
        "_session": "Session ToolReply",
    },
    "eval": {
        "_diff": "Change TraceDiff diff_results",
        "_labels": "LabelsError RunLabel load_labels",
        "_runs": "ScoredRun load_runs",
        "_score": "LoopScore PolicyScore RunScore match_labels score_policy",
    },
    "corpora": {
        "_archive": "pack_corpus unpack_corpus verify_corpus",
        "_corpus": "Corpus CorpusRun open_corpus",
        "_discover": "ENTRY_POINT_GROUP installed_corpora resolve_corpus",
        "_init": "init_corpus",
        "_manifest": "MANIFEST_NAME CorpusError Manifest load_manifest",
    },
    "report": {
        "_console": "emit fit_table fit_widths progress terminal_width",
        "_document": "REPORT_SCHEMA report_document report_entry",
        "_markdown": "md_table",
        "_rule_coverage": "coverage_table rule_coverage",
        "_run_report": "replay_html run_report",
        "_tables": ("TIMELINE_HEADERS json_entry mismatch_table outcome_line shorten status summary_table "
                    "timeline_row timeline_table"),
        "_write": "REPORT_FORMATS report_format write_report",
    },
    "scan": {
        "_discover": "AGENTS LogFile discover logs_under",
        "_loops": "LOOP_ENGINES Loop find_loops",
        "_report": "scan_document write_scan_report",
        "_session": "SessionScan scan_log",
    },
    "bench": {
        "_replay": "bench_table run_bench synthetic_trace",
        "_rows": "SuiteRow",
        "_suite": "run_suite suite_json suite_table",
    },
    "pytest": {
        "_fixtures": "Loopguard TraceBuilder",
        "_sim_fixtures": "SimulationKit",
        "plugin": "TraceFile TraceItem TraceMismatch",
    },
}


def ruff_order(names: list[str]) -> list[str]:
    """The order ruff's RUF022 keeps `__all__` in (isort's): CONSTANTS, then Classes, then functions."""
    return sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))


def intended(package: str) -> dict[str, str]:
    """Each public name of `package` → the module that defines it."""
    return {name: module for module, names in SUBPACKAGES[package].items() for name in names.split()}


@pytest.mark.parametrize("package", sorted(SUBPACKAGES))
def test_each_subpackage_exports_the_intended_sorted_names(package: str) -> None:
    module = importlib.import_module(f"pytest_loopguard.{package}")
    assert module.__all__ == ruff_order(list(intended(package)))
    assert sorted(dir(module)) == dir(module) and set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("package", sorted(SUBPACKAGES))
def test_each_subpackage_name_is_the_object_its_module_defines(package: str) -> None:
    module = importlib.import_module(f"pytest_loopguard.{package}")
    for name, home in intended(package).items():
        where = f"pytest_loopguard.{package}" + (f".{home}" if home else "")
        assert getattr(module, name) is importlib.import_module(where).__dict__[name], f"{package}.{name}"
    with pytest.raises(AttributeError, match=f"'pytest_loopguard.{package}' has no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


SUBPACKAGE_LAZY = """
import sys
import pytest_loopguard.{package}
print(*sorted(m for m in sys.modules if m.startswith("pytest_loopguard.")))
"""


@pytest.mark.parametrize("package", sorted(SUBPACKAGES))
def test_importing_a_subpackage_imports_nothing_until_a_name_is_read(package: str) -> None:
    code = SUBPACKAGE_LAZY.format(package=package)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["pytest_loopguard._lazy", f"pytest_loopguard.{package}"]


def test_the_imports_users_already_write_keep_working() -> None:
    from pytest_loopguard import Guard, Session, load_file, replay, strategies
    from pytest_loopguard.core.hookspecs import hookimpl
    from pytest_loopguard.engines.base import Engine, EngineSettings, register_engine
    from pytest_loopguard.io import _format, _runner
    from pytest_loopguard.pytest._fixtures import loopguard, trace_builder

    assert Guard.__module__ == "pytest_loopguard.runtime._guard"
    assert Session.__module__ == "pytest_loopguard.live._session"
    assert replay.__module__ == "pytest_loopguard.runtime._replay" and callable(hookimpl)
    assert issubclass(EngineSettings, object) and register_engine is pytest_loopguard.engines.register_engine
    assert Engine is pytest_loopguard.engines.Engine and "traces" in strategies.__all__
    assert callable(loopguard) and callable(trace_builder)
    # the package's `load_file` is the trace loader; the runner's checks scenarios too and has its own name
    assert load_file is _format.load_file and not hasattr(_runner, "load_file") and callable(_runner.load_runnable)


def test_the_importers_old_trace_builder_name_still_imports_and_says_its_new_one() -> None:
    from pytest_loopguard.importers import build

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = build.TraceBuilder
    assert old is build.ImportedRunBuilder
    assert [str(w.message) for w in caught] == [
        "pytest_loopguard.importers.build.TraceBuilder is now ImportedRunBuilder"]
    with pytest.raises(AttributeError):
        build.NoSuchBuilder  # noqa: B018
