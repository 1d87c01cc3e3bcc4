"""A TCP proxy on 127.0.0.1 that loses the server's answer to chosen requests.

The request reaches the server in full and the server acts on it, but the client's
connection is cut instead of receiving the answer: the "did my write land?" case that
retries on a flaky network produce. Each request gets its own connection: the proxy adds
`Connection: close`, so the server hangs up after every answer.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator


class LossyProxy:
    """Forward 127.0.0.1:<port> to `target`; lose the answer to `drop` matching requests."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self._lock = threading.Lock()
        self._drops: list[bytes] = []
        self.dropped: list[bytes] = []
        self._closing = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def drop_next(self, request_line_prefix: bytes) -> None:
        """Lose the answer to the next request whose request line starts with this."""
        with self._lock:
            self._drops.append(request_line_prefix)

    def _take_drop(self, first_line: bytes) -> bool:
        with self._lock:
            for prefix in self._drops:
                if first_line.startswith(prefix):
                    self._drops.remove(prefix)
                    self.dropped.append(first_line)
                    return True
        return False

    def _serve(self) -> None:
        while not self._closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=30)
        with contextlib.ExitStack() as stack:
            stack.enter_context(client)
            stack.enter_context(upstream)
            first = b""
            while b"\r\n" not in first:
                chunk = client.recv(65536)
                if not chunk:
                    return
                first += chunk
            # One request per connection (the server closes after answering), so the first
            # request line says which request the connection carries.
            upstream.sendall(first.replace(b"\r\n", b"\r\nConnection: close\r\n", 1))
            lose = self._take_drop(first.split(b"\r\n", 1)[0])
            self._pump(client, upstream, lose)

    def _pump(self, client: socket.socket, upstream: socket.socket, lose: bool) -> None:
        answered = False
        while True:
            # After the server has answered a lost request, give it a moment to finish
            # sending, then cut the client off without a word.
            timeout = 0.3 if (lose and answered) else 30
            readable, _, _ = select.select([client, upstream], [], [], timeout)
            if not readable:
                return
            for sock in readable:
                data = sock.recv(65536)
                if not data:
                    return
                if sock is client:
                    upstream.sendall(data)
                elif not lose:
                    client.sendall(data)
                elif b"HTTP/1.1 100" not in data[:12]:
                    answered = True

    def close(self) -> None:
        self._closing = True
        self.listener.close()


@contextlib.contextmanager
def lossy_proxy(target_port: int) -> Iterator[LossyProxy]:
    proxy = LossyProxy(target_port)
    try:
        yield proxy
    finally:
        proxy.close()
