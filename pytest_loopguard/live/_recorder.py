"""Append-only JSONL trace writer: the header first, then one flushed line per event.

    with Recorder("runs/today.jsonl", name="today", policy="default") as rec:
        rec.write(ToolStep(0, ToolCall.of("read_file", {"path": "a.py"}), ToolResult()))

Every line reaches the operating system before `write` returns, so a run killed mid-write loses at most
its torn last line (which `traceio` reports as a warning). Strings pass through a `Redactor` first, one
per recording, so secrets never reach the file and equal secrets stay equal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, final

from ..core._model import Step, Task, Trace
from ._redact import Redactor

__all__ = ["Recorder"]


@final
class Recorder:
    """Writes one trace as JSONL, a line per step, as the run happens.

    Header fields are those of a trace (`name` defaults to the file's stem; `source.kind` is
    `recorded`). `redactor`: the one to use (default: `Redactor.configured()`, the built-in rules plus
    the project's `[tool.loopguard] redact`); `redact=False` writes strings as they are. `durable=True`
    also fsyncs each line (survives a power cut, not just a killed process; slower).
    """

    __slots__ = ("_fd", "_index", "durable", "path", "redactor")

    def __init__(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        policy: str | Mapping[str, Any] | None = None,
        task: Task | None = None,
        context: Mapping[str, Any] | None = None,
        description: str = "",
        tags: Sequence[str] = (),
        source: Mapping[str, Any] | None = None,
        max_turns: int | None = None,
        redactor: Redactor | None = None,
        redact: bool = True,
        overwrite: bool = False,
        durable: bool = False,
    ) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() != ".jsonl":
            raise ValueError(f"{self.path}: a recording is a .jsonl file (one line per event)")
        self.redactor = (redactor or Redactor.configured()) if redact else None
        self.durable = durable
        header = Trace(
            name=name or self.path.stem,
            description=description,
            tags=tuple(tags),
            source={"kind": "recorded", **(source or {})},
            policy=policy,
            task=task,
            context=dict(context or {}),
            max_turns=max_turns,
        )
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            self._fd: int | None = os.open(self.path, flags, 0o644)
        except FileExistsError:
            raise FileExistsError(f"{self.path}: already exists (pass overwrite=True to replace it)") from None
        self._index = 0
        # the written form is loaded with the first recorder, not with the package: an agent that embeds
        # the Guard or a Session without recording never pays for it
        from ..io._dump import trace_to_mapping

        self._line(trace_to_mapping(header, steps=False))

    @property
    def steps(self) -> int:
        """How many steps have been written."""
        return self._index

    @property
    def closed(self) -> bool:
        return self._fd is None

    def write(self, step: Step, *, redacted: bool = False) -> None:
        """Append one step (its index is the recorder's count, whatever `step.index` says).

        `redacted`: its strings already went through this recorder's redactor (skips a second pass).
        """
        from ..io._dump import step_to_mapping  # loaded by __init__ already: a lookup in sys.modules

        self.write_mapping(step_to_mapping(step), redacted=redacted)

    def write_mapping(self, raw: Mapping[str, Any], *, redacted: bool = False) -> None:
        """Append one step given in its written form (a step kind this package's model cannot build yet)."""
        self._line(raw, redacted)
        self._index += 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _line(self, raw: Mapping[str, Any], redacted: bool = False) -> None:
        if self._fd is None:
            raise ValueError(f"{self.path}: the recorder is closed")
        if self.redactor is not None and not redacted:
            raw = self.redactor.value(raw)
        data = (json.dumps(raw, ensure_ascii=False, default=_json_default) + "\n").encode("utf-8")
        # one os.write per line, straight to the OS (no buffer a killed process would lose); a short
        # write (a full disk, a signal) is continued rather than leaving half a line behind
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        if self.durable:
            os.fsync(self._fd)


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
