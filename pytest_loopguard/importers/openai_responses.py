"""OpenAI Responses API logs (a list of items, a request/response pair, response objects, JSONL records).

Mapping (FORMATS.md §2): the model's output items between two input items (or one response's output) are
one turn: one `llm` step (the response's usage when the log has it; assistant `message` text as its text),
then one tool step per call item. A `function_call` pairs with its `function_call_output` by `call_id` —
never by `id`, which names the item. Other client-side calls (`custom_tool_call`, `local_shell_call`,
`shell_call`, `computer_call`, `apply_patch_call`) pair with their `…_output` the same way; server-side
calls (`web_search_call`, `file_search_call`, `code_interpreter_call`, `image_generation_call`, `mcp_call`)
carry their own outcome. `reasoning` items are not steps: they are counted on the turn's `llm` step
(`x-reasoning-items`), and their tokens are in the usage's `output_tokens`. A run whose last item is an
assistant message in a turn without calls ends with `done`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .base import ImportedRun
from .json_log import JsonLogImporter
from .run_builder import At, RunBuilder, mapping_at, parse_arguments, response_facts, usage_tokens

__all__ = ["ResponsesImporter"]

ORIGIN: Final = "openai-responses"
PAIRED_CALLS: Final = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "shell_call", "computer_call", "apply_patch_call"}
)
SERVER_CALLS: Final = frozenset(
    {"web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call",
     "tool_search_call"}
)
OUTPUTS: Final = frozenset(f"{kind}_output" for kind in PAIRED_CALLS)
MODEL_ITEMS: Final = PAIRED_CALLS | SERVER_CALLS | {"reasoning"}
KNOWN_ITEMS: Final = MODEL_ITEMS | OUTPUTS | {"message"}


@dataclass(slots=True)
class _Item:
    item: Mapping[str, Any]
    row: int | None
    index: int | str | None  # the item's list position, or a JSON Pointer in a document or record


@dataclass(slots=True)
class _Turn:
    """The model output items of one turn and the response they came from (usage, id) when known."""

    items: list[_Item] = field(default_factory=list)
    response: Mapping[str, Any] = field(default_factory=dict)


def _kind(item: Any) -> str | None:
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type")
    if kind is None and "role" in item and "content" in item:
        return "message"  # the easy input form
    return kind if isinstance(kind, str) else None


def _is_model_item(item: Mapping[str, Any]) -> bool:
    kind = _kind(item)
    return kind in MODEL_ITEMS or (kind == "message" and item.get("role") == "assistant")


def _is_response(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("object") == "response" and isinstance(value.get("output"), list)


def _items_marked(items: Sequence[Any]) -> bool:
    """Items of this API: every one a known item, and at least one that only the Responses API has."""
    kinds = [_kind(i) for i in items]
    return bool(items) and all(k is not None for k in kinds) and any(k in MODEL_ITEMS or k in OUTPUTS for k in kinds)


def _is_record(value: Any) -> bool:
    return isinstance(value, Mapping) and _is_response(value.get("response"))


class ResponsesImporter(JsonLogImporter):
    """OpenAI Responses API items, responses and request/response records."""

    name = "openai-responses"
    title = "an OpenAI Responses log"
    description = "OpenAI Responses API items: function_call / function_call_output by call_id, reasoning"

    def sniff_document(self, doc: Any) -> bool:
        if isinstance(doc, list):
            return _items_marked(doc) or (bool(doc) and all(_is_response(d) or _is_record(d) for d in doc))
        if not isinstance(doc, Mapping):
            return False
        if _is_response(doc) or _is_record(doc):
            return True
        return isinstance(doc.get("input"), list) and _items_marked([*doc["input"], *(doc.get("output") or [])])

    def sniff_row(self, row: Any) -> bool:
        return _is_response(row) or _is_record(row) or (_kind(row) in KNOWN_ITEMS and _kind(row) != "message")

    def convert_document(self, doc: Any, file: str, stem: str) -> list[ImportedRun]:
        if isinstance(doc, list) and not _items_marked(doc):
            # A JSON list of responses or records: each is placed by its position (a pointer), not a JSONL row.
            return [_convert(list(_record_turns(list(enumerate(doc)), layout="list")), file, stem)]
        if isinstance(doc, list):
            items = [_Item(i, None, n) for n, i in enumerate(doc)]
            return [_convert(_turns(items), file, stem)]
        if _is_response(doc) or _is_record(doc):
            return [_convert(list(_record_turns([(0, doc)], layout="document")), file, str(doc.get("id") or stem))]
        items = [_Item(i, None, f"/input/{n}") for n, i in enumerate(doc["input"])]
        response = mapping_at(doc, "response")
        output = [_Item(i, None, f"/output/{n}") for n, i in enumerate(doc.get("output") or [])]
        run_id = str(doc.get("id") or stem)
        return [_convert([*_turns(items), _Turn(output, response)] if output else _turns(items), file, run_id)]

    def convert_rows(self, rows: Sequence[tuple[int, Any]], file: str, stem: str) -> list[ImportedRun]:
        return [_convert(list(_record_turns(rows)), file, stem)]


def _turns(items: list[_Item]) -> list[_Turn | _Item]:
    """Input items as they are, and each run of consecutive model items grouped into one turn."""
    out: list[_Turn | _Item] = []
    for item in items:
        if _is_model_item(item.item):
            if not out or not isinstance(out[-1], _Turn):
                out.append(_Turn())
            turn = out[-1]
            assert isinstance(turn, _Turn)
            turn.items.append(item)
        else:
            out.append(item)
    return out


def _record_turns(rows: Sequence[tuple[int, Any]], *, layout: str = "jsonl") -> Iterator[_Turn | _Item]:
    """Records (request input + response), bare responses and bare items, in order; history counted once.

    `layout` says where `rows` came from: JSONL lines, the elements of a JSON list, or one JSON document."""
    first = True
    loose: list[_Item] = []
    for number, row in rows:
        # JSONL: the row is the line; a JSON list: the position starts the pointer; one document: neither.
        line, base = {"jsonl": (number, ""), "list": (None, f"/{number}")}.get(layout, (None, ""))
        if not (_is_response(row) or _is_record(row)):
            loose.append(_Item(row, line, base or None))
            continue
        yield from _turns(loose)
        loose = []
        response = row["response"] if _is_record(row) else row
        request = mapping_at(row, "request")
        inputs = request.get("input")
        if isinstance(inputs, str):
            inputs = [{"role": "user", "content": inputs}]
        if isinstance(inputs, list):
            # With previous_response_id a request holds only what is new; otherwise what follows its last
            # model item (the previous response's output) is.
            start = 0
            if not first and not request.get("previous_response_id"):
                start = 1 + max((n for n, i in enumerate(inputs) if isinstance(i, Mapping) and _is_model_item(i)),
                                default=-1)
            yield from (_Item(inputs[n], line, f"{base}/request/input/{n}") for n in range(start, len(inputs)))
        first = False
        prefix = base + ("/response" if _is_record(row) else "")
        yield _Turn([_Item(i, line, f"{prefix}/output/{n}") for n, i in enumerate(response["output"])], response)
    yield from _turns(loose)


def _convert(parts: Sequence[_Turn | _Item], file: str, run_id: str) -> ImportedRun:
    builder = RunBuilder(file, run_id, fmt=ORIGIN)
    for position, part in enumerate(parts):
        if isinstance(part, _Turn):
            _turn(builder, part, last=position == len(parts) - 1)
        else:
            _input(builder, part)
    return builder.build()


def _input(builder: RunBuilder, part: _Item) -> None:
    item, where = part.item, (part.row, part.index)
    kind = _kind(item)
    if kind == "message":
        role = item.get("role")
        text = builder.text(item.get("content"), where, "an input message")
        if role in ("system", "developer"):
            builder.say("system", text, at=where)
        else:
            builder.say("user", text, origin="user", at=where)
    elif kind in OUTPUTS:
        call_id = item.get("call_id", item.get("id"))  # local_shell_call_output names its call in `id`
        builder.result(call_id if isinstance(call_id, str) else None, _output_result(item, builder, where), at=where)
    else:
        builder.note(f"{kind or 'untyped'} item", where)


def _output_result(item: Mapping[str, Any], builder: RunBuilder, at: At) -> dict[str, Any]:
    output = item.get("output")
    result: dict[str, Any] = {}
    if isinstance(output, list) and output and all(isinstance(o, Mapping) and "outcome" in o for o in output):
        # shell_call_output: one entry per command, each with stdout, stderr and an exit or timeout outcome.
        texts: list[str] = []
        code = 0
        for entry in output:
            texts.extend(str(entry.get(k)) for k in ("stdout", "stderr") if entry.get(k))
            outcome = mapping_at(entry, "outcome")
            if outcome.get("type") == "timeout":
                result["error"] = "timeout"
            elif isinstance(outcome.get("exit_code"), int) and outcome["exit_code"] != 0:
                code = outcome["exit_code"]
        result["text"] = "\n".join(texts)
        result["exit_code"] = code
        return result
    text = builder.text(output, at, "a call output")
    if item.get("status") == "incomplete":
        return {"error": text or "output status: incomplete"}
    return {"text": text}


def _call_args(item: Mapping[str, Any], kind: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(tool name, arguments, x- fields) of a call item."""
    if kind in ("function_call", "mcp_call"):
        args, extra = parse_arguments(item.get("arguments"))
        if kind == "mcp_call" and isinstance(item.get("server_label"), str):
            extra["x-mcp-server"] = item["server_label"]
        return str(item.get("name") or ""), args, extra
    if kind == "custom_tool_call":
        return str(item.get("name") or ""), {"input": item.get("input", "")}, {"x-tool-type": "custom"}
    tool = kind.removesuffix("_call")
    for key in ("action", "operation"):
        if isinstance(item.get(key), Mapping):
            return tool, {k: v for k, v in item[key].items() if k != "type" or kind == "computer_call"}, {}
    fields = {k: v for k, v in item.items() if k in ("queries", "code", "container_id", "arguments")}
    return tool, fields, {}


def _server_result(item: Mapping[str, Any]) -> dict[str, Any]:
    if item.get("error"):
        return {"error": str(item["error"])}
    if item.get("status") in ("failed", "incomplete"):
        return {"error": f"status: {item['status']}"}
    output = item.get("output")
    return {"text": output} if isinstance(output, str) else {}


def _turn(builder: RunBuilder, turn: _Turn, *, last: bool) -> None:
    response = turn.response
    first = turn.items[0] if turn.items else _Item({}, None, None)
    where = (first.row, first.index)
    calls = [i for i in turn.items if _kind(i.item) in PAIRED_CALLS | SERVER_CALLS]
    texts = [builder.text(i.item.get("content"), (i.row, i.index), "an output message")
             for i in turn.items if _kind(i.item) == "message"]
    text = "\n".join(t for t in texts if t)
    final = last and not calls and bool(texts)
    extensions: dict[str, Any] = {}
    reasoning = sum(1 for i in turn.items if _kind(i.item) == "reasoning")
    if reasoning:
        extensions["x-reasoning-items"] = reasoning
    extensions.update(response_facts(builder, response, "output_tokens_details"))
    if response.get("status") not in (None, "completed"):
        extensions["x-status"] = response["status"]
    tokens = usage_tokens(response.get("usage"), "input_tokens", "output_tokens")
    builder.turn(tokens=tokens, text="" if final else text, x=extensions, at=where)
    for call in calls:
        item, kind = call.item, str(_kind(call.item))
        tool, args, extra = _call_args(item, kind)
        if isinstance(item.get("id"), str):
            extra["x-item-id"] = item["id"]
        if item.get("status") == "incomplete":
            extra["x-status"] = "incomplete"
        at = (call.row, call.index)
        if kind in SERVER_CALLS:
            builder.call(item.get("id") if isinstance(item.get("id"), str) else None, tool, args,
                         x={"x-tool-type": "server", **extra}, result=_server_result(item), at=at)
        else:
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            builder.call(call_id, tool, args, x=extra, at=at)
    if final:
        builder.finish(text=text, at=where)
