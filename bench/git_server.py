"""Smart HTTP for the benchmarks: `git http-backend` with both bodies streamed, as hosts do.

    python bench/git_server.py ROOT      # prints its port, serves ROOT's repositories

The tests' server (tests/support/git_remotes.py) reads a request's whole body before it
starts `git http-backend` and the backend's whole answer before it sends a byte: enough for
tests, but on the `large` home it ran the push's pack upload, then the server's
`index-pack`, and the fetch's `pack-objects`, then the download, one after the other,
which no git host does (they pipe the CGI both ways). Here the request body is fed to the
backend as it arrives (chunked or sized) and its output goes out in chunks as it is made, so
`index-pack` hashes a push while it uploads and a fetch's pack travels while it is packed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

PIECE = 1 << 16


def _copy(source: BinaryIO, into: BinaryIO, size: int) -> bool:
    """Copy `size` bytes in pieces; False when the client hung up first."""
    while size:
        piece = source.read(min(size, PIECE))
        if not piece:
            return False
        into.write(piece)
        size -= len(piece)
    return True


def _feed(handler: BaseHTTPRequestHandler, into: BinaryIO) -> None:
    """Copy the request's body (chunked or of a Content-Length) into the backend's stdin."""
    source = handler.rfile
    try:
        if handler.headers.get("Transfer-Encoding", "").lower() != "chunked":
            _copy(source, into, int(handler.headers.get("Content-Length") or 0))
            return
        while size := int(source.readline().split(b";")[0].strip(), 16):
            if not _copy(source, into, size):
                return
            source.readline()
        while source.readline() not in (b"\r\n", b"\n", b""):
            pass  # the trailer
    except BrokenPipeError:
        pass  # the backend stopped reading (it refused the request): its answer says why
    finally:
        with contextlib.suppress(BrokenPipeError):
            into.close()


def serve(root: str) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _run(self) -> None:
            url = urlsplit(self.path)
            sized = self.headers.get("Content-Length")
            env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1",
                       REMOTE_USER="bench", REMOTE_ADDR=self.client_address[0],
                       REQUEST_METHOD=self.command, PATH_INFO=url.path,
                       QUERY_STRING=url.query,
                       CONTENT_TYPE=self.headers.get("Content-Type", ""),
                       HTTP_CONTENT_ENCODING=self.headers.get("Content-Encoding", ""),
                       GIT_PROTOCOL=self.headers.get("Git-Protocol", ""))
            if sized is not None:
                env["CONTENT_LENGTH"] = sized
            else:
                env.pop("CONTENT_LENGTH", None)  # a chunked body: the backend reads to EOF
            backend = subprocess.Popen(["git", "http-backend"], env=env, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert backend.stdin is not None and backend.stdout is not None
            feeder = threading.Thread(target=_feed, args=(self, backend.stdin), daemon=True)
            feeder.start()
            try:
                self._answer(backend.stdout)
            finally:
                feeder.join()
                backend.stdout.close()
                backend.wait()

        def _answer(self, out: BinaryIO) -> None:
            status, headers = 200, []
            while (line := out.readline().rstrip(b"\r\n")):
                key, _, value = line.decode().partition(":")
                if key.lower() == "status":
                    status = int(value.split()[0])
                else:
                    headers.append((key, value.strip()))
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while piece := out.read1(PIECE):  # type: ignore[attr-defined]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")

        do_GET = do_POST = _run

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


@contextlib.contextmanager
def streaming_http(root: Path) -> Iterator[int]:
    """This server over `root` in its own process (its processor time is the host's); its port."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from support.git_remotes import _read_port, _spawn, _stop, _wait_accepting

    process = _spawn([sys.executable, __file__, str(root)])
    try:
        port = _read_port(process)
        _wait_accepting(port, process)
        yield port
    finally:
        _stop(process)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not shutil.which("git"):
        raise SystemExit("usage: git_server.py ROOT (git on PATH)")
    serve(sys.argv[1])
