"""A latency proxy on 127.0.0.1 that also counts every HTTP request passing through it.

Each direction goes through a delay line: every chunk is released `one_way` seconds after it
arrived (a delay, not a bandwidth cap), and a new connection costs one extra round trip before
its first byte travels (the TCP handshake a real network charges). One-way 20 ms is about a
40 ms round trip (a nearby region), 50 ms about 100 ms (another continent).

Both directions are parsed as HTTP/1.1 (request and status lines, headers, Content-Length or
chunked bodies), so every request is logged with its method, target, body size, connection
and when it started and ended as the client sees it. Request counts are stable where times are
not: tests assert counts and `waves` (how often the client went from nothing in flight to
something: the round trips it waited for one after another), bench/ measures times.

    with latency_proxy(server_port, one_way=0.02) as proxy:
        ...use proxy.url as the endpoint...
        proxy.requests()   # what went through

Also a command: `python bench/netproxy.py TARGET_PORT --one-way 0.05` serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

#: Bytes read from a socket at once.
READ_SIZE = 256 * 1024
#: Leading body bytes kept per request: enough to tell git's `command=ls-refs` from `fetch`.
BODY_HEAD = 64


@dataclass
class Request:
    """One HTTP request as the proxy saw it; times are `time.monotonic()` at the client."""

    connection: int
    method: str
    target: str
    body: int = 0
    expect_continue: bool = False
    body_head: bytes = b""  # the body's first BODY_HEAD bytes
    range: str = ""  # a ranged GET's `Range` header: which bytes of the object it read
    status: int = 0
    started: float = 0.0
    ended: float | None = None


@dataclass(frozen=True)
class Summary:
    """What a set of requests cost: how many, on how many connections, in how many waves."""

    requests: int
    connections: int
    waves: int
    max_in_flight: int
    by_method: dict[str, int]


def git_operation(request: Request) -> str:
    """Which git smart-HTTP operation class a request belongs to.

    `advertise` (GET info/refs, the start of every git command's conversation), `ls-refs`
    (an upload-pack POST asking for refs, protocol v2), `fetch` (an upload-pack POST asking
    for objects), `receive-pack` (a push's POST: pack and ref update), or `other`.
    """
    if request.method == "GET" and "/info/refs" in request.target:
        return "advertise"
    if request.method == "POST" and request.target.endswith("/git-upload-pack"):
        return "ls-refs" if b"command=ls-refs" in request.body_head else "fetch"
    if request.method == "POST" and request.target.endswith("/git-receive-pack"):
        return "receive-pack"
    return "other"


def summarize(requests: list[Request]) -> Summary:
    """Count requests, connections, waves and the most requests in flight at once."""
    events: list[tuple[float, int]] = []
    for request in requests:
        events.append((request.started, 1))
        events.append((request.ended if request.ended is not None else float("inf"), -1))
    events.sort(key=lambda event: (event[0], event[1]))  # an end before a start at one instant
    waves = in_flight = peak = 0
    for _when, step in events:
        if step > 0 and in_flight == 0:
            waves += 1
        in_flight += step
        peak = max(peak, in_flight)
    methods: dict[str, int] = {}
    for request in requests:
        methods[request.method] = methods.get(request.method, 0) + 1
    return Summary(len(requests), len({r.connection for r in requests}), waves, peak, methods)


class _Parser:
    """Splits one direction's byte stream into HTTP messages (heads and bodies)."""

    def __init__(self) -> None:
        self.buffer = b""
        self.body_left = 0  # bytes of a Content-Length body still to come
        self.chunked = False
        self.chunk_left = -1  # -1: a chunk-size line is next
        self.trailers = False
        self.body_head = b""  # the current message's first body bytes

    def _take(self, used: int) -> None:
        """Consume `used` body bytes from the buffer, keeping the first few."""
        if len(self.body_head) < BODY_HEAD:
            self.body_head += self.buffer[:min(used, BODY_HEAD - len(self.body_head))]
        self.buffer = self.buffer[used:]
        self._body += used

    def feed(self, data: bytes) -> Iterator[tuple[str, object]]:
        """Yield ("head", (first line, headers)) and ("end", body size) as they complete."""
        self.buffer += data
        while True:
            if self.body_left:
                used = min(self.body_left, len(self.buffer))
                self.body_left -= used
                self._take(used)
                if self.body_left:
                    return
                yield "end", self._body
                continue
            if self.chunked:
                if not self._chunks():
                    return
                yield "end", self._body
                continue
            head, found, rest = self.buffer.partition(b"\r\n\r\n")
            if not found:
                return
            self.buffer = rest
            lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self._body = 0
            self.body_head = b""
            yield "head", (lines[0], headers)

    def expect_body(self, headers: dict[str, str], has_body: bool = True) -> bool:
        """Set up for the body the last head announced; False when there is none."""
        if not has_body:
            return False
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.chunked, self.chunk_left, self.trailers = True, -1, False
            return True
        self.body_left = int(headers.get("content-length", "0") or 0)
        return self.body_left > 0

    def _chunks(self) -> bool:
        """Consume chunked encoding; True when the message's last chunk and trailers are in."""
        while True:
            if self.trailers:
                line, found, rest = self.buffer.partition(b"\r\n")
                if not found:
                    return False
                self.buffer = rest
                if not line:
                    self.chunked = False
                    return True
                continue
            if self.chunk_left < 0:
                line, found, rest = self.buffer.partition(b"\r\n")
                if not found:
                    return False
                self.buffer = rest
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.trailers = True
                    continue
                self.chunk_left = size + 2  # the chunk and its CRLF
            used = min(self.chunk_left, len(self.buffer), max(self.chunk_left - 2, 0))
            self.chunk_left -= used
            self._take(used)
            if self.chunk_left > 2:
                return False
            crlf = min(self.chunk_left, len(self.buffer))  # the chunk's CRLF, not body
            self.chunk_left -= crlf
            self.buffer = self.buffer[crlf:]
            if self.chunk_left:
                return False
            self.chunk_left = -1

    _body = 0


class LatencyProxy:
    """Forward 127.0.0.1:<port> to 127.0.0.1:`target_port` through two delay lines."""

    def __init__(self, target_port: int, one_way: float = 0.0, *,
                 connect_round_trip: bool = True, rate: float | None = None) -> None:
        self.target_port = target_port
        self.one_way = one_way
        self.connect_round_trip = connect_round_trip
        #: bytes a second each direction of a connection carries at most (None: no limit),
        #: as a slow uplink does
        self.rate = rate
        self._lock = threading.Lock()
        self._log: list[Request] = []
        self._ids = itertools.count(1)
        self._log_sent: dict[int, Request | None] = {}  # per connection: whose body is coming
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._server is None:
            raise RuntimeError("the latency proxy did not start")
        self.port: int = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[Request]:
        """Every request so far (a copy), in the order they started."""
        with self._lock:
            return list(self._log)

    def summary(self) -> Summary:
        return summarize(self.requests())

    def reset(self) -> None:
        """Forget the requests logged so far (connections stay open)."""
        with self._lock:
            self._log.clear()

    def close(self) -> None:
        """Stop accepting, cut every connection, end the thread."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # -- the event loop's side ---------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=256))
        finally:
            self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            self._loop.set_exception_handler(lambda _loop, _context: None)  # cut, not failed
            tasks = asyncio.all_tasks(self._loop)
            for task in tasks:
                task.cancel()
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self._loop.close()

    async def _handle(self, client_reader: asyncio.StreamReader,
                      client_writer: asyncio.StreamWriter) -> None:
        connection = next(self._ids)
        pending: list[Request] = []  # sent, not yet answered, oldest first
        try:
            if self.connect_round_trip and self.one_way:
                await asyncio.sleep(2 * self.one_way)  # the handshake's round trip
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.target_port)
        except OSError:
            client_writer.close()
            return
        requests_parser, responses_parser = _Parser(), _Parser()
        to_server = asyncio.ensure_future(self._pump(
            client_reader, upstream_writer, lambda data, now: self._requests(
                connection, requests_parser, pending, data, now)))
        to_client = asyncio.ensure_future(self._pump(
            upstream_reader, client_writer, lambda data, now: self._responses(
                responses_parser, pending, data, now)))
        # each side's end of stream is passed on; the connection is done when both are
        await asyncio.gather(to_server, to_client, return_exceptions=True)
        for writer in (client_writer, upstream_writer):
            with contextlib.suppress(Exception):
                writer.close()

    def _requests(self, connection: int, parser: _Parser, pending: list[Request],
                  data: bytes, now: float) -> None:
        for event, value in parser.feed(data):
            if event != "head":
                if self._log_sent.get(connection) is not None:
                    self._log_sent[connection].body_head = parser.body_head  # type: ignore[union-attr]
                continue
            line, headers = value  # type: ignore[misc]
            method, _, rest = line.partition(" ")
            request = Request(connection, method, rest.rpartition(" ")[0],
                              int(headers.get("content-length", "0") or 0),
                              headers.get("expect", "").lower() == "100-continue",
                              range=headers.get("range", ""), started=now)
            self._log_sent[connection] = request
            if not parser.expect_body(headers):
                self._log_sent[connection] = None
            pending.append(request)
            with self._lock:
                self._log.append(request)

    def _responses(self, parser: _Parser, pending: list[Request], data: bytes,
                   now: float) -> None:
        for event, value in parser.feed(data):
            if event == "head":
                line, headers = value  # type: ignore[misc]
                status = int(line.split(" ")[1])
                if 100 <= status < 200:
                    continue  # 100 Continue: the final answer is still to come
                current = pending[0] if pending else None
                if current is not None:
                    current.status = status
                has_body = status not in (204, 304) and (current is None
                                                          or current.method != "HEAD")
                if not parser.expect_body(headers, has_body):
                    self._answered(pending, now)
            else:
                self._answered(pending, now)

    def _answered(self, pending: list[Request], now: float) -> None:
        if pending:
            pending.pop(0).ended = now + self.one_way  # when the client has it

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    observe: object) -> None:
        line: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def release() -> None:
            while True:
                due, data = await line.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    writer.write_eof() if writer.can_write_eof() else writer.close()
                    return
                writer.write(data)
                await writer.drain()
                if self.rate:
                    await asyncio.sleep(len(data) / self.rate)

        releaser = asyncio.ensure_future(release())
        try:
            while True:
                try:
                    data = await reader.read(READ_SIZE)
                except OSError:
                    data = b""  # a reset ends this direction like a close
                now = time.monotonic()
                if data:
                    observe(data, now)  # type: ignore[operator]
                line.put_nowait((now + self.one_way, data))
                if not data:
                    break
            await releaser
        finally:
            releaser.cancel()


@contextlib.contextmanager
def latency_proxy(target_port: int, one_way: float = 0.0, *, connect_round_trip: bool = True,
                  rate: float | None = None) -> Iterator[LatencyProxy]:
    """A running `LatencyProxy`, stopped on leaving."""
    proxy = LatencyProxy(target_port, one_way, connect_round_trip=connect_round_trip,
                         rate=rate)
    try:
        yield proxy
    finally:
        proxy.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target_port", type=int, help="the server's port on 127.0.0.1")
    parser.add_argument("--one-way", type=float, default=0.0, help="seconds per direction")
    args = parser.parse_args()
    with latency_proxy(args.target_port, args.one_way) as proxy:
        print(proxy.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
