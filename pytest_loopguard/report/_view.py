"""The step viewer: runs under one or more policies as one self-contained HTML page (`loopguard view`).

The page is the data (one JSON block, every `<` escaped so no text of a run can end the block), the script and
the style shipped beside this module (`view.js`, `view.css`), inlined: nothing is fetched, so it works from
`file://` and as a CI artefact. The script renders each run as a timeline, the list of steps only as far as it is
scrolled (a 10,000-step run stays quick), and a clicked step's call, result, verdicts and engine state.

What the page shows comes from the replay and the engines, never from logic of its own: the verdicts are the
replay's, the engine state is each engine's `state()` read after the step (a second replay, step by step, whose
verdicts must equal the first's), the loops are what the caller's loop finder (`loopguard scan`'s) returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from html import escape
from importlib import resources
from typing import Any, Final

from ..core._expect import check
from ..core._model import NOT_REACHED, ReplayResult, Step, StepResult, Trace, Verdict, plain
from ..engines.base import Engine
from ..runtime._protocol import turn_plan
from ..runtime._replay import Replayer, policy_for

__all__ = ["TEXT_LIMIT", "LoopFinder", "embed_json", "page", "run_data", "view_page", "view_section"]

TEXT_LIMIT: Final = 20_000  # characters of a call's arguments or a result kept in the page; the rest is counted
IDENTITY_LIMIT: Final = 300
# The loops of a run's reached steps: (steps, each step's verdicts, the positions where the replay ended) ->
# one mapping per loop with `first` and `last` (step positions), `what`, `calls`, `tokens`, `action`, `reasons`.
LoopFinder = Callable[[Sequence[Step], Sequence[tuple[Verdict, ...]], set[int]], list[dict[str, Any]]]


def _cut(text: str | None, limit: int = TEXT_LIMIT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit:,} more characters)"


def _step_data(step: Step) -> dict[str, Any]:
    """What the page shows of a step whatever the policy: its label, the call, the result, the model's usage."""
    out: dict[str, Any] = {"index": step.index, "kind": step.kind, "label": step.label(200)}
    if step.t is not None:
        out["t"] = step.t
    call = step.call
    if call is not None:
        out["tool"] = call.tool
        out["args"] = _cut(json.dumps(call.args, indent=2, ensure_ascii=False, default=str))
        out["identity"] = _cut(call.fingerprint.replace("\x1f", " "), IDENTITY_LIMIT)
    result = step.result
    if result is not None:
        out["ok"] = result.ok
        out["result"] = _cut(result.text)
        if result.error is not None:
            out["error"] = _cut(result.error)
        if result.exit_code is not None:
            out["exit_code"] = result.exit_code
        if result.tokens is not None:
            out["result_tokens"] = result.tokens
    usage = step.llm if step.llm is not None else (step.rejected.llm if step.rejected is not None else None)
    if usage is not None:
        out["tokens"] = (usage.input_tokens or 0) + (usage.output_tokens or 0)
        if usage.error is not None:
            out["error"] = _cut(usage.error)
        if usage.text:
            out["text"] = _cut(usage.text)
    if step.message is not None:
        out["role"] = step.message.role
        out["text"] = _cut(step.message.text)
    elif step.rejected is not None:
        out["text"] = _cut(step.rejected.reason)
    elif step.done is not None:
        out["text"] = _cut(step.done.text)
    elif step.phase is not None:
        out["text"] = step.phase
    if step.not_run is not None:
        out["not_run"] = {k: v for k, v in (("how", step.not_run.how), ("reason", step.not_run.reason),
                                            ("by", step.not_run.by)) if v is not None}
    if step.compacted is not None:
        c = step.compacted
        out["compacted"] = {k: v for k, v in (("trigger", c.trigger), ("tokens_before", c.tokens_before))
                            if v is not None}
    return out


def _plain_state(state: Mapping[str, Any]) -> dict[str, Any]:
    # identities join the tool and its arguments with a unit separator; long ones are cut like the call's
    return {k: _cut(v.replace("\x1f", " "), IDENTITY_LIMIT) if isinstance(v, str) else v for k, v in state.items()}


def _engine_states(trace: Trace, result: ReplayResult, policy: Any) -> dict[str, dict[str, Any]]:
    """Each reached step's engine state, read from the engines after the step; empty when this step-by-step replay
    does not decide as the result did (a run the caller replayed with plugins, say): no state is better than
    another run's state."""
    resolved, _ = policy_for(trace, policy)
    replayer = Replayer(trace, resolved, trace.objective)
    engines = replayer.guard.run.engines
    plan = turn_plan(trace.steps)
    states: dict[str, dict[str, Any]] = {}
    for step, got in zip(trace.steps, result.steps, strict=True):
        if got.action == NOT_REACHED:
            break
        mine = replayer.step(step, plan.get(step.index))
        # the same decisions (a simulated run's verdict data may hold what only the recording knew, such as a
        # compaction's input tokens, so the data is not compared)
        if [(v.engine, v.action, v.reason) for v in mine.verdicts] != [(v.engine, v.action, v.reason)
                                                                      for v in got.verdicts]:
            return {}
        state = {name: _plain_state(s) for name, engine in engines.items()
                 if isinstance(engine, Engine) and (s := engine.state(step.call))}
        if state:
            states[str(step.index)] = state
    return states


def _verdict(v: Verdict) -> dict[str, Any]:
    return {"engine": v.engine, "action": plain(v.action), "reason": v.reason, "message": v.message,
            "data": json.loads(json.dumps(dict(v.data), default=str))}


def _policy_data(result: ReplayResult, policy: Any, loops: LoopFinder | None) -> dict[str, Any]:
    steps: Sequence[StepResult] = result.steps
    reached = [s for s in steps if s.action != NOT_REACHED]
    ends = {result.stopped_at} if result.stopped_at is not None else set()
    out: dict[str, Any] = {
        "policy": result.policy,
        "outcome": plain(result.outcome),
        "stopped_at": result.stopped_at,
        "stopped_by": result.stopped_by,
        "actions": [plain(s.action) for s in steps],
        "verdicts": {str(s.index): [_verdict(v) for v in s.verdicts] for s in steps if s.verdicts},
        "state": _engine_states(result.trace, result, policy),
        "mismatches": [str(m) for m in check(result)],
        "loops": [] if loops is None else loops(result.trace.steps[: len(reached)],
                                                [s.verdicts for s in reached], ends),
    }
    return out


def run_data(results: Sequence[tuple[ReplayResult, Any]], loops: LoopFinder | None = None) -> list[dict[str, Any]]:
    """The page's runs for one trace replayed under each policy (each result with the policy argument that gave
    it, None for the trace's own): one run with the policies side by side when they replayed the same steps, else
    (a scenario simulated anew under each policy) one run per policy."""
    groups: list[list[tuple[ReplayResult, Any]]] = []
    for result, policy in results:
        same = next((g for g in groups if g[0][0].trace is result.trace), None)
        if same is None:
            groups.append([(result, policy)])
        else:
            same.append((result, policy))
    runs = []
    for group in groups:
        trace = group[0][0].trace
        policies = [_policy_data(r, p, loops) for r, p in group]
        differs = [i for i in range(len(trace.steps)) if len({p["actions"][i] for p in policies}) > 1]
        runs.append({
            "name": trace.name if len(groups) == 1 else f"{trace.name} @ {group[0][0].policy}",
            "file": trace.path,
            "description": trace.description,
            "steps": [_step_data(s) for s in trace.steps],
            "policies": policies,
            "differs": differs,
        })
    return runs


def embed_json(data: Any) -> str:
    """`data` as JSON safe inside a `<script>` block: no `<`, `>` or `&` (so no `</script>` or `<!--`), and no
    line or paragraph separator, whatever the runs' text holds; `JSON.parse` reads it back unchanged."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def view_section(runs: Sequence[Mapping[str, Any]]) -> str:
    """The viewer as a fragment of a page: its container, its data, its script (once per page). The script is
    CDATA to an XML reader and a comment line to HTML's, so the page stays well-formed XML."""
    return (f'<div id="lg-view" class="lg-view"></div>\n'
            f'<script type="application/json" id="lg-data">{embed_json({"runs": list(runs)})}</script>\n'
            f"<script>//<![CDATA[\n{_asset('view.js')}//]]>\n</script>\n")


def page(title: str, body: str, extra_css: str = "") -> str:
    """A whole page around `body` with the viewer's style."""
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"/><title>{escape(title)}</title>'
            f"<style>{_asset('view.css')}{extra_css}</style></head><body>\n"
            f"{body}</body></html>\n")


def view_page(runs: Sequence[Mapping[str, Any]], title: str = "loopguard view") -> str:
    """The `loopguard view` page: the given runs in the viewer."""
    return page(title, f"<h1>{escape(title)}</h1>\n{view_section(runs)}")
