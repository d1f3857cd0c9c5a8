"""What `loopguard diff` does: replay a corpus under two policies and show what moved (text, Markdown, JSON).

A policy is anything `--policy` takes, or `git:REV:PATH`: a policy file as it was at a git revision
(`git:HEAD:policies/strict.yaml` against the edited `policies/strict.yaml` shows what an edit changes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ..errors import LoopguardError, PolicyError, TraceError
from ..eval._diff import Change, TraceDiff, diff_results
from ..io._runner import execute
from ..report._console import fit_table, progress
from ..report._markdown import md_table
from ..runtime._policy import Policy, resolve_policy
from ._common import as_trace_error, out, validate_traces

__all__ = ["compare", "diff_policy", "render_markdown", "render_text"]

GIT_PREFIX = "git:"


def diff_policy(spec: str) -> Policy:
    """A policy from a `--before`/`--after` value; `git:REV:PATH` reads PATH as of REV with `git show`."""
    if not spec.startswith(GIT_PREFIX):
        return resolve_policy(spec)
    rev, sep, path = spec[len(GIT_PREFIX):].partition(":")
    if not sep or not rev or not path:
        raise PolicyError(f"{spec!r}: expected git:REV:PATH, e.g. git:HEAD:policies/strict.yaml")
    try:
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=False)
    except OSError as exc:
        raise PolicyError(f"{spec!r}: cannot run git ({exc.strerror})") from None
    if shown.returncode != 0:
        said = shown.stderr.strip().splitlines()
        raise PolicyError(f"{spec!r}: {said[-1] if said else 'git failed'}")
    try:
        raw = yaml.safe_load(shown.stdout)
    except yaml.YAMLError as exc:
        raise PolicyError(f"YAML error: {exc}", source=spec) from None
    if not isinstance(raw, dict):
        raise PolicyError("a policy file must hold a mapping", source=spec)
    # the name the working copy goes by (its `name:`, else its stem), at this revision: one label per policy
    raw["name"] = f"{raw.get('name') or Path(path).stem}@{rev}"
    return resolve_policy(raw)


def _step(change: Change) -> tuple[str, str]:
    b, a = change.before, change.after
    return (
        "" if b is None else f"{b.step}: {b.action} {b.reason}",
        "" if a is None else f"{a.step}: {a.action} {a.reason}",
    )


def _saved(before: int, after: int) -> str:
    n = before - after
    return f"{before} → {after}" + (f" ({n} saved)" if n > 0 else f" ({-n} more)" if n < 0 else "")


def _ending(d: TraceDiff, which: str) -> str:
    r = d.before if which == "before" else d.after
    return r.outcome + (f" at {r.stopped_at}" if r.stopped_at is not None else "")


def render_text(diffs: Sequence[TraceDiff], before: str, after: str, *, show_all: bool = False) -> str:
    lines: list[str] = []
    for d in diffs:
        if not d.moved and not show_all:
            continue
        lines.append(f"{d.file or ''}::{d.trace}: {_ending(d, 'before')} → {_ending(d, 'after')}; "
                     f"steps {_saved(*d.steps)}; tokens {_saved(*d.tokens)}")
        if d.changes:
            rows = [[c.kind, *_step(c)] for c in d.changes]
            lines.append(fit_table(rows, ["change", before, after]))
        lines += [f"  {note}" for note in _what_if(d)]
        lines.append("")
    moved = sum(1 for d in diffs if d.moved)
    lines.append(f"loopguard diff: {len(diffs)} traces, {moved} moved ({before} → {after})")
    return "\n".join(lines)


def render_markdown(diffs: Sequence[TraceDiff], before: str, after: str, *, show_all: bool = False) -> str:
    moved = [d for d in diffs if d.moved or show_all]
    out = [f"## loopguard diff: `{before}` → `{after}`", "",
           f"{len(diffs)} traces, {sum(1 for d in diffs if d.moved)} moved.", ""]
    if moved:
        rows = [[f"`{d.trace}`", _ending(d, "before"), _ending(d, "after"), _saved(*d.steps), _saved(*d.tokens),
                 "<br>".join(f"{c.kind}: {' → '.join(s for s in _step(c) if s)}" for c in d.changes)]
                for d in moved]
        out += [md_table(["trace", before, after, "steps", "tokens", "interventions"], rows), ""]
    out += [f"- `{d.trace}`: {note}" for d in diffs for note in _what_if(d)]
    return "\n".join(out)


def _what_if(d: TraceDiff) -> list[str]:
    """The what-if notes of a trace's two replays: calls the recording's policy blocked that ran under one."""
    return [note for note in (d.before.what_if_note(), d.after.what_if_note()) if note is not None]


def compare(args: argparse.Namespace) -> tuple[int, list[TraceError]]:
    """The command: status 0 nothing moved, 1 something moved, with the bad inputs met on the way.

    Like `run`, a bad file is reported and the others are still compared (a bad `--before`/`--after`
    raises: nothing can be compared).
    """
    before, after = diff_policy(args.before), diff_policy(args.after)
    traces, errors = validate_traces(args.paths)
    diffs: list[TraceDiff] = []
    for trace in progress(traces, "diffing"):
        try:
            diffs.append(diff_results(execute(trace, before), execute(trace, after)))
        except LoopguardError as exc:
            errors.append(as_trace_error(exc, trace))
    if args.json:
        document: dict[str, Any] = {
            "before": before.name,
            "after": after.name,
            "traces": len(diffs),
            "moved": sum(1 for d in diffs if d.moved),
            "diffs": [d.to_dict() for d in diffs if d.moved or args.all],
        }
        out(json.dumps(document, indent=2, ensure_ascii=False))
    elif args.markdown:
        out(render_markdown(diffs, before.name, after.name, show_all=args.all))
    else:
        out(render_text(diffs, before.name, after.name, show_all=args.all))
    return (1 if any(d.moved for d in diffs) else 0), errors
