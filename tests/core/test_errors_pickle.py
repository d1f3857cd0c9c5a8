"""Every public error survives pickling with all its fields: `loopguard run -j` sends them between processes."""

from __future__ import annotations

import pickle

import pytest

from pytest_loopguard import errors
from pytest_loopguard.errors import (
    GuardProcessError,
    LoopguardError,
    MissingExtraError,
    NotATraceError,
    PolicyError,
    RedactionError,
    ScenarioError,
    SessionError,
    TraceError,
)

# One instance per public error class, every field set to something other than its default.
SAMPLES: dict[type[BaseException], BaseException] = {
    LoopguardError: LoopguardError("something went wrong"),
    TraceError: TraceError("expected a mapping", file="traces/a.yaml", step=3, line=17, field="call.args"),
    ScenarioError: ScenarioError("unknown behaviour 'x'", file="s.yaml", step=1, line=4, field="behaviour"),
    NotATraceError: NotATraceError("no top-level 'loopguard' key", file="otel.json", line=2,
                                   document={"resourceSpans": [{"spans": [1, 2]}]}, parsed=True),
    PolicyError: PolicyError("unknown engine 'x'", field="engines.x", source="policies/p.yaml"),
    RedactionError: RedactionError("bad regex: missing )", rule="token("),
    SessionError: SessionError("a result for no call (expected before_call first)"),
    GuardProcessError: GuardProcessError("external guard `node g.js`, run 'r', step 3 (before_call x): no reply"),
    MissingExtraError: MissingExtraError("`loopguard replay`", module="tabulate"),
}


def _public_errors() -> set[type[BaseException]]:
    found = (getattr(errors, name) for name in errors.__all__)
    return {c for c in found if isinstance(c, type) and issubclass(c, Exception) and not issubclass(c, Warning)}


def test_every_public_error_class_has_a_sample() -> None:
    assert set(SAMPLES) == _public_errors()


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_round_trip_keeps_type_message_and_fields(cls: type[BaseException]) -> None:
    error = SAMPLES[cls]
    error.add_note("a note added after raising")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls
    assert str(back) == str(error)
    assert back.args == error.args
    assert vars(back) == vars(error)  # problem, file, step, line, field, document, rule ... and the note


def test_round_trip_of_trace_error_renders_once() -> None:
    back = pickle.loads(pickle.dumps(SAMPLES[TraceError]))
    assert str(back) == "traces/a.yaml:17: step 3: field 'call.args': expected a mapping"
    assert isinstance(back, TraceError)
    assert back.located(file="other.yaml").file == "traces/a.yaml"


def test_round_trip_of_unset_fields_stays_unset() -> None:
    back = pickle.loads(pickle.dumps(TraceError("bad")))
    assert (back.file, back.step, back.line, back.field) == (None, None, None, None)
    assert str(back) == "<trace>: bad"
