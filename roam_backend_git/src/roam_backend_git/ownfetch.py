"""roam's own first fetch of the branch: git's protocol v2, the pack indexed as it arrives.

A new device's `init` fetches the whole branch once. Through `git fetch`, git's `index-pack`
then hashes every object with git's collision-detecting SHA-1, 2.8-3.4 s of processor time
for the benchmark's large home (552 MB) on the two cores the server shares. Here roam asks for
the tip itself and indexes the pack with hashlib as it streams in (packindex.py): ~1.4 s.

Only git's own programs and the user's ssh touch the network, so credentials (credential
helpers, ssh keys and agents), TLS settings and proxies stay git's:

- http(s): `git remote-http(s)`, the remote helper `git fetch` runs, in its
  `stateless-connect git-upload-pack` mode (gitremote-helpers(7)): it sends the requests roam
  writes to its stdin and streams the answers back;
- ssh: the ssh command git would run (GIT_SSH_COMMAND as the runner builds it: the user's
  own plus BatchMode and timeouts), through the shell as git runs a command line, with
  `-o SendEnv=GIT_PROTOCOL`, `-p PORT`, the host, and `git-upload-pack '<path>'`; OpenSSH's
  `ssh` only (a wrapper or plink: `git fetch`, which knows their options);
- a local path or file://: `git upload-pack` with GIT_PROTOCOL=version=2 over pipes, without
  roam's `-c` settings, as `git fetch` starts it.

The conversation: the capability advertisement, then one `fetch` (`want <tip>`, `done`, no
haves: the mirror holds no history yet), whose side-band-64k answer is demultiplexed (band 1
the pack, band 2 progress dropped, band 3 the remote's error). An sshd that drops
GIT_PROTOCOL (a stock one) gets protocol v0 over the same pipes: its ref advertisement, then
`want <tip>` with side-band-64k and `done`. The pack is written under
objects/pack as a temporary (staging.TMP_PREFIX, which upkeep removes when stale), indexed
on the way, fsynced with its index, both renamed into place; a pack with a delta the indexer
does not resolve goes to `git index-pack` once written. Damage (a truncated, corrupt or short
pack, a wrong checksum) leaves nothing in objects/pack. The caller sets the tracking ref only
after `git rev-list --objects` over the tip found every object (git's own connectivity check
after a fetch), and a pack that fails it is removed again.

Anything else raises `Fallback` and the caller runs `git fetch`: git:// remotes, an http
remote that does not speak protocol v2 (dumb HTTP, an old server), another object format,
another ssh program, a tip the remote no longer has.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from roam_backend_git.config import GitSettings, transport_of
from roam_backend_git.packindex import PIECE, Damaged, Unsupported, index_stream
from roam_backend_git.runner import GitChild, GitRunner, one_line, transfer_budget
from roam_backend_git.staging import TMP_PREFIX
from roam_core.plugin import CONNECT_BUDGET, BackendError

FLUSH, DELIM, RESPONSE_END = 0, 1, 2
#: The fetch's watchdog moves on each time this much more of the pack has come.
REARM_BYTES = 1 << 20
_SHA1 = re.compile(r"[0-9a-f]{40}")


class Fallback(Exception):
    """This fetch needs `git fetch` (the reason in the message)."""


def applies(remote: str) -> bool:
    """Whether roam's own fetch speaks `remote`'s transport (smart HTTP(S), ssh, a path)."""
    return transport_of(remote) in ("http", "file", "ssh")


def pkt(payload: bytes) -> bytes:
    """One pkt-line: four hex digits of length (themselves included), then the payload."""
    return b"%04x" % (len(payload) + 4) + payload


class Wire:
    """pkt-lines read from and written to a git child's pipes."""

    def __init__(self, child: GitChild) -> None:
        self.child = child
        assert child.stdin is not None and child.stdout is not None
        self.stdin = child.stdin
        self.stdout = child.stdout

    def exact(self, size: int, what: str) -> bytes:
        """`size` bytes, or the reason the child stopped early (timeout, its stderr)."""
        data = self.stdout.read(size)
        if len(data) != size:
            raise self.child.failure(what)
        return data

    def packet(self, what: str = "the connection ended early") -> bytes | int:
        """The next pkt-line's payload, or FLUSH, DELIM or RESPONSE_END."""
        head = self.exact(4, what)
        try:
            size = int(head, 16)
        except ValueError:
            raise BackendError(f"git fetch: the remote's answer is not git's protocol "
                               f"({head!r})") from None
        if size < 4:
            if size == 3:
                raise BackendError("git fetch: the remote's answer is not git's protocol")
            return size
        return self.exact(size - 4, what)

    def send(self, data: bytes) -> None:
        try:
            self.stdin.write(data)
            self.stdin.flush()
        except OSError:
            raise self.child.failure() from None


class SideBand:
    """The pack in a `fetch` answer's `packfile` section: band 1, up to the flush."""

    def __init__(self, wire: Wire, redact: Callable[[str], str]) -> None:
        self.wire = wire
        self.redact = redact
        self.done = False

    def read(self, _wanted: int = PIECE) -> bytes:
        """The next piece of the pack; b"" after its end."""
        while not self.done:
            line = self.wire.packet("the connection ended inside the pack")
            if isinstance(line, int):
                self.done = True
                break
            band = line[:1]
            if band == b"\x01":
                if len(line) > 1:
                    return line[1:]
                continue  # upload-pack's keepalive while pack-objects is silent (5 s)
            if band == b"\x03":
                raise BackendError(f"git fetch failed: remote: {_said(line[1:], self.redact)}")
            if band != b"\x02":
                raise BackendError("git fetch: the remote's answer is not git's protocol "
                                   "(a side-band line without a band)")
        return b""


def _said(message: bytes, redact: Callable[[str], str]) -> str:
    """The remote's message as one printable line, credentials cut out."""
    text = message.decode("utf-8", "replace").replace("\0", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return redact(one_line("\n".join(lines)) if lines else "no message")


@dataclass(frozen=True)
class _Route:
    """How to reach the remote's upload-pack: the argv, and who speaks first."""

    argv: list[str]
    helper: bool                  # git's remote helper (stateless-connect) in between
    raw: bool                     # argv is whole (a shell running ssh), not git's arguments
    env: dict[str, str]


def _route(runner: GitRunner, remote: str) -> _Route:
    """The program that reaches `remote`'s upload-pack (`Fallback` when git should)."""
    transport = transport_of(remote)
    v2 = {"GIT_PROTOCOL": "version=2"}
    if transport == "file":
        if "://" not in remote:
            return _Route(["upload-pack", "--", remote], False, False, v2)
        parts = urlsplit(remote)
        if parts.netloc or "%" in parts.path or parts.query or parts.fragment:
            raise Fallback("a file URL with a host or escapes")
        return _Route(["upload-pack", "--", parts.path], False, False, v2)
    if transport == "ssh":
        if runner.env.get("GIT_SSH_VARIANT", "ssh") != "ssh":
            raise Fallback("an ssh variant other than OpenSSH's")
        return _Route(ssh_argv(runner.env.get("GIT_SSH_COMMAND") or "ssh", remote),
                      False, True, v2)
    scheme = remote.split("://", 1)[0].lower()
    # protocol v2 whatever the user's protocol.version: stateless-connect speaks only v2
    return _Route(["-c", "protocol.version=2", f"remote-{scheme}", remote, remote],
                  True, False, {})


def ssh_target(remote: str) -> tuple[str, str | None, str]:
    """`[user@]host`, the port (or None) and the path of an ssh remote, as git reads them.

    `Fallback` for anything git reads in a way this does not (escapes, a host that ssh
    would take for an option, which git refuses too).
    """
    if "://" in remote:
        hostport, slash, path = remote.split("://", 1)[1].partition("/")
        if not slash:
            raise Fallback("an ssh URL without a path")
        path = "/" + path
        if path.startswith("/~"):  # ssh://host/~user/x is ~user/x, as git reads it
            path = path[1:]
        user, at, hostonly = hostport.rpartition("@")
        port: str | None = None
        if hostonly.startswith("["):
            host, _, after = hostonly[1:].partition("]")
            if after and not after.startswith(":"):
                raise Fallback("an ssh URL git would read otherwise")
            port = after[1:] or None
        else:
            host, _, port = hostonly.partition(":")
            port = port or None
    else:  # scp-like [user@]host:path
        hostpart, _, path = remote.partition(":")
        user, at, host = hostpart.rpartition("@")
        port = None
    # git refuses a login that ssh would read as an option ("-oProxyCommand=…@host"), the
    # user's part as well as the host's: `git fetch` says so in one line
    if not host or host.startswith("-") or user.startswith("-") or "%" in remote \
            or ":" in user or not path or "[" in host or "]" in host \
            or (port is not None and not port.isdigit()):
        raise Fallback("an ssh remote git would read otherwise")
    return (f"{user}@{host}" if at else host), port, path


def ssh_argv(command: str, remote: str) -> list[str]:
    """The argv git itself runs for `git-upload-pack` over ssh (OpenSSH only).

    As git does: the ssh command through the shell (`GIT_SSH_COMMAND` is a command line),
    `-o SendEnv=GIT_PROTOCOL` so the server may speak protocol v2, `-p` for a port, and the
    path single-quoted for the remote shell.
    """
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        raise Fallback("an ssh command that is not a plain command line") from None
    if os.path.basename(program) not in ("ssh", "ssh.exe"):
        raise Fallback("an ssh program other than OpenSSH's")
    login, port, path = ssh_target(remote)
    quoted = "'" + path.replace("'", "'\\''").replace("!", "'\\!'") + "'"
    args = ["-o", "SendEnv=GIT_PROTOCOL", *(["-p", port] if port else []), login,
            f"git-upload-pack {quoted}"]
    return ["sh", "-c", f'{command} "$@"', command, *args]


def _connect(wire: Wire, helper: bool, redact: Callable[[str], str]
             ) -> tuple[dict[str, str], dict[str, str] | None]:
    """Open the conversation: the server's capabilities, and its refs if it spoke v0/v1.

    `Fallback` when the helper cannot speak protocol v2 for us.
    """
    if helper:
        wire.send(b"capabilities\n")
        offered = set()
        while True:
            line = wire.stdout.readline()
            if not line:
                raise wire.child.failure()
            if line == b"\n":
                break
            offered.add(line.strip().lstrip(b"*"))
        if b"stateless-connect" not in offered:
            raise Fallback("git's remote helper has no stateless-connect")
        wire.send(b"stateless-connect git-upload-pack\n")
        answer = wire.stdout.readline()
        if not answer:
            raise wire.child.failure()
        if answer == b"fallback\n":
            raise Fallback("the remote does not speak protocol v2")
        if answer != b"\n":
            raise BackendError("git fetch: git's remote helper answered "
                               f"{answer[:40]!r} to stateless-connect")
    first = wire.packet()
    if first == b"version 1\n":
        first = wire.packet()
    if first != b"version 2\n":
        if helper:
            raise Fallback("the remote does not speak protocol v2")
        return _advertisement(wire, first, redact)
    capabilities: dict[str, str] = {}
    while True:
        packet = wire.packet()
        if packet == FLUSH:
            return capabilities, None
        if isinstance(packet, int):
            raise BackendError("git fetch: the remote's capabilities are malformed")
        name, _, value = packet.decode("utf-8", "replace").rstrip("\n").partition("=")
        capabilities[name] = value


def _advertisement(wire: Wire, line: bytes | int, redact: Callable[[str], str]
                   ) -> tuple[dict[str, str], dict[str, str]]:
    """A protocol v0/v1 ref advertisement (the server's capabilities after the first ref)."""
    capabilities: dict[str, str] = {}
    refs: dict[str, str] = {}
    while line != FLUSH:
        if isinstance(line, bytes) and line.startswith(b"ERR "):  # of any length
            raise BackendError(f"git fetch failed: remote: {_said(line[4:], redact)}")
        if not isinstance(line, bytes) or len(line) < 42:
            raise BackendError("git fetch: the remote's ref advertisement is malformed")
        entry, nul, offered = line.rstrip(b"\n").partition(b"\0")
        if nul:
            for word in offered.decode("utf-8", "replace").split():
                name, _, value = word.partition("=")
                capabilities[name] = value
        sha, _, name = entry.decode("utf-8", "replace").partition(" ")
        refs[name] = sha
        line = wire.packet()
    return capabilities, refs


def _request(capabilities: dict[str, str], refs: dict[str, str] | None, tip: str) -> bytes:
    """The fetch request for `tip` alone: protocol v2's `fetch`, or v0's want and done."""
    if refs is not None:
        if tip not in refs.values():
            raise Fallback("the remote no longer advertises that tip")
        if "side-band-64k" not in capabilities:
            raise Fallback("the remote offers no side-band-64k")
        if "object-format" in capabilities and capabilities["object-format"] != "sha1":
            raise Fallback(f"the remote's object format is {capabilities['object-format']}")
        wanted = ["side-band-64k", *(c for c in ("ofs-delta", "no-progress")
                                     if c in capabilities)]
        return (pkt(b"want %s %s\n" % (tip.encode(), " ".join(wanted).encode())) + b"0000"
                + pkt(b"done\n"))
    if "fetch" not in capabilities:
        raise Fallback("the remote does not offer protocol v2's fetch")
    formats = capabilities.get("object-format", "sha1")
    if "sha1" not in formats.split(","):
        raise Fallback(f"the remote's object format is {formats}")
    body = pkt(b"command=fetch\n")
    if "object-format" in capabilities:
        body += pkt(b"object-format=sha1\n")
    return (body + b"0001" + pkt(b"ofs-delta\n") + pkt(b"no-progress\n")
            + pkt(b"want %s\n" % tip.encode()) + pkt(b"done\n") + b"0000")


def _packfile_section(wire: Wire, redact: Callable[[str], str]) -> None:
    """Read up to the pack (v2's `packfile` section, v0's `NAK`); `ERR` is a refusal."""
    while True:
        line = wire.packet()
        if line in (b"packfile\n", b"NAK\n"):
            return
        if isinstance(line, bytes) and line.startswith(b"ERR "):
            message = _said(line[4:], redact)
            if "not our ref" in message:
                raise Fallback("the remote no longer has that tip")
            raise BackendError(f"git fetch failed: remote: {message}")
        if line == DELIM:
            continue  # between two sections
        if isinstance(line, int):
            raise BackendError("git fetch: the remote answered without a pack")
        # other sections (acknowledgments, shallow-info) carry nothing for a fetch like ours


@contextlib.contextmanager
def _temporaries(pack_dir: Path) -> Iterator[tuple[Path, Path]]:
    """A temporary .pack and .idx path in `pack_dir`; whichever still exists is removed."""
    stem = pack_dir / f"{TMP_PREFIX}fetch_{secrets.token_hex(8)}"
    pack, index = stem.with_suffix(".pack"), stem.with_suffix(".idx")
    try:
        yield pack, index
    finally:
        for leftover in (index, stem.with_suffix(".rev"), pack):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _write_durably(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


class _Budget:
    """The transfer's time: `timeout`, or what the bytes received so far take at the floor rate.

    Arms the child's watchdog with `timeout` when made. A first fetch of a large branch on a
    slow link takes longer than `git_transfer_timeout`; while the pack keeps coming at core's
    floor rate (`FLOOR_RATE`) or faster, the watchdog is moved on, a mebibyte at a time. A
    stall still ends it.
    """

    def __init__(self, child: GitChild, timeout: float) -> None:
        self.child = child
        self.timeout = timeout
        self.started = time.monotonic()
        self.received = 0
        self._next = REARM_BYTES
        child.arm(timeout)

    def add(self, size: int) -> None:
        self.received += size
        if self.received < self._next:
            return
        self._next = self.received + REARM_BYTES
        left = transfer_budget(self.timeout, self.received) - (time.monotonic() - self.started)
        if left > 0:
            self.child.arm(left)


def _receive(band: SideBand, pack_path: Path, runner: GitRunner, budget: _Budget) -> bytes:
    """Write the pack to `pack_path`, indexed on the way; its .idx bytes."""
    fd = os.open(pack_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    with os.fdopen(fd, "wb", buffering=1 << 20) as sink:
        def read(wanted: int) -> bytes:
            piece = band.read(wanted)
            sink.write(piece)
            budget.add(len(piece))
            return piece

        try:
            index, _size = index_stream(read)
        except (Damaged, ValueError, IndexError, OverflowError) as error:
            raise BackendError(f"git fetch: the remote's pack is damaged ({error}); "
                               "nothing was kept") from None
        except Unsupported:
            index = None
            while read(PIECE):  # the rest of the pack, for git index-pack
                pass
        sink.flush()
        os.fsync(sink.fileno())
    if index is not None:
        return index
    written = pack_path.with_suffix(".idx")
    done = runner.run(["-c", "pack.writeReverseIndex=false", "index-pack", "-o", str(written),
                       str(pack_path)], action="index-pack (local mirror)", cap=budget.timeout,
                       check=False)
    if done.returncode != 0:
        raise BackendError(f"git fetch: the remote's pack is damaged "
                           f"({runner.redact(one_line(done.stderr))}); nothing was kept")
    index = written.read_bytes()
    written.unlink()
    return index


def fetch_pack(pack_dir: Path, runner: GitRunner, settings: GitSettings, tip: str) -> list[Path]:
    """Fetch everything `tip` needs into `pack_dir` as one pack; the files placed there.

    The caller checks connectivity before it trusts the pack (and removes the files returned
    if that fails). Raises `Fallback` when `git fetch` must do it, `BackendError` otherwise.
    """
    if not _SHA1.fullmatch(tip):
        raise Fallback(f"a tip that is not a SHA-1 ({tip[:12]})")
    route = _route(runner, settings.remote)
    connect = min(CONNECT_BUDGET, settings.transfer_timeout)
    with runner.talk(route.argv, action="fetch", cap=connect, bare=not route.helper,
                     raw=route.raw, env=route.env) as child:
        wire = Wire(child)
        capabilities, refs = _connect(wire, route.helper, runner.redact)
        budget = _Budget(child, settings.transfer_timeout)
        wire.send(_request(capabilities, refs, tip))
        _packfile_section(wire, runner.redact)
        with _temporaries(pack_dir) as (pack_temp, index_temp):
            index = _receive(SideBand(wire, runner.redact), pack_temp, runner, budget)
            _write_durably(index_temp, index)
            name = pack_dir / f"pack-{index[-40:-20].hex()}"
            placed: list[Path] = []
            try:
                for temp, final in ((pack_temp, name.with_suffix(".pack")),
                                    (index_temp, name.with_suffix(".idx"))):
                    if final.exists():  # the same name: the same bytes, already in place
                        continue
                    os.replace(temp, final)
                    placed.append(final)
            except OSError as error:
                for path in placed:  # no pack without its index left behind
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                raise BackendError(f"git fetch: cannot place the pack in {pack_dir}: "
                                   f"{error.strerror or error}") from None
    return placed
