"""A webhook receiver on 127.0.0.1 for the tests: records posts, fails on request."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class WebhookServer:
    """Started on a fresh port; `arrivals` groups the posted texts by session."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.lock = threading.Lock()
        self.posts: dict[str, list[str]] = {}
        self.failures = 0
        self.down = False
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # the name http.server calls
                owner.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        body = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        with self.lock:
            if self.down:
                request.close_connection = True  # hang up without an answer
                return
            if self.failures > 0:
                self.failures -= 1
                status = 503
            elif request.headers.get("Authorization") != f"Bearer {self.token}":
                status = 401
            else:
                payload = json.loads(body)
                self.posts.setdefault(payload["session"], []).append(payload["text"])
                status = 204
        request.send_response(status)
        if status == 503:
            request.send_header("Retry-After", "0")
        request.send_header("Content-Length", "0")
        request.end_headers()

    def __enter__(self) -> WebhookServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
