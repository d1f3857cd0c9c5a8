"""Cline and Roo Code task folders: `api_conversation_history.json`, `ui_messages.json`, or the folder holding them.

`api_conversation_history.json` is the list of Anthropic-style messages Cline sent the model. Each
assistant message is an `llm` step (usage from `metrics.tokens`: `prompt` + `cached` in, `completion`
out), then one tool step per native `tool_use` block — or, from Cline versions before native tool
calling, per XML tool tag in its text (`<read_file><path>a.py</path></read_file>`). Cline answers calls
with user text, `[read_file for 'a.py'] Result:` then the content, paired with the oldest waiting call of
that tool; a `tool_result` block (native tool calling) pairs by id. The answer's markers decide failed,
denied and cancelled calls (`_cline_text.py` lists them; docs/import.md too). In the user messages,
`<task>` and the person's `<feedback>` / `<user_message>` are `origin: user`; the rest of a user message
that is not an answer or `<environment_details>` (reminders, `[TASK RESUMPTION]`, "[ERROR] You did not use
a tool…") is one `origin: harness` message. Thinking blocks are not steps.

`ui_messages.json` alone is the run as the chat panel showed it (`_cline_ui.py`). A folder holding both
reads the calls from the API history and adds from the UI log what it lacks, after the API message the
entry's `conversationHistoryIndex` names: failed model requests (`error_retry`, `api_req_failed`: failed
`llm` steps), the harness's `mistake_limit_reached`, `auto_approval_max_req_reached` and errors
(`origin: harness`), and context truncation (`conversationHistoryDeletedRange`: a `compacted` step).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ..core._limits import MAX_LOG_BYTES
from ..core._safeload import read_bytes
from ..errors import TraceError
from ._cline_text import NO_TOOLS_USED, result_blocks, xml_calls
from ._cline_ui import Calls, environment_free, extra_step, settle, truncated_range, ui_steps
from .base import ImportedRun, Importer, Source
from .build import ImportedRunBuilder, obj, parse_arguments, result, seq, text_of

__all__ = ["API_FILE", "UI_FILE", "ClineImporter", "is_api_history", "is_ui_log"]

API_FILE: Final = "api_conversation_history.json"
UI_FILE: Final = "ui_messages.json"
_TASK: Final = re.compile(r"<task>\n?(.*?)\n?</task>", re.S)
_PERSON: Final = re.compile(r"<(feedback|user_message)>\n?(.*?)\n?</\1>", re.S)
_HEADER_HINT: Final = re.compile(r"^\[[a-z_]+ for [^\n]*\] Result:", re.M)


# ---- recognising ------------------------------------------------------------------------------------
def _texts(message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [str(b.get("text")) for b in seq(content) if isinstance(b, Mapping) and isinstance(b.get("text"), str)]


def is_api_history(doc: Any) -> bool:
    """A list of role/content messages whose user text carries Cline's own markers: the `<task>` the
    first message wraps the prompt in, `<environment_details>`, or a `[tool for '…'] Result:` header."""
    if not isinstance(doc, list) or not doc:
        return False
    if not all(isinstance(m, Mapping) and m.get("role") in ("user", "assistant") and "content" in m for m in doc):
        return False
    for m in doc[:8]:
        if m.get("role") == "user" and any(
                t.lstrip().startswith("<task>") or "<environment_details>" in t or _HEADER_HINT.search(t)
                for t in _texts(m)):
            return True
    return False


def is_ui_log(doc: Any) -> bool:
    """A list of `{ts, type: say|ask, …}` entries."""
    return isinstance(doc, list) and bool(doc) and all(
        isinstance(e, Mapping) and e.get("type") in ("say", "ask") and "ts" in e for e in doc)


# ---- the API history ----------------------------------------------------------------------------------
def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in seq(content) if isinstance(b, Mapping)]


def _assistant(b: ImportedRunBuilder, calls: Calls, m: Mapping[str, Any], i: int) -> None:
    blocks = _blocks(m.get("content"))
    text = "\n".join(str(bl.get("text", "")) for bl in blocks if bl.get("type") == "text").strip("\n")
    tokens = obj(obj(m.get("metrics")).get("tokens"))
    usage = obj(m.get("usage"))
    prompt = tokens.get("prompt", usage.get("input_tokens"))
    cached = tokens.get("cached", 0)
    completion = tokens.get("completion", usage.get("output_tokens"))
    x: dict[str, Any] = {}
    if isinstance(cached, int) and cached and isinstance(prompt, int):
        x["uncached-input-tokens"] = prompt
    thinking = sum(1 for bl in blocks if bl.get("type") in ("thinking", "redacted_thinking"))
    if thinking:
        x["thinking-blocks"] = thinking
    model = obj(m.get("modelInfo")).get("modelId")
    if isinstance(model, str) and model:
        b.source["model"] = model
    b.llm(index=i, input_tokens=prompt + cached if isinstance(prompt, int) and isinstance(cached, int) else None,
          output_tokens=completion if isinstance(completion, int) else None, text=text, x=x)
    native = [bl for bl in blocks if bl.get("type") == "tool_use"]
    for bl in native:
        args, extra = parse_arguments(bl.get("input"))
        if isinstance(bl.get("id"), str):
            extra["x-call-id"] = bl["id"]
        calls.add(b.tool(str(bl.get("name") or "unnamed"), args, index=i, x=extra))
    if not native:
        for name, args in xml_calls(text):
            calls.add(b.tool(name, args, index=i, x={"xml-tool": True}))
    for bl in blocks:
        if bl.get("type") not in ("text", "tool_use", "thinking", "redacted_thinking"):
            b.skip(f"{b.file} item {i}: {bl.get('type')} block in an assistant message")


def _person(b: ImportedRunBuilder, text: str, i: int) -> str:
    """The person's words in a harness text (`<feedback>`, `<user_message>`) as user messages; the rest."""
    for found in _PERSON.finditer(text):
        b.message("user", found.group(2), index=i, origin="user")
    return _PERSON.sub("", text)


def _user(b: ImportedRunBuilder, calls: Calls, m: Mapping[str, Any], i: int) -> None:
    harness: list[str] = []
    for bl in _blocks(m.get("content")):
        kind = bl.get("type")
        if kind == "tool_result":
            step = calls.by_id(str(bl.get("tool_use_id")))
            content = text_of(bl.get("content")) if not isinstance(bl.get("content"), list) else "\n".join(
                str(p.get("text", "")) for p in bl["content"] if isinstance(p, Mapping))
            if step is None:
                b.warn(f"{b.file} item {i}: orphan tool_result {bl.get('tool_use_id')!r}: no call waits for it")
            elif bl.get("is_error") is True:
                b.set_result(step, result(error=content or "tool_result is_error without text"))
            else:
                settle(b, step, step["tool"], content)
            continue
        if kind != "text":
            b.skip(f"{b.file} item {i}: {kind} block in a user message")
            continue
        text = environment_free(str(bl.get("text", "")))
        task = _TASK.search(text)
        if task is not None:
            b.message("user", task.group(1), index=i, origin="user")
            text = text[: task.start()] + text[task.end():]
        answers, before = result_blocks(text)
        for answer in answers:
            if calls.answer(answer, {"index": i}) is None:
                b.warn(f"{b.file} item {i}: orphan result of {answer.tool!r}: no {answer.tool} call waits for it")
            if answer.text.lstrip().startswith("The user "):
                _person(b, answer.text, i)
        rest = _person(b, before, i).strip()
        if rest:
            harness.append(rest)
    if harness:
        text = "\n\n".join(harness)
        b.message("user", text, index=i, origin="harness",
                  x={"no-tools-used": True} if text.startswith(NO_TOOLS_USED) else None)


def _api_steps(b: ImportedRunBuilder, messages: Sequence[Any], ui: Sequence[Any], ui_file: str) -> None:
    extras: dict[int, list[tuple[int, Mapping[str, Any]]]] = {}
    deleted: list[int] | None = None
    for k, entry in enumerate(ui):
        if not isinstance(entry, Mapping):
            continue
        at = entry.get("conversationHistoryIndex")
        at = at if isinstance(at, int) and not isinstance(at, bool) else -1
        rng = truncated_range(entry)
        # `say`/`ask` as strings only: a log may hold a list there, which no set lookup takes
        said = [entry.get(how) for how in ("say", "ask") if isinstance(entry.get(how), str)]
        if (rng is not None and rng != deleted) or any(what in _UI_EXTRAS for what in said):
            extras.setdefault(max(at, -1), []).append((k, entry))
        deleted = rng if rng is not None else deleted

    def add_extras(at: int) -> None:
        nonlocal deleted
        api_file, b.file = b.file, ui_file
        for k, entry in extras.pop(at, []):
            rng = truncated_range(entry)
            if rng is not None and rng != deleted:
                b.compacted(index=k, trigger="auto", x={"deleted-range": rng})
                deleted = rng
            extra_step(b, entry, k)
        b.file = api_file

    calls = Calls(b)
    deleted = None
    add_extras(-1)
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            b.skip(f"{b.file} item {i}: message that is not an object")
        elif m.get("role") == "assistant":
            _assistant(b, calls, m, i)
        elif m.get("role") == "user":
            _user(b, calls, m, i)
        else:
            b.skip(f"{b.file} item {i}: message with role {m.get('role')!r}")
        add_extras(i)
    for at in sorted(extras):  # entries naming an index past the history's end
        add_extras(at)
    for n, step in enumerate(calls.waiting):
        if step["tool"] == "attempt_completion" and n == len(calls.waiting) - 1:
            continue  # the task's last word: the person answered nothing
        step["x-result-missing"] = True
        b.warn(f"run {b.run_id}: call {step['tool']} (item {step['source']['index']}) has no result")


_UI_EXTRAS: Final = frozenset({"error_retry", "api_req_failed", "mistake_limit_reached",
                               "auto_approval_max_req_reached", "error", "diff_error", "clineignore_error"})


# ---- the importer -------------------------------------------------------------------------------------
def _document(path: Path, name: str) -> Any:
    return Source(name, lambda: read_bytes(path, MAX_LOG_BYTES), path=path).document


def _run_id(source: Source) -> str:
    path = source.path
    if path is not None and (path.is_dir() or path.name in (API_FILE, UI_FILE)):
        return (path if path.is_dir() else path.parent).name or source.stem
    return source.stem


class ClineImporter(Importer):
    """Cline / Roo Code: a task's api_conversation_history.json, its ui_messages.json, or the task folder."""

    name = "cline"
    title = "a Cline (or Roo Code) task log"
    description = ("Cline/Roo Code task folders: api_conversation_history.json (Anthropic-style messages with "
                   "Cline's <task>, <environment_details> and [tool] Result: texts) and/or ui_messages.json")

    def sniff(self, source: Source) -> bool:
        if source.is_dir:
            return any(p.name in (API_FILE, UI_FILE) for p in source.files)
        if not source.head.startswith("["):
            return False
        doc = source.parsed
        return is_ui_log(doc) or is_api_history(doc)

    def convert(self, source: Source) -> Iterator[ImportedRun]:
        api: tuple[Any, str] | None = None
        ui: tuple[Any, str] | None = None
        if source.is_dir:
            for p in source.files:
                if p.name == API_FILE:
                    api = (_document(p, str(p)), str(p))
                elif p.name == UI_FILE:
                    ui = (_document(p, str(p)), str(p))
            if api is None and ui is None:
                raise TraceError(f"no {API_FILE} or {UI_FILE} in this folder; expected a Cline task folder",
                                 file=source.name)
        else:
            doc = source.document
            if is_ui_log(doc):
                ui = (doc, source.name)
            elif isinstance(doc, list) and all(isinstance(m, Mapping) and "role" in m for m in doc):
                api = (doc, source.name)
            else:
                raise TraceError(f"not a Cline log; expected {self.description}", file=source.name)
        for found, expected in ((api, "a list of messages"), (ui, "a list of say/ask entries")):
            if found is not None and not isinstance(found[0], list):
                raise TraceError(f"not a Cline log; expected {expected}", file=found[1])
        b = ImportedRunBuilder(_run_id(source), file=(api or ui or ("", source.name))[1], agent="cline")
        b.source["origin"] = source.name
        if api is not None:
            _api_steps(b, api[0], ui[0] if ui is not None else [], ui[1] if ui is not None else source.name)
        elif ui is not None:
            model = next((obj(e.get("modelInfo")).get("modelId") for e in ui[0] if isinstance(e, Mapping)
                          and isinstance(obj(e.get("modelInfo")).get("modelId"), str)), None)
            if model:
                b.source["model"] = model
            ui_steps(b, ui[0])
        b.header_x["format"] = "cline"
        yield b.build()

