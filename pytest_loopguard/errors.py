"""The exceptions pytest-loopguard raises.

    LoopguardError
     ├── TraceError (also ValueError)     a trace file or mapping is malformed
     │    ├── ScenarioError               a simulation scenario is malformed
     │    └── NotATraceError              a file with no top-level `loopguard` key: some other JSON/YAML
     ├── PolicyError (also ValueError)    a policy, preset or override is malformed
     ├── RedactionError (also ValueError) a user redaction rule is malformed
     ├── SessionError (also RuntimeError) a live session's events came out of order
     └── MissingExtraError (also ModuleNotFoundError) a feature needs what only the `pytest` extra installs

Every error carries the place it concerns so that a user can fix the input without a traceback.
"""

from __future__ import annotations

import reprlib
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, final

__all__ = [
    "EXTRA_MODULES", "GuardProcessError", "LoopguardError", "LoopguardWarning", "MissingExtraError", "NotATraceError",
    "PolicyError", "RedactionError", "ScenarioError", "SessionError", "TraceError", "brief", "needs_extra",
]

_BRIEF = reprlib.Repr()  # keyword arguments need Python 3.12
_BRIEF.maxlevel, _BRIEF.maxdict, _BRIEF.maxlist, _BRIEF.maxtuple = 3, 6, 6, 6
_BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlong = 80, 80, 40


def _rebuilt(cls: type[LoopguardError], problem: str, keywords: dict[str, Any]) -> LoopguardError:
    """An error made again from its fields (what `__reduce__` gives pickle)."""
    return cls(problem, **keywords)  # every class that names fields (`_fields`) takes these keywords


class LoopguardError(Exception):
    """Root of every error pytest-loopguard raises on purpose."""

    def _fields(self) -> tuple[str, dict[str, Any]] | None:
        """The problem and keyword arguments the error is made from; None: its message is all it holds."""
        return None

    def __reduce__(self) -> Any:
        # Exception pickles as `cls(*args)`, args being the rendered message: an error with keyword fields
        # would come back from another process (`loopguard run -j`) with its message rendered twice or not at
        # all, so it is made again from its fields; attributes set later (notes) ride along as its state.
        fields = self._fields()
        if fields is None:
            return super().__reduce__()
        return _rebuilt, (type(self), *fields), self.__dict__


class TraceError(LoopguardError, ValueError):
    """A malformed trace: names the file, the step index, the line, the field and what was expected."""

    def __init__(
        self,
        problem: str,
        *,
        file: str | None = None,
        step: int | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.problem = problem
        self.file = file
        self.step = step
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _fields(self) -> tuple[str, dict[str, Any]] | None:
        return self.problem, {"file": self.file, "step": self.step, "line": self.line, "field": self.field}

    def _render(self) -> str:
        where = self.file or "<trace>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        parts = [where]
        if self.step is not None:
            parts.append(f"step {self.step}")
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        return ": ".join(parts) + f": {self.problem}"

    def located(self, *, file: str | None = None, line: int | None = None) -> TraceError:
        """The same error with the file (and line) filled in where they were unknown."""
        return type(self)(
            self.problem,
            file=self.file or file,
            step=self.step,
            line=self.line if self.line is not None else line,
            field=self.field,
        )


@final
class ScenarioError(TraceError):
    """A malformed simulation scenario (unknown behaviour, undefined page or file, bad script step)."""


@final
class NotATraceError(TraceError):
    """A file that does not claim to be a trace: no document has a top-level `loopguard` key.

    Folders of traces skip such files (an OTel export kept beside the traces is not a broken trace); a file
    named on its own is still an error. `document` is what was parsed (None when the text was not parsed:
    it never mentions `loopguard`), so a caller can recognise the format without parsing again.
    """

    def __init__(self, problem: str, *, file: str | None = None, line: int | None = None, document: object = None,
                 parsed: bool = False) -> None:
        super().__init__(problem, file=file, line=line, field="loopguard")
        self.document = document
        self.parsed = parsed

    def _fields(self) -> tuple[str, dict[str, Any]] | None:
        return self.problem, {"file": self.file, "line": self.line, "document": self.document, "parsed": self.parsed}


@final
class PolicyError(LoopguardError, ValueError):
    """A malformed policy: unknown preset, engine or setting, or a value of the wrong type."""

    def __init__(self, problem: str, *, field: str | None = None, source: str | None = None) -> None:
        self.problem = problem
        self.field = field
        self.source = source
        prefix = f"{source}: " if source else ""
        where = f"policy field '{field}': " if field else "policy: "
        super().__init__(f"{prefix}{where}{problem}")

    def _fields(self) -> tuple[str, dict[str, Any]] | None:
        return self.problem, {"field": self.field, "source": self.source}


@final
class RedactionError(LoopguardError, ValueError):
    """A user redaction rule that cannot be used (an invalid regex); names the rule."""

    def __init__(self, problem: str, *, rule: str) -> None:
        self.problem = problem
        self.rule = rule
        super().__init__(f"redact rule {rule}: {problem}")

    def _fields(self) -> tuple[str, dict[str, Any]] | None:
        return self.problem, {"rule": self.rule}


@final
class SessionError(LoopguardError, RuntimeError):
    """A live session used out of order (a call the model did not ask for, a result for no call, an event
    after the run ended): what was expected instead is in the message."""


@final
class GuardProcessError(LoopguardError, RuntimeError):
    """An external guard process broke the guard protocol (no reply in time, a malformed or extra reply, an
    early exit, an error it reported): one line naming the guard's command, the run and the step."""


# What the `pytest` extra installs (pyproject.toml) beyond the runtime: the plugin, fixtures and strategies, the
# simulators and the command's tables need them; the runtime an agent embeds never imports them.
EXTRA_MODULES = frozenset({"pytest", "_pytest", "hypothesis", "faker", "tabulate"})
INSTALL_EXTRA = "pip install 'pytest-loopguard[pytest]'"


@final
class MissingExtraError(LoopguardError, ModuleNotFoundError):
    """A feature needs a package only the `pytest` extra installs: one line naming it and the command to run."""

    def __init__(self, feature: str, *, module: str) -> None:
        self.feature = feature
        super().__init__(f"{feature} needs {module}, which comes with the pytest extra: {INSTALL_EXTRA}")
        self.name = module  # what ModuleNotFoundError reports as the missing module

    def _fields(self) -> tuple[str, dict[str, Any]] | None:
        return self.feature, {"module": self.name}

    @classmethod
    def of(cls, exc: BaseException, feature: str) -> MissingExtraError | None:
        """`exc` as this error when it is an import of one of the extra's packages that failed; None otherwise."""
        if isinstance(exc, MissingExtraError):
            return exc
        if not isinstance(exc, ModuleNotFoundError):
            return None
        root = (exc.name or "").partition(".")[0]
        return cls(feature, module=root) if root in EXTRA_MODULES else None


@contextmanager
def needs_extra(feature: str) -> Iterator[None]:
    """Imports of the `pytest` extra's packages inside the block raise MissingExtraError naming `feature`."""
    try:
        yield
    except ModuleNotFoundError as exc:
        missing = MissingExtraError.of(exc, feature)
        if missing is None:
            raise
        raise missing from exc


@final
class LoopguardWarning(UserWarning):
    """Something was read but not used, e.g. the torn last line of a JSONL trace."""


def warn(message: str) -> None:
    warnings.warn(message, LoopguardWarning, stacklevel=3)


def brief(value: Any) -> str:
    """A bad value as an error message shows it: short, whatever its size or nesting (a repr could hang)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"  # repr() of an int over 4300 digits raises
    return _BRIEF.repr(value)
