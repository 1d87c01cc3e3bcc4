"""The local mirror: a bare repository and the plumbing roam runs in it.

No checkout and no working tree: blobs are written by roam into one pack per commit
(staging.py), trees with a private index (`read-tree`, `update-index --index-info`,
`write-tree`) and commits with `commit-tree`. The last tip seen on the remote is kept in
`refs/roam/<namespace>/tip`, one namespace per remote and branch, so changing `git_remote`
never mixes two stores.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from roam_backend_git import ownfetch
from roam_backend_git.config import GitSettings
from roam_backend_git.packread import PackReader
from roam_backend_git.runner import GitRunner, classify, one_line, transfer_budget
from roam_backend_git.staging import TMP_PREFIX, StagingPack
from roam_core.plugin import CONNECT_BUDGET, BackendError, TransientBackendError

_PUSH_OK_FLAGS = (" ", "+", "*", "=", "-")
#: Loose objects the mirror gathers before `git gc --auto` packs them (git's own default).
GC_AUTO = 6700
#: Packs the mirror gathers before that packing joins them (every fetch and publish adds one).
GC_AUTO_PACKS = 50
#: At most this long for that packing; git's gc is safe to stop at any point.
GC_CAP = 120.0
#: A staging pack untouched this long belongs to a process that died: removed at upkeep.
STALE_STAGING = 24 * 3600.0

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PushOutcome:
    """How the remote answered a push of our branch."""

    accepted: bool
    summary: str
    stderr: str


class Mirror:
    """One bare repository under the home's state directory, talking to one remote."""

    def __init__(self, path: Path, settings: GitSettings, runner: GitRunner) -> None:
        self.path = path
        self.settings = settings
        self.git = runner
        self.branch_ref = f"refs/heads/{settings.branch}"
        self.tracking_ref = f"refs/roam/{settings.namespace}/tip"
        self.staging = StagingPack(path / "objects" / "pack")
        self.packs = PackReader(path / "objects" / "pack")
        #: the mirror was seen holding a ref: a fetch into it is `git fetch` from then on
        #: (were the ref deleted since, `git fetch` is merely the slower of two sound ways)
        self._had_refs = False

    # -- setup and locking -----------------------------------------------------------------

    def ensure(self) -> None:
        """Create the bare repository once (no templates, so no hooks of the user's)."""
        if (self.path / "HEAD").is_file():
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as error:
            raise BackendError(f"cannot create {self.path.parent}: {error.strerror}") from None
        self.git.run(["init", "--bare", "--quiet", "--template=", str(self.path)],
                     action="init (local mirror)")
        os.chmod(self.path, 0o700)

    @contextlib.contextmanager
    def locked(self, cap: float) -> Iterator[None]:
        """Serialise fetches and publishes of processes sharing this mirror."""
        self.ensure()
        fd = os.open(self.path / "roam.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            give_up = time.monotonic() + self.git.timeout(cap)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > give_up:
                        raise TransientBackendError(
                            f"git mirror {self.path} is busy (another roam process)") from None
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)

    # -- talking to the remote ---------------------------------------------------------------

    def remote_tip(self) -> str | None:
        """The remote branch's commit, or None when the branch does not exist (one round trip).

        Bounded by the connect budget, so a blackholed remote fails in seconds, not after the
        transfer timeout.
        """
        cap = min(CONNECT_BUDGET, self.settings.transfer_timeout)
        out = self.git.run(["ls-remote", "--", self.settings.remote, self.branch_ref],
                           action="ls-remote", cap=cap, network=True).stdout.decode()
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            if ref.strip() == self.branch_ref:
                return sha.strip()
        return None

    def fetch(self, tip: str | None = None) -> str | None:
        """Fetch the branch into the tracking ref; return the fetched tip (None if absent).

        `tip`: the branch's commit a look just saw. A mirror without any ref (a new device's
        first fetch) then fetches it itself (ownfetch.py); any other fetch is `git fetch`.
        """
        if tip is not None and ownfetch.applies(self.settings.remote) and not self._has_refs():
            try:
                return self._own_fetch(tip)
            except ownfetch.Fallback as why:
                log.debug("git fetch instead of roam's own: %s", why)
        refspec = f"+{self.branch_ref}:{self.tracking_ref}"
        # every fetch kept as a pack (git unpacks fewer than 100 objects into loose files by
        # default): packread.py reads packs, a loose object costs a `git cat-file` each
        result = self.git.run(
            ["-c", "fetch.unpackLimit=1", "fetch", "--quiet", "--no-tags", "--",
             self.settings.remote, refspec],
            action="fetch", cap=self.settings.transfer_timeout, network=True, check=False,
            received=self._incoming)
        if result.returncode != 0:
            if "couldn't find remote ref" in result.stderr.lower():
                self.set_tracking(None)
                return None
            raise classify("fetch", result.stderr, self.git.redact, self.git.transport)
        return self.tracking()

    def _incoming(self) -> int:
        """Bytes of the packs a running `git fetch` is receiving (its `tmp_pack_*` files)."""
        total = 0
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.path / "objects" / "pack"):
                if entry.name.startswith("tmp_pack_"):
                    with contextlib.suppress(OSError):
                        total += entry.stat().st_size
        return total

    def _has_refs(self) -> bool:
        if not self._had_refs:
            self._had_refs = bool(self.git.run(["for-each-ref", "--count=1", "--format=x"],
                                               action="for-each-ref").stdout.strip())
        return self._had_refs

    def _own_fetch(self, tip: str) -> str:
        """Fetch `tip` ourselves: the pack placed, connectivity checked, then the ref."""
        pack_dir = self.path / "objects" / "pack"
        placed = ownfetch.fetch_pack(pack_dir, self.git, self.settings, tip)
        # git's own check after a fetch: every object the tip reaches is there
        check = self.git.run(["rev-list", "--objects", "--quiet", tip, "--not", "--all"],
                             action="rev-list (local mirror)", cap=self.settings.transfer_timeout,
                             check=False)
        if check.returncode != 0:
            for path in sorted(placed, key=lambda p: p.suffix != ".idx"):  # the index first
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            self.packs.forget_gone()
            raise BackendError("git fetch: the remote's pack lacks objects the branch needs "
                               f"({self.git.redact(one_line(check.stderr))}); nothing was kept")
        self.set_tracking(tip)
        return tip

    def push(self, commit: str, lease: str | None, size: int = 0) -> PushOutcome:
        """Push `commit` to the branch if the remote is still at `lease` (None: absent).

        `size`: the bytes of the objects it carries. Their time at core's floor rate is the
        push's budget when it is longer than `git_transfer_timeout` (a slow uplink).
        """
        cap = transfer_budget(self.settings.transfer_timeout, size)
        result = self.git.run(
            ["push", "--porcelain", "--no-verify",
             f"--force-with-lease={self.branch_ref}:{lease or ''}",
             "--", self.settings.remote, f"{commit}:{self.branch_ref}"],
            action="push", cap=cap, network=True, check=False)
        out = result.stdout.decode("utf-8", "replace")
        for line in out.splitlines():
            flag, _, rest = line.partition("\t")
            refs, _, summary = rest.partition("\t")
            if refs.endswith(f":{self.branch_ref}") and flag:
                accepted = flag in _PUSH_OK_FLAGS and result.returncode == 0
                return PushOutcome(accepted, summary.strip(), result.stderr)
        if result.returncode == 0:
            return PushOutcome(True, "", result.stderr)
        raise classify("push", result.stderr, self.git.redact, self.git.transport)

    def maintain(self) -> None:
        """Pack the mirror's loose objects once there are many (`git gc --auto`).

        Every push adds loose objects; without this the mirror grows by thousands of small
        files per large push. In the foreground (no detached gc outliving roam), and without
        delta search: roam's objects are encrypted, so deltas cannot shrink them.
        """
        cutoff = time.time() - STALE_STAGING
        for leftover in (self.path / "objects" / "pack").glob(f"{TMP_PREFIX}*"):
            with contextlib.suppress(OSError):
                if leftover.stat().st_mtime < cutoff:
                    leftover.unlink()
        try:
            self.git.run(["-c", f"gc.auto={GC_AUTO}", "-c", "gc.autoDetach=false",
                          "-c", "pack.window=0", "-c", f"gc.autoPackLimit={GC_AUTO_PACKS}",
                          "gc", "--auto", "--quiet"], action="gc (local mirror)", cap=GC_CAP)
        finally:
            self.packs.forget_gone()  # a gc stopped midway may have removed packs too

    # -- local refs and objects ----------------------------------------------------------------

    def tracking(self) -> str | None:
        result = self.git.run(
            ["rev-parse", "--verify", "--quiet", f"{self.tracking_ref}^{{commit}}"],
            action="rev-parse", check=False)
        if result.returncode != 0:
            return None
        return result.stdout.decode().strip() or None

    def set_tracking(self, commit: str | None) -> None:
        if commit is None:
            self.git.run(["update-ref", "-d", self.tracking_ref], action="update-ref",
                         check=False)
        else:
            self.git.run(["update-ref", self.tracking_ref, commit], action="update-ref")
            self._had_refs = True

    def has_commit(self, sha: str) -> bool:
        return self.git.run(["cat-file", "-e", f"{sha}^{{commit}}"], action="cat-file",
                            check=False).returncode == 0

    def tree(self, commit: str) -> dict[str, str]:
        """Every file of `commit` as path → blob id."""
        out = self.git.run(["ls-tree", "-r", "-z", "--full-tree", commit],
                           action="ls-tree").stdout
        entries: dict[str, str] = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == b"blob":
                entries[path.decode("utf-8", "surrogateescape")] = parts[2].decode()
        return entries

    def hash_blob(self, data: bytes) -> str:
        """Stage `data` as a blob for the next commit; its object id."""
        return self.staging.add(data)

    def read_blob(self, sha: str) -> bytes:
        found = self.staging.read(sha)
        if found is None:
            found = self.packs.read(sha)
        if found is not None:
            return found
        return self.git.run(["cat-file", "blob", sha], action="cat-file").stdout

    def read_range(self, sha: str, start: int, length: int | None) -> bytes | None:
        """Part of a blob read alone from its pack; None: read the whole blob instead."""
        if self.staging.holds(sha):
            return None
        return self.packs.read_range(sha, start, length)

    def commit(self, parent: str | None, entries: Iterable[tuple[str, str]],
               message: str, removed: Iterable[str] = (), parentless: bool = False) -> str:
        """A commit of `parent`'s tree plus `entries` (path, blob id), through a private index.

        `removed` paths are left out of the tree. `parentless`: the commit keeps `parent`'s
        tree but not its history, so what only older commits hold is unreachable from the
        branch (a deletion: see GitBackend.delete).
        """
        self.staging.finish()  # write-tree checks that every blob exists
        index = self.path / f"roam-index-{secrets.token_hex(8)}"
        env = {"GIT_INDEX_FILE": str(index)}
        try:
            self.git.run(["read-tree", parent] if parent else ["read-tree", "--empty"],
                         action="read-tree", env=env)
            # mode 0 in --index-info removes the path from the index
            records = b"".join(f"0 {'0' * 40}\t{path}".encode() + b"\0" for path in removed)
            records += b"".join(f"100644 blob {sha}\t{path}".encode() + b"\0"
                                for path, sha in entries)
            if records:
                self.git.run(["update-index", "-z", "--index-info"], action="update-index",
                             input=records, env=env)
            tree = self.git.run(["write-tree"], action="write-tree",
                                env=env).stdout.decode().strip()
            args = ["commit-tree", "--no-gpg-sign", tree, "-m", message]
            if parent and not parentless:
                args += ["-p", parent]
            return self.git.run(args, action="commit-tree").stdout.decode().strip()
        finally:
            for leftover in (index, index.with_name(index.name + ".lock")):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()
