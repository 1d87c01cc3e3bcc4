"""A stub OpenAI-compatible model server on 127.0.0.1 that records every request.

Hermes Agent runs a real turn against it offline, as a custom provider whose base URL is
this server: the stub answers `GET …/models`, and `POST …/chat/completions` both as SSE
(`stream: true`, what Hermes sends) and as plain JSON. Every request is recorded, so a test
can assert what Hermes put into a turn (for instance the context a `pre_llm_call` hook
injected into the user message).

Usage::

    with StubModel() as stub:                 # binds 127.0.0.1 on a free port
        stub.base_url                         # "http://127.0.0.1:PORT/v1" for model.base_url
        mark = stub.mark()
        ... run `hermes -z "hi"` ...
        stub.user_messages(since=mark)        # last user message of each chat request
        stub.queue_tool_call("roam_status", {})   # next chat request answers with a tool call

Scripted replies are consumed in order, one per chat request; when the queue is empty the
stub answers `reply` (default `STUB-REPLY: hello from the stub`). A queued tool call is
normally followed by Hermes sending the tool's result back in the next request, which the
stub answers with the default text, ending the turn.

Run standalone (for poking at Hermes by hand): `python tests/support/stub_model.py [PORT]`.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_REPLY = "STUB-REPLY: hello from the stub"
MODEL = "stub-model"


@dataclass(frozen=True)
class Recorded:
    """One request the stub received."""

    method: str
    path: str
    body: Any = None
    at: float = field(default_factory=time.time)

    @property
    def is_chat(self) -> bool:
        return self.method == "POST" and self.path.rstrip("/").endswith("/chat/completions")


@dataclass(frozen=True)
class ToolCall:
    """A scripted assistant reply that calls one tool."""

    name: str
    arguments: dict[str, Any]
    call_id: str = "call_roam_1"


def _chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


class StubModel:
    """The server; a context manager that starts and stops it on a daemon thread."""

    def __init__(self, reply: str = DEFAULT_REPLY, port: int = 0) -> None:
        self.reply = reply
        self.requests: list[Recorded] = []
        self._script: list[str | ToolCall] = []
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _json(self, code: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                stub._record("GET", self.path, None)
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list",
                                     "data": [{"id": MODEL, "object": "model"}]})
                    return
                self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                stub._record("POST", self.path, body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": "not found"}})
                    return
                answer = stub._next_answer()
                if isinstance(body, dict) and body.get("stream"):
                    self._stream(answer)
                else:
                    self._json(200, stub._complete(answer))

            def _stream(self, answer: str | ToolCall) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                if isinstance(answer, ToolCall):
                    call = {"index": 0, "id": answer.call_id, "type": "function",
                            "function": {"name": answer.name,
                                         "arguments": json.dumps(answer.arguments)}}
                    chunks = [_chunk({"role": "assistant", "content": None,
                                      "tool_calls": [call]}, None),
                              _chunk({}, "tool_calls")]
                else:
                    chunks = [_chunk({"role": "assistant", "content": ""}, None),
                              _chunk({"content": answer}, None), _chunk({}, "stop")]
                chunks.append({"id": "c1", "object": "chat.completion.chunk", "created": 0,
                               "model": MODEL, "choices": [], "usage": _USAGE})
                for chunk in chunks:
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="stub-model", daemon=True)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> StubModel:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StubModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------------

    def queue_reply(self, text: str) -> None:
        """Answer the next unscripted chat request with `text`."""
        with self._lock:
            self._script.append(text)

    def queue_tool_call(self, name: str, arguments: dict[str, Any] | None = None) -> None:
        """Answer the next chat request with a call of tool `name`."""
        with self._lock:
            self._script.append(ToolCall(name, dict(arguments or {})))

    def _next_answer(self) -> str | ToolCall:
        with self._lock:
            return self._script.pop(0) if self._script else self.reply

    def _complete(self, answer: str | ToolCall) -> dict[str, Any]:
        if isinstance(answer, ToolCall):
            message: dict[str, Any] = {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": answer.call_id, "type": "function",
                                "function": {"name": answer.name,
                                             "arguments": json.dumps(answer.arguments)}}]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": answer}, "stop"
        return {"id": "c1", "object": "chat.completion", "created": int(time.time()),
                "model": MODEL, "usage": _USAGE,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}]}

    # -- what was received -------------------------------------------------------------------

    def _record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append(Recorded(method, path, body))

    def mark(self) -> int:
        """A position in the request log; pass it as `since=` to see only later requests."""
        with self._lock:
            return len(self.requests)

    def chat_requests(self, since: int = 0) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completion requests received after `since`."""
        with self._lock:
            recorded = self.requests[since:]
        return [r.body for r in recorded if r.is_chat and isinstance(r.body, dict)]

    def user_messages(self, since: int = 0) -> list[str]:
        """The last user message of each chat request after `since`, as text."""
        return [last_user_text(body) for body in self.chat_requests(since)]

    def tool_results(self, since: int = 0) -> list[dict[str, Any]]:
        """Every `role: tool` message sent back to the model after `since`."""
        found: list[dict[str, Any]] = []
        for body in self.chat_requests(since):
            for message in body.get("messages") or []:
                if message.get("role") == "tool" and message not in found:
                    found.append(message)
        return found


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message, whether `content` is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last `role: user` message of one chat request."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return message_text(message)
    return ""


def main(argv: list[str]) -> None:  # pragma: no cover - manual use only
    """Serve until interrupted, on the port given (default: a free one)."""
    with StubModel(port=int(argv[0]) if argv else 0) as stub:
        print(f"stub model on {stub.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":  # pragma: no cover - manual use only
    import sys

    main(sys.argv[1:])
