"""Record mode: a test's live `Session` run is recorded once, committed, and replayed with its verdicts in CI.

    @pytest.mark.loopguard_record("recordings/checkout.jsonl", policy="default")
    def test_checkout(loopguard_recorder):
        run_my_agent(guard=loopguard_recorder)      # any agent that drives the Session (or an integration)

`--loopguard-record` (ini `loopguard_record`) has vcrpy's modes: `none` (the default) replays a recording and
fails a test whose recording is missing, naming the command that records it; `once` and `new` record the
missing ones and replay the rest; `all` records every one again. Recording runs the test body against a
Session that writes to a temporary file; when the body passes, the run is replayed, its verdicts written in
as expectations, and the file renamed into place. Replaying does not run the body, as vcrpy's replay never
reaches the server: the recording stands in for the agent's run (a real model, paid for, not repeatable), and
it is replayed under the test's policy and checked against its expectations, failing with the step table a
trace file's test shows. A recording is written by one test: two tests naming one file are errors, and an
O_EXCL lock file beside it keeps two processes (xdist workers, two pytest runs) from writing it at once.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import pytest

if TYPE_CHECKING:
    from ..live._session import Session

# Registered in every pytest process, the xdist controller included: the Session, the loader and the replay
# are imported when a test with the marker first needs them.

__all__ = ["MARKER", "MODES", "RecordSession", "add_options", "configure", "loopguard_recorder", "unconfigure"]

MODES: Final = ("none", "once", "new", "all")
MARKER: Final = (
    "loopguard_record(path=None, policy=None, **session): record the test's `loopguard_recorder` Session run to "
    "`path` (relative to the test file's folder; default recordings/MODULE/TEST.jsonl) and replay it under "
    "--loopguard-record=none|once|new|all"
)
RECORDED_KEY: Final = "loopguard-recorded"  # user_properties name of a recording written by the test
SUFFIXES: Final = {".jsonl": "jsonl", ".yaml": "yaml", ".yml": "yaml", ".json": "json"}
# marker keywords the recording's header takes, and those the Session alone takes
_HEADER_KEYS: Final = ("name", "description", "tags", "redactor", "redact")
_SHARED_KEYS: Final = ("task", "context", "max_turns")
_SESSION_KEYS: Final = ("plugins", "now_ms", "agent")

Action = Literal["record", "replay", "missing", "error"]


@dataclasses.dataclass(slots=True, eq=False)
class RecordSession:
    """The session's record mode and which test names which recording; registered as a plugin for its hooks."""

    mode: str
    worker: bool
    claims: dict[Path, list[str]] = dataclasses.field(default_factory=dict)  # recording -> node ids naming it
    recorded: list[str] = dataclasses.field(default_factory=list)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Every xdist worker collects every item, so each sees the same claims and fails the same tests.
        self.claims = {}
        for item in session.items:
            marker = item.get_closest_marker("loopguard_record")
            if marker is not None:
                path = _recording_path(item, marker)
                if isinstance(path, Path):
                    self.claims.setdefault(path, []).append(item.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """A recording that is replayed or missing decides the test here, without running its body."""
        if pyfuncitem.get_closest_marker("loopguard_record") is None:
            return None
        recording = pyfuncitem.stash.get(_recording_key, None)
        if recording is None:
            pytest.fail(f"{pyfuncitem.nodeid}: @pytest.mark.loopguard_record records the run of the "
                        "`loopguard_recorder` fixture's Session: the test must take that fixture", pytrace=False)
        if recording.action == "record":
            return None
        if recording.action == "replay":
            _replay(pyfuncitem, recording)
            return True
        pytest.fail(recording.error, pytrace=False)  # missing

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        yield  # the body ran and passed: a body that failed records nothing
        recording = item.stash.get(_recording_key, None)
        if recording is not None and recording.action == "record":
            try:
                _commit(item, recording)
            except RecordingError as exc:
                pytest.fail(str(exc), pytrace=False)
            item.user_properties.append((RECORDED_KEY, recording.shown))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.recorded.extend(cast(str, value) for key, value in report.user_properties if key == RECORDED_KEY)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker or not self.recorded:
            return
        n = len(self.recorded)
        terminalreporter.write_line(f"loopguard: recorded {n} trace{'s' if n != 1 else ''} "
                                    f"(--loopguard-record={self.mode}):")
        for shown in sorted(self.recorded):
            terminalreporter.write_line(f"  {shown}")


record_key: Final = pytest.StashKey[RecordSession]()


class RecordingError(Exception):
    """A recording that cannot be written: one line naming the file and why."""


@dataclasses.dataclass(slots=True)
class Recording:
    """One test's recording: where it is, what this run does with it, and what recording it needs."""

    path: Path
    shown: str  # as a node id shows it: relative to rootdir
    action: Action
    policy: Any  # the marker's, --loopguard-policy, or None (record: `default`; replay: the recording's own)
    error: str = ""
    session: Session | None = None
    partial: Path | None = None  # the recording being written, renamed into place when the body passed
    lock: Path | None = None  # the lock file this test holds


_recording_key: Final = pytest.StashKey[Recording]()


def add_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    group.addoption(
        "--loopguard-record",
        dest="loopguard_record",
        default=None,
        choices=MODES,
        help="what tests marked loopguard_record do with their recording, as vcrpy's record modes: none (replay; "
        "a missing one fails), once and new (record the missing ones, replay the rest), all (record every one "
        "again). Default: the loopguard_record ini value, else none",
    )
    parser.addini("loopguard_record", default="none",
                  help="the default of --loopguard-record: none, once, new or all")


def configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    mode = config.getoption("loopguard_record", None) or str(config.getini("loopguard_record")).strip()
    if mode not in MODES:
        raise pytest.UsageError(f"ini option loopguard_record: expected one of {', '.join(MODES)}, got {mode!r}")
    state = RecordSession(mode, worker=hasattr(config, "workerinput"))
    config.stash[record_key] = state
    config.pluginmanager.register(state, "loopguard-record")


def unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(record_key, None)
    if state is not None and config.pluginmanager.is_registered(state):
        config.pluginmanager.unregister(state)


@pytest.fixture
def loopguard_recorder(request: pytest.FixtureRequest) -> Iterator[Session]:
    """The live Session of a test marked `loopguard_record`: it records the run when the mode records it.

    When the recording is replayed instead, the test body does not run; the Session is then a plain one under
    the same policy, which fixtures built on it may still take.
    """
    item = request.node
    marker = item.get_closest_marker("loopguard_record")
    if marker is None:
        pytest.fail(f"{item.nodeid}: the loopguard_recorder fixture records to the file a "
                    "@pytest.mark.loopguard_record(PATH) marker names; the test has none", pytrace=False)
    recording = _plan(item, marker)
    if recording.action == "error":  # the marker names no usable recording: nothing to set up
        pytest.fail(recording.error, pytrace=False)
    item.stash[_recording_key] = recording
    try:
        yield _start(item, marker, recording)
    finally:
        _clean(recording)


# ---- what a test does with its recording ---------------------------------------------------------------
def _plan(item: pytest.Item, marker: pytest.Mark) -> Recording:
    config = item.config
    state = config.stash[record_key]
    path = _recording_path(item, marker)
    # the marker's policy file is named from the test's folder, as the recording is; the option's as given
    policy = _beside_test(item, marker.kwargs["policy"]) if "policy" in marker.kwargs else _option_policy(config)
    if isinstance(path, str):  # a path the marker cannot name
        return Recording(Path(), "", "error", policy, error=f"{item.nodeid}: loopguard_record: {path}")
    shown = _display_path(path, config.rootpath)
    unknown = sorted(set(marker.kwargs) - {"path", "policy", *_HEADER_KEYS, *_SHARED_KEYS, *_SESSION_KEYS})
    if unknown:
        return Recording(path, shown, "error", policy, error=(
            f"{item.nodeid}: loopguard_record: unknown keyword {', '.join(map(repr, unknown))}; expected path, "
            f"policy or the Session's {', '.join((*_HEADER_KEYS, *_SHARED_KEYS, *_SESSION_KEYS))}"))
    others = [n for n in state.claims.get(path, ()) if n != item.nodeid]
    if others:
        return Recording(path, shown, "error", policy, error=(
            f"{shown}: also the recording of {', '.join(others)}; a recording belongs to one test (give each its "
            "own path)"))
    exists = path.is_file()
    if state.mode == "all" or (state.mode in ("once", "new") and not exists):
        return Recording(path, shown, "record", policy)
    if exists:
        return Recording(path, shown, "replay", policy)
    return Recording(path, shown, "missing", policy, error=(
        f"{shown}: no recording for this test (--loopguard-record=none); record it with:\n"
        f"  pytest --loopguard-record=once {shlex.quote(_command_id(item))}"))


def _option_policy(config: pytest.Config) -> Any:
    text: str | None = config.getoption("loopguard_policy", None)
    if text is None:
        return None
    from ..runtime._policy_option import parse_policy_option  # checked when the plugin configured

    return parse_policy_option(text)


def _recording_path(item: pytest.Item, marker: pytest.Mark) -> Path | str:
    """Where the marker's recording lives, or (a str) why the marker names none."""
    raw = marker.args[0] if marker.args else marker.kwargs.get("path")
    if len(marker.args) > 1:
        return "takes one path (the policy goes in policy=...)"
    folder = item.path.parent
    if raw is None:
        return (folder / "recordings" / _file_stem(item.path.stem) / f"{_file_stem(item.name)}.jsonl").resolve()
    if not isinstance(raw, str | os.PathLike):
        return f"expected a file path, got {type(raw).__name__}"
    path = Path(raw)
    if path.suffix.lower() not in SUFFIXES:
        return f"{path}: a recording is a {', '.join(SUFFIXES)} file"
    return (folder / path).resolve()


def _file_stem(name: str) -> str:
    # a parametrized test's name holds `[`, `]`, which neither a trace name nor a portable file name may
    return re.sub(r"[^\w.-]+", "-", name).strip("-.") or "test"


def _command_id(item: pytest.Item) -> str:
    """The test's id as the command line takes it from the folder pytest was started in."""
    _, _, rest = item.nodeid.partition("::")
    try:
        file = os.path.relpath(item.path, item.config.invocation_params.dir)
    except ValueError:  # another drive (Windows)
        file = str(item.path)
    return f"{Path(file).as_posix()}::{rest}" if rest else Path(file).as_posix()


def _start(item: pytest.Item, marker: pytest.Mark, recording: Recording) -> Session:
    """The test's Session: recording to a temporary file beside the recording when this run records it."""
    from ..errors import LoopguardError
    from ..live._recorder import Recorder
    from ..live._session import Session

    options = {k: v for k, v in marker.kwargs.items() if k not in ("path", "policy")}
    header = {k: options.pop(k) for k in _HEADER_KEYS if k in options}
    shared = {k: options[k] for k in _SHARED_KEYS if k in options}
    record: Recorder | None = None
    problem = ""
    try:
        if recording.action == "record":
            recording.lock = _lock(item, recording)
            recording.path.parent.mkdir(parents=True, exist_ok=True)
            recording.partial = recording.path.with_name(f".{recording.path.name}.{os.getpid()}.partial.jsonl")
            record = Recorder(
                recording.partial, policy=_header_policy(recording.policy, recording.path), overwrite=True,
                name=header.pop("name", None) or _file_stem(recording.path.stem), **shared,
                description=header.pop("description", None) or _first_line(getattr(item, "obj", None)),
                source={"origin": item.nodeid}, **header,
            )
        recording.session = Session(
            "default" if recording.policy is None else recording.policy, record=record, **options)
    except RecordingError as exc:
        problem = str(exc)
    except (LoopguardError, OSError, TypeError, ValueError) as exc:
        if record is not None:
            record.close()
        problem = f"{recording.shown}: loopguard_recorder: {exc}"
    if recording.session is None:  # failed outside the except block: one line, no chained traceback
        pytest.fail(problem, pytrace=False)
    return recording.session


def _beside_test(item: pytest.Item, spec: Any) -> Any:
    """The marker's policy, a policy file named relative to the test file's folder."""
    if isinstance(spec, str | os.PathLike) and str(spec).endswith((".yaml", ".yml")):
        path = Path(spec)
        return str(path if path.is_absolute() else item.path.parent / path)
    return spec


def _header_policy(spec: Any, recording: Path) -> Any:
    """The policy as the recording's header names it: a policy file relative to the recording, which is where
    a trace's own policy file is looked up; a Policy object by its name."""
    if spec is None:
        return "default"
    if isinstance(spec, Mapping):
        return spec
    if isinstance(spec, str | os.PathLike):
        text = str(spec)
        if text.endswith((".yaml", ".yml")):
            return Path(os.path.relpath(Path(text).resolve(), recording.parent)).as_posix()
        return text
    return str(getattr(spec, "name", spec))


def _first_line(function: Any) -> str:
    doc = getattr(function, "__doc__", None) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ") if doc.strip() else ""


# ---- the lock -------------------------------------------------------------------------------------------
def _lock(item: pytest.Item, recording: Recording) -> Path:
    """Take the recording's lock file (O_EXCL: one writer); a lock left by a process that is gone is taken over."""
    lock = recording.path.with_name(recording.path.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    for attempt in (1, 2):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            holder = _read_lock(lock)
            pid = holder.split(" ", 1)[0]
            if attempt == 1 and pid.isdigit() and not _alive(int(pid)):
                lock.unlink(missing_ok=True)  # its writer was killed; if two take it over, O_EXCL picks one
                continue
            raise RecordingError(
                f"{recording.shown}: being recorded by another test ({holder or 'unknown'}; lock file "
                f"{_display_path(lock, item.config.rootpath)}); one writer per recording") from None
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {item.nodeid}\n")
        return lock
    raise AssertionError("unreachable")  # pragma: no cover


def _read_lock(lock: Path) -> str:
    try:
        return lock.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by another user
        return True
    return True


def _clean(recording: Recording) -> None:
    """After the test, passed or not: the Session closed, its partial file and the lock gone."""
    if recording.session is not None:
        recording.session.close()
    if recording.partial is not None:
        recording.partial.unlink(missing_ok=True)
    if recording.lock is not None:
        recording.lock.unlink(missing_ok=True)


# ---- recording and replaying ------------------------------------------------------------------------
def _commit(item: pytest.Item, recording: Recording) -> None:
    """The partial recording replayed, its verdicts written in as expectations, renamed into place (atomic)."""
    from ..errors import LoopguardError
    from ..io._format import dumps, load
    from ..io._golden import observed_trace
    from ..runtime._replay import replay

    session, partial = recording.session, recording.partial
    assert session is not None and partial is not None
    session.close()
    if not session.steps:
        raise RecordingError(f"{recording.shown}: the test reported nothing to its loopguard_recorder Session; "
                             "no recording written")
    try:
        trace = load(partial)
        result = replay(trace, session.policy)
    except LoopguardError as exc:
        raise RecordingError(f"{recording.shown}: the recording does not replay: {exc}") from None
    live = [(s.action, s.verdicts) for s in session.steps]
    replayed = [(s.action, s.verdicts) for s in result.steps]
    if live != replayed:  # the run protocol promises they agree: a recording that disagrees is not kept
        first = next(i for i, (a, b) in enumerate(zip(live, replayed, strict=False)) if a != b) \
            if len(live) == len(replayed) else min(len(live), len(replayed))
        raise RecordingError(f"{recording.shown}: the live run and its replay disagree from step {first}; "
                             "no recording written (a bug: please report it with the test)")
    text = dumps(dataclasses.replace(observed_trace(trace, result), path=None),
                 SUFFIXES[recording.path.suffix.lower()])
    temporary = recording.path.with_name(f".{recording.path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, recording.path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise RecordingError(f"{recording.shown}: cannot write the recording: {exc.strerror}") from None


def _replay(item: pytest.Item, recording: Recording) -> None:
    """The recording replayed under the test's policy (else its own) and checked against its expectations."""
    from ..core._expect import check
    from ..errors import LoopguardError, TraceError
    from ..io._format import load
    from ..io._golden import has_expectations
    from ..report._tables import failure_report
    from ..runtime._replay import replay

    again = (f"if the new verdicts are right, record it again: "
             f"pytest --loopguard-record=all {shlex.quote(_command_id(item))}")
    try:
        trace = load(recording.path)
        result = replay(trace, recording.policy)
    except TraceError as exc:  # named as the test names it, as a trace file's test does
        problem = str(type(exc)(exc.problem, file=recording.shown, step=exc.step, line=exc.line, field=exc.field))
    except LoopguardError as exc:
        problem = f"{recording.shown}: {exc}"
    else:
        problem = ""
    if problem:  # failed outside the except block: one line, no chained traceback
        pytest.fail(problem, pytrace=False)
    if not has_expectations(trace):
        pytest.fail(f"{recording.shown}: the recording holds no expectations, so its replay checks nothing; "
                    f"record it again: pytest --loopguard-record=all {shlex.quote(_command_id(item))}",
                    pytrace=False)
    mismatches = check(result)
    if mismatches:
        pytest.fail(f"{failure_report(recording.shown, result, mismatches, trace.description)}\n{again}",
                    pytrace=False)


def _display_path(path: Path, rootpath: Path) -> str:
    try:
        return path.relative_to(rootpath).as_posix()
    except ValueError:
        return str(path)
