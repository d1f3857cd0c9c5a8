"""Every reason code an engine can emit is declared in its `REASONS`, and the bundled corpus triggers each one.

Two independent checks: the engine sources' reason-code literals against the declarations (so a new rule
cannot ship undeclared), and every verdict of every bundled trace against its engine's declaration.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from pytest_loopguard.core._expect import check
from pytest_loopguard.engines import ENGINE_ORDER, registry
from pytest_loopguard.io._format import validate_paths
from pytest_loopguard.io._runner import execute

TRACES = Path(__file__).resolve().parents[2] / "traces"
# budget builds its codes from the budget's name: `_verdict(Action.WARN, "failure_streak", ...)` is
# budget.failure_streak.
BUDGET_CALL = re.compile(r'_verdict\(\s*Action\.(?:ALLOW|WARN|BLOCK|STOP),\s*"([a-z_]+)"|_near\(\s*"([a-z_]+)"')


@pytest.fixture(scope="module")
def corpus_reasons() -> dict[str, set[str]]:
    traces, errors = validate_paths([str(TRACES)])
    assert not errors and len(traces) > 100
    seen: dict[str, set[str]] = {}
    for trace in traces:
        result = execute(trace)
        assert not check(result), trace.name  # the corpus passes: these are the verdicts its files prove
        for step in result.steps:
            for verdict in step.verdicts:
                seen.setdefault(verdict.engine, set()).add(verdict.reason)
    return seen


@pytest.mark.parametrize("engine", ENGINE_ORDER)
def test_declared_codes_are_unique_and_prefixed(engine: str) -> None:
    reasons = registry()[engine].REASONS
    assert reasons, f"{engine} declares no reason codes"
    assert len(set(reasons)) == len(reasons)
    assert all(code.startswith(f"{engine}.") and re.fullmatch(r"[a-z_]+\.[a-z_]+", code) for code in reasons)


def _private_sources(source: str, package: str) -> str:
    """The sources of the private engine modules `source` imports, and theirs in turn: an engine's rules may
    live there (failure_tracker's second wave: engines/_second_wave.py, _requery.py, _usage_limits.py)."""
    seen: set[str] = set()
    todo = re.findall(r"^from \.(_[a-z_]+) import", source, re.MULTILINE)
    out = []
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            text = inspect.getsource(importlib.import_module(f"{package}.{name}"))
            out.append(text)
            todo += re.findall(r"^from \.(_[a-z_]+) import", text, re.MULTILINE)
    return "\n".join(out)


@pytest.mark.parametrize("engine", ENGINE_ORDER)
def test_source_literals_match_declarations(engine: str) -> None:
    cls = registry()[engine]
    module = inspect.getmodule(cls)
    assert module is not None
    source = inspect.getsource(module)
    body = source.split("REASONS = (", 1)[0] + source.split("REASONS = (", 1)[1].split(")", 1)[1]
    body += _private_sources(source, module.__name__.rsplit(".", 1)[0])
    literals = set(re.findall(rf'"({re.escape(engine)}\.[a-z_]+)"', body))
    if engine == "stuck_detector":
        # codes are built from the rule's name: f"{NAME}.action_error_nudge", _stop("monologue"), _detection("tool_loop"
        literals |= {f"stuck_detector.{c}" for c in re.findall(r'f"\{NAME\}\.([a-z_]+)"', body)}
        literals |= {f"stuck_detector.{c}" for c in re.findall(r'_(?:stop|detection)\(\s*"([a-z_]+)"', body)}
    if engine == "budget":
        literals |= {f"budget.{a or b}" for a, b in BUDGET_CALL.findall(body)}
    assert literals == set(cls.REASONS)


def test_every_emitted_code_is_declared(corpus_reasons: dict[str, set[str]]) -> None:
    known = registry()
    for engine, reasons in corpus_reasons.items():
        assert reasons <= set(known[engine].REASONS), (engine, reasons - set(known[engine].REASONS))


def test_the_bundled_corpus_triggers_every_declared_code(corpus_reasons: dict[str, set[str]]) -> None:
    known = registry()
    missing = {code for engine in ENGINE_ORDER for code in known[engine].REASONS} - {
        code for reasons in corpus_reasons.values() for code in reasons
    }
    assert not missing, f"no bundled trace triggers {sorted(missing)}"
