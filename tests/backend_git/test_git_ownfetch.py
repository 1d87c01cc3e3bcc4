"""A new device's first fetch is roam's own (ownfetch.py), and it is exactly as safe as git's.

Real remotes only: file:// (`git upload-pack` over pipes) and smart HTTP (`git http-backend`
through `git remote-http`'s stateless-connect). Which program did the fetch is read from
git's own trace2 events (GIT_TRACE2_EVENT, which the child environment passes on): roam's
own fetch runs `upload-pack` or `remote-curl` and no `fetch`.

Damaged answers come from the remote's real `upload-pack`, through the hook git offers for
exactly this (`uploadpack.packObjectsHook`, set in a global config file): a pack cut short,
one with a flipped byte, one with a wrong trailing checksum, one that lacks an object the
tip needs, and no pack at all (the remote's error, on side band 3). Each is refused with one
line, and the mirror is left as it was: nothing in objects/pack, no ref.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from campaign.harness import Home, Runner, Store, new_key

from roam_backend_git.backend import GitBackend
from roam_backend_git.mirror import STALE_STAGING
from roam_backend_git.ownfetch import (
    Fallback,
    Wire,
    _advertisement,
    _packfile_section,
    pkt,
    ssh_argv,
    ssh_target,
)
from roam_backend_git.staging import TMP_PREFIX
from roam_core.errors import BackendError, TransientBackendError
from support.git_remotes import bare_repo, file_url, smart_http, ssh_server

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from netproxy import git_operation, latency_proxy

Opener = Callable[..., GitBackend]

#: init on a new device over smart HTTP: the look (ls-remote), then one fetch of the tip it
#: saw, which needs no second ls-refs.
INIT = {"advertise": 2, "ls-refs": 1, "fetch": 1}


def git_commands(trace: Path) -> Counter[str]:
    """How many times each git command ran, from a trace2 event file."""
    found: Counter[str] = Counter()
    if trace.exists():
        for line in trace.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "cmd_name":
                found[event["name"]] += 1
    return found


def pack_dir(mirror: Path) -> Path:
    return mirror / "objects" / "pack"


def git(mirror: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", f"--git-dir={mirror}", *args], capture_output=True,
                          text=True, timeout=120)


def assert_sound(mirror: Path) -> None:
    """`git fsck` passes, no temporary is left, and each index is index-pack's, byte for byte."""
    fsck = git(mirror, "fsck", "--no-dangling")
    assert fsck.returncode == 0, fsck.stderr
    assert not list(pack_dir(mirror).glob(f"{TMP_PREFIX}*"))
    for pack in pack_dir(mirror).glob("pack-*.pack"):
        theirs = mirror.parent / "index-pack-check.idx"
        made = git(mirror, "index-pack", "-o", str(theirs), str(pack))
        assert made.returncode == 0, made.stderr
        assert theirs.read_bytes() == pack.with_suffix(".idx").read_bytes()
        theirs.unlink()


@contextlib.contextmanager
def served(transport: str, root: Path) -> Iterator[tuple[str, object]]:
    """A fresh store over `transport` ("file" or "http"), and a request counter (http)."""
    repo = bare_repo(root, "store.git")
    if transport == "file":
        yield file_url(repo), None
        return
    with smart_http(root) as base:
        port = int(base.rstrip("/").rpartition(":")[2])
        with latency_proxy(port, 0.0) as proxy:
            yield f"{proxy.url}/{repo.name}", proxy


@pytest.mark.parametrize("transport", ["file", "http"])
def test_a_new_devices_first_fetch_is_roams_own(transport: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "served"
    root.mkdir()
    with served(transport, root) as (url, proxy):
        store = Store("git", {"backend": "git", "git_remote": url}, key=new_key())
        runner = Runner()
        desk = Home(tmp_path / "desk", "desk", store, runner)
        laptop = Home(tmp_path / "laptop", "laptop", store, runner)
        for number in range(30):
            desk.write(f"skills/group{number % 4}/skill{number}/SKILL.md", f"skill {number}\n")
        desk.write("memories/big.bin", os.urandom(3 << 20))  # more than one pack entry's worth
        desk.write("memories/notes.md", "remember this\n" * 5000)
        assert desk.roam("init", "--create-remote").code == 0
        assert desk.roam("push").code == 0

        trace = tmp_path / "trace.json"
        monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
        if proxy is not None:
            proxy.reset()  # type: ignore[attr-defined]
        assert laptop.roam("init").code == 0
        if proxy is not None:
            found = Counter(git_operation(r) for r in proxy.requests())  # type: ignore[attr-defined]
            assert dict(found) == INIT
        commands = git_commands(trace)
        assert commands["fetch"] == 0, commands
        # the look (ls-remote) and the fetch each run one
        assert commands["upload-pack" if transport == "file" else "remote-curl"] == 2, commands
        monkeypatch.delenv("GIT_TRACE2_EVENT")

        assert laptop.roam("pull", "--apply").code == 0
        theirs = {k: v for k, v in laptop.files().items() if k != "config.yaml"}
        ours = {k: v for k, v in desk.files().items() if k != "config.yaml"}
        assert theirs == ours
        assert_sound(laptop.root / "roam" / "git-mirror")


# -- damage --------------------------------------------------------------------------------

#: The hook `upload-pack` runs instead of `git pack-objects` (its argv follows the script's).
HOOK = '''\
import os, subprocess, sys, time
mode = sys.argv[1]
argv = sys.argv[2:]
if mode.startswith("stall="):  # half the pack, then nothing: its pid in the named file
    open(mode[6:], "w").write(str(os.getpid()))
    pack = subprocess.run(argv, stdin=sys.stdin, capture_output=True, check=True).stdout
    sys.stdout.buffer.write(pack[:len(pack) // 2])
    sys.stdout.buffer.flush()
    time.sleep(300)
if mode == "pause":  # half the pack, a pause past upload-pack's keepalive (5 s), the rest
    pack = subprocess.run(argv, stdin=sys.stdin, capture_output=True, check=True).stdout
    sys.stdout.buffer.write(pack[:len(pack) // 2])
    sys.stdout.buffer.flush()
    time.sleep(6.5)
    sys.stdout.buffer.write(pack[len(pack) // 2:])
    sys.exit(0)
if mode == "fails":  # pack-objects dies: upload-pack says so on band 3
    sys.exit("the disk is on fire")
if mode == "missing":  # a sound pack without the last object the tip reaches
    revs = b"".join(line for line in sys.stdin.buffer if len(line.strip()) == 40)  # wants
    listed = subprocess.run(["git", "rev-list", "--objects", "--stdin"], input=revs,
                            capture_output=True, check=True).stdout.splitlines()
    names = b"".join(line.split()[0] + b"\\n" for line in listed[:-1])
    pack = subprocess.run(["git", "pack-objects", "--stdout", "-q"], input=names,
                          capture_output=True, check=True).stdout
else:
    pack = bytearray(subprocess.run(argv, stdin=sys.stdin, capture_output=True,
                                    check=True).stdout)
    if mode == "truncated":
        pack = pack[:len(pack) // 2]
    elif mode == "flipped":
        pack[len(pack) // 2] ^= 0x01
    elif mode == "checksum":
        pack[-1] ^= 0x01
sys.stdout.buffer.write(pack)
'''

DAMAGE = {"truncated": "damaged", "flipped": "damaged", "checksum": "damaged",
          "missing": "lacks objects", "fails": "remote: aborting due to possible repository"}


def filled_remote(tmp_path: Path, open_backend: Opener) -> tuple[str, Path]:
    """A file:// store holding a generation of a dozen objects; its URL and path."""
    repo = bare_repo(tmp_path)
    writer = open_backend(file_url(repo))
    for number in range(12):
        writer.put_new(f"data/{number:02d}", os.urandom(40_000 + number))
    writer.swap_ref("HEAD", b"gen-1", None)
    return file_url(repo), repo


def damaging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """From now on, the remote's `upload-pack` sends packs damaged by `mode`."""
    hook = tmp_path / "damage.py"
    hook.write_text(HOOK)
    config = tmp_path / "damaging.gitconfig"
    config.write_text(f"[uploadpack]\n\tpackObjectsHook = {sys.executable} {hook} {mode}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))


@pytest.mark.parametrize("mode", sorted(DAMAGE))
def test_a_damaged_pack_is_refused_and_leaves_the_mirror_unchanged(
        mode: str, tmp_path: Path, open_backend: Opener,
        monkeypatch: pytest.MonkeyPatch) -> None:
    url, _repo = filled_remote(tmp_path, open_backend)
    damaging(tmp_path, monkeypatch, mode)
    reader = open_backend(url)
    mirror = reader.mirror.path
    reader.mirror.ensure()
    before = sorted(os.listdir(pack_dir(mirror)))
    with pytest.raises(BackendError) as caught:
        reader.read_ref("HEAD")
    text = str(caught.value)
    assert "\n" not in text and DAMAGE[mode] in text, text
    assert sorted(os.listdir(pack_dir(mirror))) == before == []
    assert git(mirror, "for-each-ref").stdout == ""

    # nothing lost: once the remote answers soundly, the same mirror fetches it
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")
    again = GitBackend(reader.settings, mirror)
    found = again.read_ref("HEAD")
    assert found is not None and found[0] == b"gen-1"
    assert_sound(mirror)


def test_a_local_remote_s_upload_pack_gets_the_environment_git_gives_it(
        tmp_path: Path, open_backend: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    """`git fetch` runs a local remote's `upload-pack` without the caller's repository
    variables (`git rev-parse --local-env-vars`), `-c` settings among them: the remote's own
    config governs it. roam's own fetch does the same: a hook set with `-c` stays unused."""
    url, _repo = filled_remote(tmp_path, open_backend)
    hook = tmp_path / "damage.py"
    hook.write_text(HOOK)
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS",
                       f"'uploadpack.packobjectshook'='{sys.executable} {hook} fails'")
    reader = open_backend(url)
    found = reader.read_ref("HEAD")
    assert found is not None and found[0] == b"gen-1"
    assert_sound(reader.mirror.path)


def _gone(pid: int, wait: float = 10.0) -> bool:
    """Whether process `pid` ended (a SIGKILL lands when the killed process next runs)."""
    give_up = time.monotonic() + wait
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):  # ended, waiting to be reaped by whoever adopted it
            return True
        if time.monotonic() > give_up:
            return False
        time.sleep(0.05)


def test_a_stalled_fetch_ends_within_its_timeout_and_leaves_nothing(
        tmp_path: Path, open_backend: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watchdog kills the child's whole process group (the remote's hook included)."""
    url, _repo = filled_remote(tmp_path, open_backend)
    pid_file = tmp_path / "hook.pid"
    damaging(tmp_path, monkeypatch, f"stall={pid_file}")
    # long enough for the look and the hook to start on a loaded machine
    reader = open_backend(url, git_transfer_timeout=8)
    started = time.monotonic()
    with pytest.raises(TransientBackendError) as caught:
        reader.read_ref("HEAD")
    assert time.monotonic() - started < 40
    assert "git fetch: no answer within" in str(caught.value), caught.value
    assert "\n" not in str(caught.value)
    assert pid_file.exists(), "the remote's hook never started"
    assert os.listdir(pack_dir(reader.mirror.path)) == []
    assert git(reader.mirror.path, "for-each-ref").stdout == ""
    assert _gone(int(pid_file.read_text()))


def test_a_pause_in_the_pack_is_waited_out(tmp_path: Path, open_backend: Opener,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """upload-pack fills a silence with keepalives (empty band-1 lines): not the pack's end."""
    url, _repo = filled_remote(tmp_path, open_backend)
    damaging(tmp_path, monkeypatch, "pause")
    reader = open_backend(url)
    found = reader.read_ref("HEAD")
    assert found is not None and found[0] == b"gen-1"
    assert_sound(reader.mirror.path)


def test_a_fetch_killed_midway_leaves_only_temporaries_that_upkeep_removes(
        tmp_path: Path, open_backend: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    url, _repo = filled_remote(tmp_path, open_backend)
    pid_file = tmp_path / "hook.pid"
    damaging(tmp_path, monkeypatch, f"stall={pid_file}")
    reader = open_backend(url)
    mirror = reader.mirror.path
    script = (f"from pathlib import Path\nfrom roam_backend_git.backend import GitBackend\n"
              f"from roam_backend_git.config import parse_settings\n"
              f"settings = parse_settings({{'git_remote': {url!r}}}, Path({str(tmp_path)!r}))\n"
              f"GitBackend(settings, Path({str(mirror)!r})).read_ref('HEAD')\n")
    child = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not list(pack_dir(mirror).glob(f"{TMP_PREFIX}*")):
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)  # roam dies mid-pack; its git children live on
        child.wait()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # the rest of what the test started
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    left = os.listdir(pack_dir(mirror))
    assert left and all(name.startswith(TMP_PREFIX) for name in left), left
    assert git(mirror, "for-each-ref").stdout == ""
    old = time.time() - 2 * STALE_STAGING
    for name in left:
        os.utime(pack_dir(mirror) / name, (old, old))
    reader.mirror.maintain()
    assert os.listdir(pack_dir(mirror)) == []


def test_a_delta_against_a_blob_goes_to_git_index_pack(tmp_path: Path, open_backend: Opener,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A host's repack may store a blob as a delta against another: git indexes that pack."""
    url, repo = filled_remote(tmp_path, open_backend)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", "--branch", "roam", str(repo), str(work)], check=True,
                   capture_output=True, timeout=60)
    text = "".join(f"line {n} of a long plain file\n" for n in range(20_000))
    (work / "plain-a.txt").write_text(text)
    (work / "plain-b.txt").write_text(text.replace("line 500 ", "line five hundred "))
    subprocess.run(["git", "-C", str(work), "add", "."], check=True, timeout=60)
    subprocess.run(["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "plain"], check=True, timeout=60)
    subprocess.run(["git", "-C", str(work), "push", "-q", "origin", "roam"], check=True,
                   capture_output=True, timeout=60)
    subprocess.run(["git", f"--git-dir={repo}", "repack", "-adfq", "--window=10"], check=True,
                   timeout=120)
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    reader = open_backend(url)
    tip = git(repo, "rev-parse", "refs/heads/roam").stdout.strip()
    reader.mirror.ensure()
    assert reader.mirror.fetch(tip) == tip
    commands = git_commands(trace)
    assert commands["fetch"] == 0 and commands["index-pack"] == 1, commands
    assert_sound(reader.mirror.path)


# -- credentials and fallbacks ---------------------------------------------------------------

def first_fetch(url: str, open_backend: Opener, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """One device publishes a generation, a new one reads it: the git commands it ran."""
    writer = open_backend(url)
    writer.put_new("data/a", os.urandom(10_000))
    writer.swap_ref("HEAD", b"gen-1", None)
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    reader = open_backend(url)
    found = reader.read_ref("HEAD")
    assert found is not None and found[0] == b"gen-1"
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert_sound(reader.mirror.path)
    return git_commands(trace)


def test_a_password_comes_from_gits_credential_helper(tmp_path: Path, open_backend: Opener,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "served"
    root.mkdir()
    repo = bare_repo(root)
    with smart_http(root, auth=("alice", "s3cret-pw-81")) as base:
        stored = tmp_path / "credentials"
        stored.write_text(base.replace("http://", "http://alice:s3cret-pw-81@") + "\n")
        config = tmp_path / "helper.gitconfig"
        config.write_text(f"[credential]\n\thelper = store --file={stored}\n")
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
        commands = first_fetch(base + repo.name, open_backend, tmp_path, monkeypatch)
        # the look and roam's own fetch, each through git's remote helper
        assert commands["fetch"] == 0 and commands["remote-curl"] == 2, commands

        stored.write_text(base.replace("http://", "http://alice:wrong-pw-3321@") + "\n")
        with pytest.raises(BackendError) as caught:
            open_backend(base + repo.name).read_ref("HEAD")
        assert "authentication" in str(caught.value)
        assert "wrong-pw-3321" not in str(caught.value)


def test_a_server_without_protocol_v2_gets_git_fetch(tmp_path: Path, open_backend: Opener,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "served"
    root.mkdir()
    repo = bare_repo(root)
    with smart_http(root, protocol_v2=False) as base:
        commands = first_fetch(base + repo.name, open_backend, tmp_path, monkeypatch)
        assert commands["fetch"] == 1, commands


def test_ssh_first_fetch_is_roams_own(make_remote: Callable[[str], str], open_backend: Opener,
                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the user's ssh command, as git runs it; protocol v2 (the sshd accepts it)."""
    commands = first_fetch(make_remote("ssh"), open_backend, tmp_path, monkeypatch)
    assert commands["fetch"] == 0, commands


def test_ssh_to_a_server_speaking_v0_is_roams_own_too(
        ssh_base: tuple[str, str], served_root: Path, open_backend: Opener, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stock sshd drops GIT_PROTOCOL: upload-pack advertises its refs (v0), roam wants."""
    with ssh_server(tmp_path / "keys", protocol_v2=False) as (base, command):
        monkeypatch.setenv("GIT_SSH_COMMAND", command)
        url = base + str(bare_repo(served_root))
        commands = first_fetch(url, open_backend, tmp_path, monkeypatch)
        assert commands["fetch"] == 0, commands


def test_another_ssh_program_keeps_git_fetch(make_remote: Callable[[str], str],
                                             open_backend: Opener, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """roam speaks only to OpenSSH's `ssh`; a wrapper (plink, a script) is git's to run."""
    url = make_remote("ssh")
    wrapper = tmp_path / "my-ssh"
    wrapper.write_text('#!/bin/sh\nexec ssh "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", os.environ["GIT_SSH_COMMAND"].replace(
        "ssh ", f"{wrapper} ", 1))
    commands = first_fetch(url, open_backend, tmp_path, monkeypatch)
    assert commands["fetch"] == 1, commands


@pytest.mark.parametrize(("remote", "target"), [
    ("ssh://me@host:2222/srv/x.git", ("me@host", "2222", "/srv/x.git")),
    ("git+ssh://host/~me/x.git", ("host", None, "~me/x.git")),
    ("git@example.org:me/x.git", ("git@example.org", None, "me/x.git")),
    ("ssh://me@[::1]:22/x.git", ("me@::1", "22", "/x.git")),
    ("ssh://-oProxyCommand=touch%20x/x.git", None),   # an option for a host: git refuses
    ("ssh://-oProxyCommand=x@host/x.git", None),      # ... or in the user's part
    ("[host:22]:x.git", None),                        # scp-like with brackets: git's to read
    ("ssh://host/a%20b.git", None),                   # escapes: git's to read
    ("ssh://host", None),
])
def test_ssh_remotes_are_read_as_git_reads_them(remote: str,
                                                target: tuple[str, str | None, str] | None
                                                ) -> None:
    if target is None:
        with pytest.raises(Fallback):
            ssh_target(remote)
    else:
        assert ssh_target(remote) == target


def test_ssh_runs_as_git_runs_it() -> None:
    """Through the shell (a command line), GIT_PROTOCOL sent, the path quoted as git does."""
    command = "ssh -i key -o BatchMode=yes"
    assert ssh_argv(command, "ssh://me@host:2222/srv/it's!.git") == [
        "sh", "-c", f'{command} "$@"', command, "-o", "SendEnv=GIT_PROTOCOL", "-p", "2222",
        "me@host", "git-upload-pack '/srv/it'\\''s'\\!'.git'"]
    with pytest.raises(Fallback):
        ssh_argv("plink -batch", "ssh://me@host/x.git")


@pytest.mark.parametrize("transport", ["file", "http"])
def test_a_tip_the_remote_no_longer_has_gets_git_fetch(transport: str, tmp_path: Path,
                                                       open_backend: Opener) -> None:
    """The branch moved and the old tip is gone (`ERR ... not our ref`): `git fetch` then."""
    root = tmp_path / "served"
    root.mkdir()
    with served(transport, root) as (url, _proxy):
        writer = open_backend(url)
        writer.put_new("data/a", os.urandom(10_000))
        writer.swap_ref("HEAD", b"gen-1", None)
        reader = open_backend(url)
        reader.mirror.ensure()
        tip = git(root / "store.git", "rev-parse", "refs/heads/roam").stdout.strip()
        assert reader.mirror.fetch("1" * 40) == tip
        assert_sound(reader.mirror.path)


def test_a_mirror_asks_git_whether_it_has_refs_once(tmp_path: Path, open_backend: Opener,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a fetch can be roam's own (a mirror without refs) is looked up once: a
    mirror that had refs keeps them, and a later fetch runs no `for-each-ref`."""
    url, _repo = filled_remote(tmp_path, open_backend)
    reader = open_backend(url)
    assert reader.read_ref("HEAD") is not None
    writer = open_backend(url)
    writer.put_new("data/later", os.urandom(1_000))
    writer.swap_ref("HEAD", b"gen-2", writer.read_ref("HEAD")[1])  # type: ignore[index]

    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    reader.mirror.git.env["GIT_TRACE2_EVENT"] = str(trace)
    found = reader.read_ref("HEAD")
    assert found is not None and found[0] == b"gen-2"
    commands = git_commands(trace)
    assert commands["fetch"] == 1 and commands["for-each-ref"] == 0, commands


class _Child:
    """A git child's pipes as `Wire` reads them, from bytes."""

    def __init__(self, answer: bytes) -> None:
        self.stdin = io.BytesIO()
        self.stdout = io.BytesIO(answer)

    def failure(self, what: str = "") -> BackendError:
        return BackendError(f"the child stopped: {what}")


def test_a_long_err_line_in_a_v0_advertisement_is_the_remote_s_refusal() -> None:
    refusal = b"ERR access denied or repository not exported: /srv/somewhere/x.git"
    assert len(refusal) >= 42  # as long as a ref line: not to be read as one
    wire = Wire(_Child(b""))  # type: ignore[arg-type]
    with pytest.raises(BackendError, match="remote: access denied or repository not exported"):
        _advertisement(wire, refusal, lambda text: text)


def test_sections_before_the_pack_are_skipped_delimiters_and_all() -> None:
    answer = (pkt(b"acknowledgments\n") + pkt(b"ready\n") + b"0001"
              + pkt(b"packfile\n") + pkt(b"\x01PACK"))
    wire = Wire(_Child(answer))  # type: ignore[arg-type]
    _packfile_section(wire, lambda text: text)
    assert wire.packet() == b"\x01PACK"
