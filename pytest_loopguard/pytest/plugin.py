"""pytest plugin: collects trace files as tests, replays them, and reports verdict mismatches as tables.

Per-session state lives in `config.stash`; per-trace results travel to the xdist controller in
`report.user_properties`, so the terminal summary and the JSON report are the same with or without xdist.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import pytest

from ..errors import LoopguardError, LoopguardWarning, NotATraceError, PolicyError, TraceError
from . import _corpus as corpus_option
from . import _fixtures as fixtures
from . import _record as record
from . import _sim_fixtures as sim_fixtures

if TYPE_CHECKING:
    from ..core._expect import Mismatch
    from ..core._model import ReplayResult, Trace
    from ..io._golden import observed_trace
    from ..io._headers import TraceHeader
    from ..io._stream import StreamedRun

# Every pytest process imports this module, the xdist controller included, which neither collects nor runs a
# trace: what collection needs is imported by the collector, the replay core by the first item that runs.

__all__ = ["TraceFile", "TraceItem", "TraceMismatch", "observed_trace"]


def __getattr__(name: str) -> Any:
    if name == "observed_trace":  # re-exported from `golden`, imported when asked for
        from ..io._golden import observed_trace

        return observed_trace
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

MARKER: Final = (
    "loopguard(policy=None, **overrides): the policy the `loopguard` fixture replays under "
    "(a preset name, policy file or mapping) with engine overrides such as loop_guard={'warn_at': 1}"
)
ENTRY_KEY: Final = "loopguard"  # user_properties name of a trace's report entry
UPDATE_KEY: Final = "loopguard-update"  # user_properties name of a trace's --loopguard-update request
UNCHECKED_KEY: Final = "loopguard-unchecked"  # user_properties name of expectations nothing checks
# A file under loopguard_paths that is not a trace is a skipped collector whose reason starts with this: skip
# reports reach the xdist controller (passed collect reports do not), so the summary sees them either way.
NOT_A_TRACE: Final = "loopguard: "
# A JSONL trace file larger than this is replayed as it is read (TraceItem._streamed), not loaded whole: below
# it loading is ~10% faster (1,000 40-step files: 0.71 vs 0.80 s) and a held trace costs little memory.
STREAM_FROM_BYTES: Final = 1 << 20


# eq=False keeps identity hashing: pluggy hashes plugins (a conftest's hook subsets put them in sets).
@dataclasses.dataclass(slots=True, eq=False)
class PytestSessionState:
    """One pytest session's options and the trace entries that came back (from this process or xdist workers).

    Registered as a plugin so its hooks reach this session's state without module globals.
    """

    policy: str | dict[str, Any] | None  # a preset, a policy file, or an inline mapping
    matrix: tuple[str, ...]
    report_path: Path | None
    update: bool
    trace_roots: tuple[Path, ...]
    worker: bool
    coverage: bool = False
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    report_error: str = ""
    entries: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    requests: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # --loopguard-update's, per trace
    updated: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # file -> what changed in it
    unchecked: list[str] = dataclasses.field(default_factory=list)
    update_errors: list[str] = dataclasses.field(default_factory=list)
    not_traces: list[str] = dataclasses.field(default_factory=list)
    corpus_logs: dict[str, str] = dataclasses.field(default_factory=dict)  # --loopguard-corpus: log -> importer

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        longrepr = report.longrepr
        if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3:
            reason = str(longrepr[2]).removeprefix("Skipped: ")
            if reason.startswith(NOT_A_TRACE) and reason not in self.not_traces:
                self.not_traces.append(reason)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == ENTRY_KEY:
                self.entries.append(cast(dict[str, Any], value))
            elif key == UPDATE_KEY:
                self.requests.append(cast(dict[str, Any], value))
            elif key == UNCHECKED_KEY:
                self.unchecked.extend(cast(list[str], value))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # Under xdist only the controller writes: it has received every worker's entries and update requests,
        # so the edits of several traces in one file are applied together, once.
        if self.worker:
            return
        if self.report_path is not None:
            from ..report._write import write_report

            try:
                write_report(self.report_path, self.entries, self.meta)
            except OSError as exc:  # e.g. a folder of that name: one line in the summary, not a traceback
                self.report_error = f"cannot write {self.report_path}: {exc.strerror}"
                self.report_path = None
                session.exitstatus = pytest.ExitCode.TESTS_FAILED  # CI asked for a report and has none
        if not self.requests:
            return
        from ..io._golden import apply_update_requests

        self.updated, self.update_errors = apply_update_requests(self.requests)
        if self.update_errors:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.report_error:
            terminalreporter.write_line(f"loopguard: report not written: {self.report_error}", red=True)
        for line in self.not_traces:
            terminalreporter.write_line(line)
        if not self.entries:
            return
        mismatched = sum(1 for e in self.entries if not e["passed"])
        terminalreporter.write_line(f"loopguard: {len(self.entries)} traces replayed, {mismatched} mismatched")
        if self.updated:
            files = len(self.updated)
            terminalreporter.write_line(f"loopguard: updated {files} trace file{'s' if files != 1 else ''}:")
            for name, changes in sorted(self.updated.items()):
                terminalreporter.write_line(f"  {name}")
                for line in changes:
                    terminalreporter.write_line(f"    {line}")
        for error in self.update_errors:
            terminalreporter.write_line(f"loopguard: update failed: {error}", red=True)
        if self.unchecked:
            terminalreporter.write_line(f"loopguard: {len(self.unchecked)} expectations no trace checks "
                                        "(--loopguard-update drops them):")
            for line in sorted(self.unchecked):
                terminalreporter.write_line(f"  {line}")
        if self.coverage:
            from ..report._rule_coverage import coverage_table, rule_coverage  # only this option reads it

            terminalreporter.write_line(coverage_table(rule_coverage(self.entries)))
        if self.report_path is not None:
            terminalreporter.write_line(f"loopguard: report written to {self.report_path}")


session_key: Final = pytest.StashKey[PytestSessionState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loopguard", "agent trace replay (pytest-loopguard)")
    group.addoption(
        "--loopguard-policy",
        dest="loopguard_policy",
        default=None,
        metavar="POLICY",
        help="replay every trace under this policy instead of its own: a preset, a policy file, "
        "or an inline mapping such as '{preset: default, dedup: false}'",
    )
    group.addoption(
        "--loopguard-matrix",
        dest="loopguard_matrix",
        default=None,
        metavar="P1,P2",
        help="replay every trace once under each of these policies (items NAME[POLICY]) and check its expectations",
    )
    group.addoption(
        "--loopguard-report",
        dest="loopguard_report",
        default=None,
        metavar="PATH",
        help="write a report of every trace (timeline, mismatches, rule coverage) to PATH: .json, .md or .html",
    )
    group.addoption(
        "--loopguard-coverage",
        dest="loopguard_coverage",
        action="store_true",
        default=False,
        help="print rule coverage: per reason code of the active engines, how many traces triggered it",
    )
    group.addoption(
        "--loopguard-update",
        dest="loopguard_update",
        action="store_true",
        default=False,
        help="rewrite the expectations of mismatching (or unannotated) traces to the observed verdicts",
    )
    record.add_options(group, parser)
    group.addoption("--loopguard-corpus", dest="loopguard_corpus", action="append", default=[], metavar="NAME|PATH",
                    help="run a shared corpus (installed name, folder, manifest or archive); repeatable")
    parser.addini(
        "loopguard_paths",
        type="linelist",
        default=["traces"],
        help="folders (relative to rootdir) whose trace files are collected as tests",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    policy_text: str | None = config.getoption("loopguard_policy", None)
    from ..runtime._policy_option import parse_policy_option

    try:
        policy = parse_policy_option(policy_text) if policy_text is not None else None
    except PolicyError as exc:
        raise pytest.UsageError(f"--loopguard-policy: {exc}") from None
    matrix_option: str | None = config.getoption("loopguard_matrix", None)
    matrix = tuple(p.strip() for p in matrix_option.split(",") if p.strip()) if matrix_option is not None else ()
    update = bool(config.getoption("loopguard_update", False))
    if matrix_option is not None and not matrix:
        raise pytest.UsageError("--loopguard-matrix: expected policies separated by commas, e.g. default,spacebot")
    if matrix and policy is not None:
        raise pytest.UsageError("--loopguard-matrix and --loopguard-policy exclude each other")
    if matrix and update:
        raise pytest.UsageError("--loopguard-update cannot record a matrix: a trace holds one policy's expectations")
    if policy is not None and update:
        # The rewritten file keeps its own `policy:`, so verdicts of another policy would fail its next run.
        raise pytest.UsageError("--loopguard-update records each trace under its own policy; drop --loopguard-policy")
    for option, spec in [("--loopguard-policy", policy), *(("--loopguard-matrix", p) for p in matrix)]:
        if spec is None:
            continue
        from ..runtime._policy import resolve_policy  # only when a policy was given: a plain run needs none at start-up

        try:
            resolve_policy(spec)
        except PolicyError as exc:
            raise pytest.UsageError(f"{option}: {exc}") from None
    report: str | None = config.getoption("loopguard_report", None)
    if report:
        from ..report._write import report_format

        try:
            report_format(report)
        except ValueError as exc:
            raise pytest.UsageError(f"--loopguard-report: {exc}") from None
    roots = tuple((config.rootpath / p).resolve() for p in config.getini("loopguard_paths"))
    corpus_logs: dict[str, str] = {}
    if corpora := config.getoption("loopguard_corpus", None):
        folders, corpus_logs = corpus_option.add_corpora(config, corpora, update)
        roots += folders
    state = PytestSessionState(
        policy=policy,
        matrix=matrix,
        report_path=Path(report).resolve() if report else None,
        update=update,
        trace_roots=roots,
        worker=hasattr(config, "workerinput"),
        coverage=bool(config.getoption("loopguard_coverage", False)),
        meta={"command": "pytest", "policy": policy, "matrix": list(matrix), "rootdir": str(config.rootpath)},
        corpus_logs=corpus_logs,
    )
    config.stash[session_key] = state
    config.pluginmanager.register(state, "loopguard-session")
    # The fixtures live in their own modules; registering them here makes them available in every test.
    record.configure(config)
    for module, name in ((fixtures, "loopguard-fixtures"), (sim_fixtures, "loopguard-sim"), (record, "loopguard-rec")):
        if not config.pluginmanager.is_registered(module):
            config.pluginmanager.register(module, name)


def pytest_sessionstart(session: pytest.Session) -> None:
    from ..engines.base import load_engine_plugins, registry

    try:
        if session.config.pluginmanager.has_plugin("dsession"):
            load_engine_plugins()  # the xdist controller replays nothing: it only checks that engine plugins load
        else:
            # Import the built-in engines before any test runs: the registry caches their classes, and a module
            # imported later (inside a pytester run, which restores sys.modules afterwards) would lose the
            # globals its settings' hints need.
            registry()
    except LoopguardError as exc:  # an installed engine plugin that does not load
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> str | None:
    state = config.stash.get(session_key, None)
    if state is None:
        return None
    paths = ", ".join(config.getini("loopguard_paths"))
    policy = state.policy if state.policy is not None else "each trace's own"
    if state.matrix:
        policy = f"matrix {', '.join(state.matrix)}"
    return f"loopguard: trace paths: {paths}; policy: {policy}"


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(session_key, None)
    if state is not None and config.pluginmanager.is_registered(state):
        config.pluginmanager.unregister(state)
    record.unconfigure(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> TraceFile | None:
    from ..io._format import CORPUS_MANIFEST, SUFFIXES

    state = parent.config.stash[session_key]
    if (file_path.suffix.lower() not in SUFFIXES and str(file_path) not in state.corpus_logs) or (
            file_path.name == CORPUS_MANIFEST):
        return None
    # A trace file named on the command line is collected wherever it lives.
    if not any(file_path.is_relative_to(root) for root in state.trace_roots) and not parent.session.isinitpath(
        file_path
    ):
        return None
    trace_file: TraceFile = TraceFile.from_parent(parent, path=file_path)
    return trace_file


class TraceMismatch(AssertionError):
    """A replay whose verdicts differ from the trace's expectations."""

    def __init__(self, result: ReplayResult, mismatches: list[Mismatch]) -> None:
        from ..report._tables import outcome_line, status

        self.result = result
        self.mismatches = mismatches
        super().__init__(f"{outcome_line(result)}: {status(mismatches)}")


class TraceFile(pytest.File):
    """A trace file: one item per trace in it.

    Collection reads each trace's header only (`headers.read_headers`: name, tags, first line); the file is
    loaded and validated in full when its first item runs, once for all its items, and let go when they have
    run. A JSONL file over STREAM_FROM_BYTES is replayed as it is read instead (`TraceItem._streamed`). A file
    the header reader cannot judge is loaded here, as before, so its errors (and a non-trace's skip) are
    collection's.
    """

    _loaded: list[Trace] | TraceError | None = None

    def collect(self) -> Iterator[TraceItem]:
        from ..io._headers import TraceHeader, read_headers

        headers = None if str(self.path) in self.config.stash[session_key].corpus_logs else read_headers(self.path)
        if headers is None:
            traces = self._load_now()
            lines = _document_lines(self.path) if len(traces) > 1 else {}
            headers = [TraceHeader(t.name, t.tags, lines.get(i, 0), i) for i, t in enumerate(traces)]
        elif len(headers) == 1:
            headers = [dataclasses.replace(headers[0], line=0)]  # a one-trace file's item points at its top
        matrix = self.config.stash[session_key].matrix
        seen: set[str] = set()
        for header in headers:
            if header.name in seen:
                raise self.CollectError(
                    f"{_display_path(self.path, self.config.rootpath)}: field 'name': "
                    f"duplicate trace name {header.name!r} in one file"
                )
            seen.add(header.name)
            if not matrix:
                yield TraceItem.from_parent(self, name=header.name, header=header)
                continue
            for policy in matrix:
                yield TraceItem.from_parent(self, name=f"{header.name}[{policy}]", header=header, policy=policy)

    def _load_now(self) -> list[Trace]:
        """The file fully loaded at collection: a non-trace is skipped, a bad trace is a collection error."""
        try:
            return self.traces()
        except NotATraceError as exc:
            # Some other JSON/YAML kept beside the traces (an OTel export): not a test, and not an error. The
            # importers (which name the log format) load only for such a file.
            from ..importers.recognise import skip_note

            shown = _display_path(self.path, self.config.rootpath)
            raise pytest.skip.Exception(NOT_A_TRACE + skip_note(shown, self.path, exc)) from None
        except TraceError as exc:
            raise self.CollectError(str(_relocated(exc, self.path, self.config.rootpath))) from None

    def traces(self) -> list[Trace]:
        """Every trace in the file, loaded once (the first item to run loads it for the others)."""
        if self._loaded is None:
            # The loader warns about torn JSONL lines; the items re-emit those warnings when they run.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LoopguardWarning)
                from ..io._runner import load_runnable

                log = self.config.stash[session_key].corpus_logs.get(str(self.path))  # a corpus's agent log
                try:
                    self._loaded = load_runnable(self.path) if log is None else corpus_option.import_log(self.path, log)
                except TraceError as exc:
                    self._loaded = exc
        if isinstance(self._loaded, TraceError):
            raise self._loaded
        return self._loaded

    def teardown(self) -> None:
        # Every item of this file has run: its traces go, so a corpus run holds one file's traces at a time
        # (kept, 1,000 files' steps made every later garbage collection slower: 0.3 s of such a run). An
        # item asked for its trace after this loads the file again.
        self._loaded = None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, (self.CollectError, LoopguardError)):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))


class TraceNotLoaded(Exception):
    """The trace's file did not load when the item ran; carries the loader's one-line error."""


class TraceItem(pytest.Item):
    """One trace: replayed (or simulated) under its policy, then checked against its expectations."""

    parent: TraceFile

    def __init__(self, *, header: TraceHeader, policy: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.header = header
        self.line = header.line
        self.document = header.document  # the trace's place among the YAML documents of its file
        self._trace: Trace | None = None
        # A matrix cell's policy; None: the --loopguard-policy option, else the trace's own.
        self.policy = policy if policy is not None else self.config.stash[session_key].policy
        # `-k browser` selects the traces tagged browser.
        self.extra_keyword_matches.update(header.tags)

    @property
    def trace(self) -> Trace:
        """The trace, loaded with its whole file when first asked for (when the item runs)."""
        if self._trace is None:
            try:
                traces = self.parent.traces()
            except TraceError as exc:
                raise TraceNotLoaded(str(_relocated(exc, self.path, self.config.rootpath))) from None
            trace = traces[self.document] if self.document < len(traces) else None
            self._trace = self._checked(trace)
        return self._trace

    def _checked(self, trace: Trace | None) -> Trace:
        """`trace`, unless the header read at collection and the file disagree (it changed in between)."""
        if trace is None or trace.name != self.header.name or trace.tags != self.header.tags:
            now = "no such trace" if trace is None else f"trace {trace.name!r}"
            raise TraceNotLoaded(f"{_display_path(self.path, self.config.rootpath)}: collected trace "
                                 f"{self.header.name!r} as trace {self.document + 1} of the file, which now "
                                 f"holds {now} there; collect again")
        return trace

    def teardown(self) -> None:
        self._trace = None  # as its file's traces go (TraceFile.teardown); the report has what it needs

    def runtest(self) -> None:
        from ..core._expect import check
        from ..io._golden import SCENARIO_STEP_EXPECTS, has_expectations, unchecked_expectations
        from ..io._runner import execute

        state = self.config.stash[session_key]
        streamed = self._streamed(state)
        trace = self.trace if streamed is None else streamed.result.trace  # streamed: the header, no steps
        for message in trace.warnings:  # before the replay, which may fail (an unknown policy)
            warnings.warn(LoopguardWarning(message), stacklevel=1)
        if streamed is None:
            result = execute(trace, self.policy)
            mismatches = check(result)
        elif streamed.mismatches:
            result, mismatches = self._replayed_in_full(streamed)
        else:
            result, mismatches = streamed.result, streamed.mismatches
        file = _display_path(self.path, self.config.rootpath)
        if (note := result.what_if_note()) is not None:  # calls blocked live ran under this policy: no result
            warnings.warn(LoopguardWarning(f"{file}: {trace.name}: {note}"), stacklevel=1)
        unchecked = unchecked_expectations(trace, result)
        if state.update and (mismatches or unchecked or not has_expectations(trace)):
            self._update(result)
            mismatches = []
        elif unchecked:
            shown = f"{file}: {trace.name}: {SCENARIO_STEP_EXPECTS}"
            self.user_properties.append((UNCHECKED_KEY, [f"{shown} {i} (the run recorded {len(result.trace.steps)} "
                                                         "steps)" for i in unchecked]))
        self.user_properties.append((ENTRY_KEY, self._entry(result, mismatches, file)))
        if mismatches:
            raise TraceMismatch(result, mismatches)

    def _streamed(self, state: PytestSessionState) -> StreamedRun | None:
        """The run of a large JSONL trace replayed as its file is read, as `loopguard run` does: memory stays flat,
        and a file over the loader's size cap runs. None for a smaller file (loaded whole, which is faster), where
        something needs every step's result (a report, the coverage table, an update), for a matrix (each policy
        would read the file again) and for a scenario."""
        if (self.path.suffix.lower() != ".jsonl" or state.update or state.matrix or state.report_path is not None
                or state.coverage):
            return None
        try:
            if self.path.stat().st_size <= STREAM_FROM_BYTES:
                return None
        except OSError:
            return None  # loading says why it cannot read the file
        from ..io._stream import replay_jsonl

        try:
            with warnings.catch_warnings():  # the trace carries its torn-line warnings; runtest re-emits them
                warnings.simplefilter("ignore", LoopguardWarning)
                streamed = replay_jsonl(self.path, self.policy)
        except TraceError as exc:
            raise TraceNotLoaded(str(_relocated(exc, self.path, self.config.rootpath))) from None
        if streamed is not None:
            self._checked(streamed.result.trace)
        return streamed

    def _replayed_in_full(self, streamed: StreamedRun) -> tuple[ReplayResult, list[Mismatch]]:
        """A mismatching streamed trace replayed again with its timeline, for the failure's table of the steps
        around each mismatch; the streamed run where the file is too large to load whole."""
        from ..core._expect import check
        from ..io._runner import execute

        try:
            trace = self.trace
        except TraceNotLoaded:
            return streamed.result, streamed.mismatches
        with warnings.catch_warnings():  # already emitted from the streamed run
            warnings.simplefilter("ignore", LoopguardWarning)
            result = execute(trace, self.policy)
        return result, check(result)

    def _entry(self, result: ReplayResult, mismatches: list[Mismatch], file: str) -> dict[str, Any]:
        """The trace's report entry; in full (timeline, reasons) only where a report or the coverage table reads
        it, since under xdist every entry travels to the controller and the summary needs only `passed`."""
        state = self.config.stash[session_key]
        if state.report_path is None and not state.coverage:
            return {"file": file, "trace": self.header.name, "passed": not mismatches}
        from ..report._document import report_entry
        from ..runtime._replay import policy_for

        engines = policy_for(self.trace, self.policy)[0].engines
        return {**report_entry(result, mismatches, engines), "file": file}

    def _update(self, result: ReplayResult) -> None:
        fmt = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "jsonl"}[self.path.suffix.lower()]
        if self.trace.mode == "simulate" and fmt != "yaml":
            # JSON keys are strings, and a scenario's `x-expect-steps` is keyed by step index.
            raise LoopguardError("--loopguard-update rewrites scenarios only in YAML files")
        from ..io._golden import edit_to_json, expectation_edits

        edits, changes = expectation_edits(self.trace, result, self.document)
        request = {"path": str(self.path), "file": _display_path(self.path, self.config.rootpath),
                   "changes": changes, "edits": [edit_to_json(e) for e in edits]}
        self.user_properties.append((UPDATE_KEY, request))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        error = excinfo.value
        where = _display_path(self.path, self.config.rootpath)
        if isinstance(error, TraceNotLoaded):  # bad input found when the item ran: the loader's one line
            return str(error)
        if isinstance(error, TraceMismatch):
            from ..report._tables import failure_report

            # The description says what the trace proves: the first thing a reader of a failure needs.
            # (the loaded trace's, or a streamed run's header where the file was too large to load whole)
            description = (self._trace if self._trace is not None else error.result.trace).description
            return failure_report(where, error.result, error.mismatches, description)
        name = self.header.name
        if isinstance(error, LoopguardWarning):  # `-W error` turned the trace's warning (a torn JSONL line) into this
            return f"{where}: trace {name}: warning treated as an error: {error}"
        if isinstance(error, TraceError):  # e.g. a scenario the simulators refuse while it runs
            return f"trace {name}: {_relocated(error, self.path, self.config.rootpath)}"
        if isinstance(error, LoopguardError):
            return f"{where}: trace {name}: {error}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line, f"trace {self.header.name}"


# ---- helpers -------------------------------------------------------------------------------------------
def _display_path(path: Path, rootpath: Path) -> str:
    try:
        return path.relative_to(rootpath).as_posix()
    except ValueError:
        return str(path)


def _relocated(exc: TraceError, path: Path, rootpath: Path) -> TraceError:
    # The loader names the file as it was given (absolute here); show it as pytest shows node ids.
    return type(exc)(exc.problem, file=_display_path(path, rootpath), step=exc.step, line=exc.line, field=exc.field)


def _document_lines(path: Path) -> dict[int, int]:
    """The 0-based first line of each YAML document, for reportinfo of multi-trace files."""
    import yaml

    try:
        nodes = list(yaml.compose_all(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader))
    except (OSError, yaml.YAMLError):
        return {}
    return {i: node.start_mark.line for i, node in enumerate(n for n in nodes if n is not None)}

