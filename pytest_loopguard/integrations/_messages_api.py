"""A scripted Anthropic Messages API on localhost, so the real Claude Code CLI runs offline with a model you script.

Claude Code reads `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` from its environment; pointed here it sends each
model request (`POST /v1/messages`, streamed as server-sent events) to this server, which answers from a script
instead of a model. Everything else is Claude Code itself: its tools really run (in the working folder you give
it), its permission rules and hooks apply, and the Claude Agent SDK drives it as it drives it in production.

    api = MessagesAPI(lambda n, request: [tool_use("Bash", command="make test")] if n < 5 else text("done"))
    with api:
        options = ClaudeAgentOptions(env=api.env(home=tmp), cwd=tmp, permission_mode="bypassPermissions", ...)

`script(n, request)` gives the content blocks of the n-th model response (0-based) from the request's JSON (its
`messages` hold the tool results Claude Code sent back): `{"type": "tool_use", "name", "input"}` (an `id` is
added) or `{"type": "text", "text"}`. A response with a `tool_use` block stops for `tool_use`, else `end_turn`.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["MessagesAPI", "Script", "text", "tool_use"]

Script = Callable[[int, Mapping[str, Any]], list[dict[str, Any]]]


def tool_use(name: str, **args: Any) -> dict[str, Any]:
    """A `tool_use` block of a scripted response."""
    return {"type": "tool_use", "name": name, "input": args}


def text(words: str) -> list[dict[str, Any]]:
    """A scripted response that only says `words` (it ends the agent's turn)."""
    return [{"type": "text", "text": words}]


class MessagesAPI:
    """The server: `url` once started (`with api:` or `start()`), `requests` the JSON bodies received in order."""

    def __init__(self, script: Script, *, model: str = "claude-scripted", output_tokens: int = 20) -> None:
        self.script = script
        self.model = model
        self.output_tokens = output_tokens
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- life ---------------------------------------------------------------------------------------------
    def start(self) -> MessagesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: Claude Code reuses its connection

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    request = json.loads(body) if body else {}
                except ValueError:
                    request = {}
                if not isinstance(request, dict):
                    request = {}
                if self.path.split("?")[0].endswith("/count_tokens"):
                    self._json({"input_tokens": _input_tokens(request)})
                else:
                    api._answer(self, request)

            def do_GET(self) -> None:
                self._json({"type": "error", "error": {"type": "not_found_error", "message": self.path}}, 404)

            def _json(self, payload: Mapping[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="messages-api", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> MessagesAPI:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the scripted Messages API is not running: use `with api:` or `api.start()`")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def env(self, *, home: str | None = None) -> dict[str, str]:
        """The environment that points Claude Code here, offline: a dummy key, no telemetry, no update check,
        no other traffic; `home` gives it a HOME of its own (its settings and transcripts go there)."""
        env = {"ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": "sk-ant-scripted",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}
        if home is not None:
            env["HOME"] = home
        return env

    # ---- one model response -------------------------------------------------------------------------------
    def _answer(self, handler: BaseHTTPRequestHandler, request: dict[str, Any]) -> None:
        with self._lock:
            n = len(self.requests)
            self.requests.append(request)
            blocks = [dict(b) for b in self.script(n, request)]
            for block in blocks:
                if block.get("type") == "tool_use":
                    block.setdefault("id", f"toolu_{next(self._ids):06d}")
        stop = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
        usage = {"input_tokens": _input_tokens(request), "output_tokens": self.output_tokens}
        message = {"id": f"msg_{n:06d}", "type": "message", "role": "assistant", "model": self.model,
                   "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if request.get("stream"):
            _stream(handler, message)
        else:
            data = json.dumps(message).encode()
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)


def _stream(handler: BaseHTTPRequestHandler, message: Mapping[str, Any]) -> None:
    """`message` as the Messages API streams it: message_start, each block's start/delta/stop, message_delta,
    message_stop (chunked, so the connection stays open for the next request)."""
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block.get("type") == "tool_use":
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": str(block.get("text", ""))}
        events += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}),
                   ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                  "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
               ("message_stop", {"type": "message_stop"})]
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("cache-control", "no-cache")
    handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()
    for name, data in events:
        chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def _input_tokens(request: Mapping[str, Any]) -> int:
    """A stand-in prompt size: a token per four characters of the request's messages (stable for a script)."""
    return max(1, len(json.dumps(request.get("messages", []), default=str)) // 4)
