"""pytest fixtures: `loopguard` (replay traces under the active policy, assert their expectations) and
`trace_builder` (write traces fluently in a test).

The active policy is, most specific first: the `policy` argument of a call, the test's
`@pytest.mark.loopguard(policy=..., **overrides)` marker, the `--loopguard-policy` option, the trace's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

import pytest

if TYPE_CHECKING:
    from ..core._expect import Mismatch
    from ..core._model import ReplayResult, Trace
    from ..runtime._policy import Policy

# The plugin registers this module in every pytest process, the xdist controller included, which runs no
# test: the replay core is imported by the methods that use it, when a test first calls one.

__all__ = ["Loopguard", "TraceBuilder", "loopguard", "trace_builder"]


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    # Overrides merge per engine: a marker's loop_guard={"warn_at": 1} and a call's loop_guard={"block_at": 2}
    # both apply; `false` (engine off) replaces whatever was there.
    merged: dict[str, Any] = dict(base)
    for engine, value in extra.items():
        current = merged.get(engine)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[engine] = {**current, **value}
        else:
            merged[engine] = value
    return merged


@final
class Loopguard:
    """Replays traces under the test's active policy and checks their expectations."""

    def __init__(
        self,
        *,
        marker_policy: Any = None,
        marker_overrides: Mapping[str, Any] | None = None,
        option_policy: str | None = None,
        rootpath: Path | None = None,
        test_dir: Path | None = None,
    ) -> None:
        self._rootpath = rootpath
        self._test_dir = test_dir  # the folder of the test module that wrote the paths
        self._marker_policy = self._policy_spec(marker_policy)
        self._marker_overrides = dict(marker_overrides or {})
        self._option_policy = option_policy

    def _path(self, path: str | Path) -> Path:
        """A relative path a test wrote, from pytest's rootdir, else from the test file's folder; never from
        the working folder, so a run from a subfolder reads the same files. Not found: the rootdir's, for
        the error to name."""
        p = Path(path)
        bases = [b for b in (self._rootpath, self._test_dir) if b is not None]
        if p.is_absolute() or not bases:
            return p
        return next((b / p for b in bases if (b / p).exists()), bases[0] / p)

    def _policy_spec(self, spec: Any) -> Any:
        """A policy file a test names (a marker's, a call's), found as `_path` finds it; other specs as given."""
        if isinstance(spec, Path) or (isinstance(spec, str) and spec.endswith((".yaml", ".yml"))):
            return str(self._path(spec))
        return spec

    @property
    def policy(self) -> Policy | None:
        """The policy a trace replays under when the call names none (None: each trace's own policy).

        With marker overrides but no marker or option policy, this is `default` with the overrides; a trace
        that names its own policy gets the overrides on that one instead.
        """
        spec = self._marker_policy if self._marker_policy is not None else self._option_policy
        if spec is None and not self._marker_overrides:
            return None
        from ..runtime._policy import resolve_policy

        policy = resolve_policy(spec)
        return self._overridden(policy, self._marker_overrides)

    def load(self, path: str | Path) -> Trace:
        """The one trace in a file; a relative path is taken from rootdir, else from the test file's folder."""
        from ..io._format import load

        return load(self._path(path))

    def trace(self, source: Trace | str | Path | Mapping[str, Any]) -> Trace:
        """A Trace from a Trace, a file path or a trace mapping."""
        from ..core._model import Trace
        from ..io._format import trace_from_mapping

        if isinstance(source, Trace):
            return source
        if isinstance(source, (str, Path)):
            return self.load(source)
        return trace_from_mapping(source)

    def replay(
        self, source: Trace | str | Path | Mapping[str, Any], policy: Any = None, **overrides: Any
    ) -> ReplayResult:
        """Replay (or, for a scenario, simulate) a trace under the active policy, with engine overrides."""
        from ..io._runner import execute

        trace = self.trace(source)
        return execute(trace, self.resolve(trace, policy, **overrides))

    def resolve(self, trace: Trace, policy: Any = None, **overrides: Any) -> Policy:
        """The policy `trace` replays under for a call with these arguments."""
        if policy is not None:
            spec, extra = self._policy_spec(policy), overrides
        else:
            extra = _merge(self._marker_overrides, overrides)
            if self._marker_policy is not None:
                spec = self._marker_policy
            elif self._option_policy is not None:
                spec = self._option_policy
            else:
                spec = trace.policy
        # only the trace's own policy file is found beside the trace; an option's or marker's is taken as given
        own = spec is trace.policy and trace.path is not None
        base_dir = Path(trace.path).parent if own and trace.path else None
        from ..runtime._policy import resolve_policy

        return self._overridden(resolve_policy(spec, base_dir=base_dir), extra)

    @staticmethod
    def _overridden(policy: Policy, overrides: Mapping[str, Any]) -> Policy:
        if not overrides:
            return policy
        return policy.with_overrides(overrides, name=f"{policy.name}+overrides")

    def check(self, result: ReplayResult) -> list[Mismatch]:
        """Every expectation of the replayed trace that the result does not meet."""
        from ..core._expect import check

        return check(result)

    def assert_ok(self, result: ReplayResult) -> None:
        """Raise AssertionError, with the table of mismatched steps, unless every expectation holds."""
        # the failure points at the caller's line: this frame (and its huge `result` repr) is not shown
        __tracebackhide__ = True
        from ..core._expect import check
        from ..report._tables import mismatch_table, outcome_line, status

        mismatches = check(result)
        if mismatches:
            raise AssertionError(
                f"{outcome_line(result)}: {status(mismatches)}\n{mismatch_table(result, mismatches)}"
            )


@final
class TraceBuilder:
    """Builds a Trace step by step: `trace_builder.tool("click", index=3).done().build(name="x")`.

    Each step method takes `expect` (an action or an expectation mapping) and returns the builder.
    The built trace goes through the same validation as a trace file.
    """

    def __init__(self) -> None:
        self._steps: list[dict[str, Any]] = []
        self._expect: dict[str, Any] | None = None

    def _add(self, step: dict[str, Any], expect: Any, t: int | None) -> TraceBuilder:
        if expect is not None:
            step["expect"] = expect
        if t is not None:
            step["t"] = t
        self._steps.append(step)
        return self

    def tool(
        self,
        name: str,
        result: Any = None,
        /,
        *,
        args: Mapping[str, Any] | None = None,
        expect: Any = None,
        t: int | None = None,
        **kwargs: Any,
    ) -> TraceBuilder:
        """A tool call with its arguments as keywords; `result` is a result mapping or the result text (None: not
        recorded, i.e. ok). `name` and `result` are positional-only, so `tool("create_file", name="a.txt")` passes
        an argument called `name`; arguments called `args`, `expect` or `t` go in `args={...}`.
        """
        step: dict[str, Any] = {"tool": name}
        if args or kwargs:
            step["args"] = {**(args or {}), **kwargs}
        if isinstance(result, str):
            step["result"] = {"text": result}
        elif result is not None:
            step["result"] = dict(result)
        return self._add(step, expect, t)

    def failed(self, name: str, error: str, *, expect: Any = None, t: int | None = None, **args: Any) -> TraceBuilder:
        """A tool call that returned an error."""
        return self.tool(name, {"error": error}, expect=expect, t=t, **args)

    def llm(
        self,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        *,
        error: str | None = None,
        text: str | None = None,
        expect: Any = None,
        t: int | None = None,
    ) -> TraceBuilder:
        """An LLM call (it starts a turn unless it failed)."""
        fields = {"input_tokens": input_tokens, "output_tokens": output_tokens, "error": error, "text": text}
        return self._add({"llm": {k: v for k, v in fields.items() if v is not None}}, expect, t)

    def message(
        self, text: str, role: str = "user", *, origin: str | None = None, name: str | None = None,
        expect: Any = None, t: int | None = None,
    ) -> TraceBuilder:
        """A message; `origin` is `user` (a person, the default), `harness` or `agent` (with `name`)."""
        fields = {"role": role, "text": text, "origin": origin, "name": name}
        return self._add({"message": {k: v for k, v in fields.items() if v is not None}}, expect, t)

    def rejected(
        self, reason: str = "no tool call", text: str | None = None, *, input_tokens: int | None = None,
        output_tokens: int | None = None, expect: Any = None, t: int | None = None,
    ) -> TraceBuilder:
        """A model turn the harness refused: a turn with no accepted call."""
        rejected: dict[str, Any] = {"reason": reason}
        if text is not None:
            rejected["text"] = text
        usage = {k: v for k, v in (("input_tokens", input_tokens), ("output_tokens", output_tokens)) if v is not None}
        if usage:
            rejected["llm"] = usage
        return self._add({"rejected": rejected}, expect, t)

    def phase(self, phase: str, *, expect: Any = None, t: int | None = None) -> TraceBuilder:
        return self._add({"phase": phase}, expect, t)

    def done(
        self, success: bool | None = True, text: str = "", *, expect: Any = None, t: int | None = None
    ) -> TraceBuilder:
        """The agent's final answer: it ends the run as completed."""
        done: dict[str, Any] = {}
        if success is not None:
            done["success"] = success
        if text:
            done["text"] = text
        return self._add({"done": done}, expect, t)

    def repeat(self, times: int) -> TraceBuilder:
        """The last step `times` more times (without its expectation)."""
        if not self._steps:
            raise ValueError("repeat() needs a step to repeat")
        last = {k: v for k, v in self._steps[-1].items() if k != "expect"}
        self._steps.extend(dict(last) for _ in range(times))
        return self

    def expect_run(self, **expect: Any) -> TraceBuilder:
        """Run-level expectations: outcome, stopped_by, stopped_at, counts."""
        self._expect = expect
        return self

    def mapping(self, *, name: str = "built", policy: Any = None, **header: Any) -> dict[str, Any]:
        """The trace mapping the builder holds (what a trace file would contain)."""
        out: dict[str, Any] = {"loopguard": 1, "name": name}
        if policy is not None:
            out["policy"] = policy
        out.update(header)
        out["steps"] = [dict(s) for s in self._steps]
        if self._expect is not None:
            out["expect"] = dict(self._expect)
        return out

    def build(self, *, name: str = "built", policy: Any = None, **header: Any) -> Trace:
        """The Trace: header fields (description, task, context, strict, ...) as keyword arguments."""
        from ..io._format import trace_from_mapping

        return trace_from_mapping(self.mapping(name=name, policy=policy, **header))


@pytest.fixture
def loopguard(request: pytest.FixtureRequest) -> Loopguard:
    """Replay traces under the test's active policy (marker > --loopguard-policy > the trace's own)."""
    marker = request.node.get_closest_marker("loopguard")
    marker_policy: Any = None
    overrides: dict[str, Any] = {}
    if marker is not None:
        overrides = dict(marker.kwargs)
        marker_policy = overrides.pop("policy", marker.args[0] if marker.args else None)
    return Loopguard(
        marker_policy=marker_policy,
        marker_overrides=overrides,
        option_policy=request.config.getoption("loopguard_policy", None),
        rootpath=request.config.rootpath,
        test_dir=request.node.path.parent,
    )


@pytest.fixture
def trace_builder() -> TraceBuilder:
    """A fresh TraceBuilder."""
    return TraceBuilder()
