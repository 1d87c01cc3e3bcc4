"""Real git remotes on disk and on 127.0.0.1, for any suite to start.

Four transports and a blackhole, each a context manager that stops its process by PID::

    repo = bare_repo(tmp_path)                       # file://
    url = file_url(repo)

    with git_daemon(root) as base:                   # git://127.0.0.1:PORT/
        url = base + bare_repo(root, "store.git").name

    with smart_http(root) as base:                   # git http-backend behind a tiny front
        url = base + bare_repo(root, "store.git").name
    with smart_http(root, auth=("user", "pass")) as base:   # answers 401 without them
        ...

    if (why := ensure_sshd()) is None:               # ssh://USER@127.0.0.1:PORT/abs/path
        with ssh_server(root / "keys") as (base, command):   # GIT_SSH_COMMAND=command
            url = base + str(bare_repo(root, "store.git"))

    with blackhole("silent") as url:     # accepts, never answers
        ...
    with blackhole("syndrop") as url:    # accept queue full: the connect itself hangs

This file is also the servers' program: `python git_remotes.py http ROOT [--v0] [USER:PASS]` and
`python git_remotes.py blackhole MODE` print the port they bound (port 0) on stdout.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

START_TIMEOUT = 20.0


# -- repositories ---------------------------------------------------------------------------

def bare_repo(root: Path, name: str | None = None) -> Path:
    """A new empty bare repository under `root` that accepts pushes over every transport."""
    name = name or f"store-{secrets.token_hex(4)}.git"
    path = Path(root) / name
    subprocess.run(["git", "init", "--quiet", "--bare", "--template=", str(path)], check=True,
                   capture_output=True, timeout=30)
    subprocess.run(["git", f"--git-dir={path}", "config", "http.receivepack", "true"],
                   check=True, capture_output=True, timeout=30)
    return path


def file_url(path: Path) -> str:
    return Path(path).absolute().as_uri()


# -- process plumbing -------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop one server we started, by its PID (and its process group: its own children)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _read_port(process: subprocess.Popen[bytes]) -> int:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT)
    line = process.stdout.readline() if ready else b""
    if not line.strip().isdigit():
        _stop(process)
        raise RuntimeError(f"server did not report its port (got {line!r})")
    return int(line)


def _wait_accepting(port: int, process: subprocess.Popen[bytes]) -> None:
    give_up = time.monotonic() + START_TIMEOUT
    while time.monotonic() < give_up:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def _spawn(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)


# -- servers ----------------------------------------------------------------------------------

@contextlib.contextmanager
def _on_free_port(argv_for: Callable[[int], list[str]]) -> Iterator[int | None]:
    """Start `argv_for(port)` on free ports until one listens; yield it (None after five tries).

    For servers that cannot report a port 0 choice: a port taken between choosing and
    binding is simply tried again. The server is stopped by its PID.
    """
    for _attempt in range(5):
        port = free_port()
        process = _spawn(argv_for(port))
        try:
            _wait_accepting(port, process)
        except RuntimeError:
            _stop(process)
            continue
        try:
            yield port
        finally:
            _stop(process)
        return
    yield None


@contextlib.contextmanager
def git_daemon(root: Path) -> Iterator[str]:
    """`git daemon --enable=receive-pack` serving `root`; yields `git://127.0.0.1:PORT/`."""
    with _on_free_port(lambda port: [
            "git", "daemon", "--listen=127.0.0.1", f"--port={port}", f"--base-path={root}",
            "--export-all", "--enable=receive-pack", "--reuseaddr", str(root)]) as port:
        if port is None:
            raise RuntimeError("git daemon did not start")
        yield f"git://127.0.0.1:{port}/"


SSHD = "/usr/sbin/sshd"


def ensure_sshd() -> str | None:
    """Install openssh-server with apt when sshd is missing; the reason it cannot, or None."""
    from support.apt import ensure_installed

    return ensure_installed(SSHD, "openssh-server")


@contextlib.contextmanager
def ssh_server(root: Path, protocol_v2: bool = True) -> Iterator[tuple[str, str]]:
    """An sshd on 127.0.0.1 letting this user in with a new key (no password, no PAM).

    Yields (`ssh://USER@127.0.0.1:PORT`, the `GIT_SSH_COMMAND` that uses the key); a
    repository at absolute path P is then `BASE + P`. Call `ensure_sshd()` first.
    `protocol_v2`: the server accepts the client's GIT_PROTOCOL (`AcceptEnv`), as git hosts
    do, so git's protocol v2 runs over it; without, upload-pack speaks v0 (a stock sshd).
    """
    import getpass

    keys = Path(root)
    keys.mkdir(parents=True, exist_ok=True)
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)],
                       check=True, capture_output=True, timeout=30)
    (keys / "authorized_keys").write_bytes((keys / "client.pub").read_bytes())
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation dir
    command = (f"ssh -i {keys / 'client'} -o StrictHostKeyChecking=no "
               "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o IdentitiesOnly=yes")
    config = keys / "sshd_config"

    def argv(port: int) -> list[str]:
        config.write_text("\n".join([
            f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {keys / 'host'}",
            f"PidFile {keys / 'sshd.pid'}", f"AuthorizedKeysFile {keys / 'authorized_keys'}",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password", "StrictModes no", "UsePAM no",
            *(["AcceptEnv GIT_PROTOCOL"] if protocol_v2 else []), ""]))
        return [SSHD, "-D", "-f", str(config), "-E", str(keys / "sshd.log")]

    with _on_free_port(argv) as port:
        if port is None:
            raise RuntimeError(f"sshd did not start: {(keys / 'sshd.log').read_text()[-400:]}")
        yield f"ssh://{getpass.getuser()}@127.0.0.1:{port}", command


@contextlib.contextmanager
def smart_http(root: Path, auth: tuple[str, str] | None = None,
               protocol_v2: bool = True, max_body: int | None = None) -> Iterator[str]:
    """Smart HTTP (`git http-backend`) serving `root`; yields `http://127.0.0.1:PORT/`.

    `protocol_v2=False`: the server ignores the client's Git-Protocol header and answers in
    protocol v0, as an older host does. `max_body`: a request body over this many bytes is
    answered 413, as a proxy in front of a host does (nginx's `client_max_body_size`).
    """
    argv = [sys.executable, __file__, "http", str(root)]
    if not protocol_v2:
        argv.append("--v0")
    if max_body is not None:
        argv.append(f"--max-body={max_body}")
    if auth is not None:
        argv.append(f"{auth[0]}:{auth[1]}")
    process = _spawn(argv)
    try:
        port = _read_port(process)
        _wait_accepting(port, process)
        yield f"http://127.0.0.1:{port}/"
    finally:
        _stop(process)


@contextlib.contextmanager
def blackhole(mode: str = "silent") -> Iterator[str]:
    """An http URL that never answers: `silent` accepts and hangs, `syndrop` never connects."""
    if mode not in ("silent", "syndrop"):
        raise ValueError(mode)
    process = _spawn([sys.executable, __file__, "blackhole", mode])
    try:
        port = _read_port(process)
        yield f"http://127.0.0.1:{port}/store.git"
    finally:
        _stop(process)


# -- the server programs (run as subprocesses) ------------------------------------------------

def _serve_http(root: str, credentials: str | None, v0: bool = False,
                max_body: int | None = None) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import urlsplit

    expected = None
    if credentials:
        expected = "Basic " + base64.b64encode(credentials.encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _body(self) -> bytes:
            # git sends chunked bodies once a push is over http.postBuffer.
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _deny(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _too_large(self) -> None:
            page = b"<html><head><title>413 Request Entity Too Large</title></head></html>\n"
            self.send_response(413)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(page)

        def _run(self) -> None:
            body = self._body() if self.command == "POST" else b""
            if max_body is not None and len(body) > max_body:
                self._too_large()
                return
            if expected is not None and self.headers.get("Authorization") != expected:
                self._deny()
                return
            url = urlsplit(self.path)
            env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1",
                       REMOTE_USER="tester", REMOTE_ADDR=self.client_address[0],
                       REQUEST_METHOD=self.command, PATH_INFO=url.path,
                       QUERY_STRING=url.query,
                       CONTENT_TYPE=self.headers.get("Content-Type", ""),
                       CONTENT_LENGTH=str(len(body)),
                       HTTP_CONTENT_ENCODING=self.headers.get("Content-Encoding", ""),
                       GIT_PROTOCOL="" if v0 else self.headers.get("Git-Protocol", ""))
            out = subprocess.run(["git", "http-backend"], input=body, env=env,
                                 capture_output=True).stdout
            head, sep, payload = out.partition(b"\r\n\r\n")
            if not sep:
                head, sep, payload = out.partition(b"\n\n")
            status, headers = 200, []
            for line in head.decode().splitlines():
                key, _, value = line.partition(":")
                if key.lower() == "status":
                    status = int(value.split()[0])
                elif key:
                    headers.append((key, value.strip()))
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _run

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def _serve_blackhole(mode: str) -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    if mode == "silent":        # the handshake completes, requests are swallowed
        listener.listen(128)
        print(port, flush=True)
        while True:
            conn, _ = listener.accept()
            held.append(conn)
    listener.listen(0)          # accept queue full: the kernel drops new SYNs
    for _ in range(2):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        held.append(filler)
    print(port, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    if sys.argv[1] == "http":
        extra = sys.argv[3:]
        limit = next((int(a.split("=")[1]) for a in extra if a.startswith("--max-body=")), None)
        _serve_http(sys.argv[2], next((a for a in extra if not a.startswith("--")), None),
                    "--v0" in extra, limit)
    elif sys.argv[1] == "blackhole":
        _serve_blackhole(sys.argv[2])
    else:
        raise SystemExit(f"unknown server {sys.argv[1]!r}")
