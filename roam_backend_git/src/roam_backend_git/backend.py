"""`GitBackend`: the storage contract on one branch of a git repository the user owns.

Layout of the branch's tree: every object is a file at its key path, written once and never
rewritten; refs live under `.roam/refs/<name>` (a key can never start with a dot, so the two
never collide). A ref's version token is the blob id of its own file (like an S3 ETag, the
content's hash: roam's refs are sealed with a fresh nonce, so no two writes look alike), so
another ref, another device's objects or a deletion moving the branch does not move it.

Deleting publishes a commit without a parent whose tree is the tip's minus the deleted keys,
so the deleted objects become unreachable and the host can free them (docs/decisions.md,
"Deleting on git").

Publishing is batched: `put_new` stages a blob in the local mirror (this instance reads it back
at once), and `swap_ref` makes one commit holding every staged object plus the new ref on top
of the tip it just fetched, then pushes it with `--force-with-lease=<branch>:<that tip>`. The
remote checks the lease atomically, so of N racing devices exactly one wins; a loser's staged
objects stay staged for its retry. A publish carrying more than `git_max_push_mb` of objects
(a host refuses a push over its own limit: GitHub's is 2 GiB) first pushes them in parts, each
a commit of objects alone under the same lease, as another device's objects would land; the
last commit moves the ref.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from roam_backend_git.config import GitSettings, is_ssh_url, redact_text, transport_of
from roam_backend_git.env import SSH_VARIABLES, child_env, ssh_command
from roam_backend_git.mirror import Mirror, PushOutcome
from roam_backend_git.runner import TOO_LARGE_HINT, TOO_LARGE_PATTERNS, GitRunner, one_line
from roam_core.plugin import (
    CONNECT_BUDGET,
    Backend,
    BackendError,
    Capabilities,
    Deadline,
    DeadlineExceeded,
    DoctorChecks,
    ObjectExists,
    ObjectNotFound,
    RefConflict,
    TransientBackendError,
    validate_key,
    validate_ref,
)
from roam_core.plugin import deadline as _deadline

log = logging.getLogger(__name__)

REF_DIR = ".roam/refs/"
README_PATH = ".roam/README.md"
README = (b"# roam store\n\nThis branch holds an end-to-end encrypted roam store. Every file is\n"
          b"written once and never changed. Do not edit, rebase or force-push this branch.\n")
#: A miss in get/exists looks at the remote again at most this often (read_ref always does).
MISS_REFRESH_INTERVAL = 1.0
#: Commits a publish builds while other devices keep moving the branch (each one is a new
#: look and a new push; only a move of the ref itself is a conflict).
PUBLISH_ATTEMPTS = 8
#: Whole blobs kept in memory for ranged reads of objects not stored as roam writes them (a
#: host's repack deflated them, or they are staged): core reads many ranges of one pack.
BLOB_CACHE_BYTES = 96 * 1024 * 1024


@dataclass
class _View:
    """One fetched tip and its files; replaced whole, never mutated after publication."""

    commit: str | None
    files: dict[str, str] = field(default_factory=dict)
    _dirs: frozenset[str] | None = None

    @property
    def dirs(self) -> frozenset[str]:
        if self._dirs is None:
            self._dirs = frozenset(_parents_of(self.files))
        return self._dirs


def _parents_of(keys: Iterator[str] | Mapping[str, object] | set[str]) -> set[str]:
    parents: set[str] = set()
    for key in keys:
        parts = key.split("/")
        parents.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return parents


class GitBackend(Backend):
    """Storage in one branch of a git repository, through a bare mirror and git plumbing."""

    def __init__(self, settings: GitSettings, mirror_dir: Path,
                 deadline: Deadline | None = None,
                 parent_env: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        # Not `remote`: reads come from the mirror on this disk (one fetch brought every
        # object) and writes are staged there until one push, so core reads this store as
        # a local one: small spans, one reader, no cached copy of each tree
        # (tests/backend_git/test_git_local_reads.py).
        self.capabilities = Capabilities(
            batched_publish=True, max_object_size=settings.max_object_size, remote=False,
            deletes=True, extra={"branch": settings.branch})
        parent = os.environ if parent_env is None else parent_env
        # Only what picks the ssh program is kept: the rest of the parent's environment
        # (secrets included) must not live on in this object.
        self._ssh_env = {name: parent[name] for name in SSH_VARIABLES if name in parent}
        runner = GitRunner(Path(mirror_dir), child_env(parent), self._redact,
                           deadline, transport=transport_of(settings.remote))
        self.mirror = Mirror(Path(mirror_dir), settings, runner)
        self._ready = False
        self._state = threading.Lock()        # guards _staged, _view swaps and the cache
        self._publish = threading.RLock()     # one refresh or publish at a time
        self._view = _View(None)
        self._refreshed_at: float | None = None
        self._refreshed_in: Deadline | None = None  # the operation of the last look
        self._staged: dict[str, str | None] = {}   # key -> blob id (None while hashing)
        self._staged_sizes: dict[str, int] = {}    # key -> bytes, for splitting a publish
        self._staged_dirs: set[str] = set()
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_bytes = 0
        self._loading: dict[str, Future[bytes]] = {}  # sha -> the read running for it
        #: the tip `ping` saw, in which operation and when (the next look may use it)
        self._looked: tuple[str | None, Deadline | None, float] | None = None

    # -- plumbing helpers -------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        return redact_text(text, self.settings.remote)

    def _prepare(self) -> None:
        """Create the mirror and learn the user's ssh command, once per instance."""
        if self._ready:
            return
        self.mirror.ensure()
        if is_ssh_url(self.settings.remote):
            found = self.mirror.git.run(["config", "--get", "core.sshCommand"],
                                        action="config", check=False)
            configured = found.stdout.decode().strip() or None
            self.mirror.git.env["GIT_SSH_COMMAND"] = ssh_command(self._ssh_env, configured)
        self._ready = True

    def _refresh(self, max_age: float = 0.0) -> _View:
        """The remote's current tip (fetched when new), unless we looked within `max_age`."""
        with self._publish:
            seen = self._refreshed_at
            if seen is not None and time.monotonic() - seen < max_age:
                return self._view
            self._prepare()
            view = self._view
            with self.mirror.locked(CONNECT_BUDGET):
                looked, self._looked = self._looked, None
                if looked is not None and looked[1] is _deadline.current() is not None \
                        and time.monotonic() - looked[2] < MISS_REFRESH_INTERVAL:
                    # this operation's reachability check (`ping`) just listed the remote:
                    # listing it again before the fetch would cost one more round trip
                    remote = looked[0]
                else:
                    remote = self.mirror.remote_tip()
                if remote is None:
                    self.mirror.set_tracking(None)
                    tip = None
                elif remote == view.commit:
                    tip = remote
                elif self.mirror.has_commit(remote):
                    self.mirror.set_tracking(remote)
                    tip = remote
                else:
                    tip = self.mirror.fetch(remote)
            self._set_view(tip)
            self._refreshed_at = time.monotonic()
            self._refreshed_in = _deadline.current()
            return self._view

    def _set_view(self, tip: str | None, files: dict[str, str] | None = None) -> None:
        if tip == self._view.commit and files is None:
            return
        if files is None:
            files = self.mirror.tree(tip) if tip else {}
        view = _View(tip, files)
        with self._state:
            self._view = view
            # Someone else published these keys first; theirs is the object now.
            for key in [k for k in self._staged if k in files]:
                if self._staged[key] not in (None, files[key]):
                    log.warning("git store: %s was published by another device first", key)
                del self._staged[key]
                self._staged_sizes.pop(key, None)
            self._staged_dirs = _parents_of(self._staged)

    def _lookup(self, key: str) -> str | None:
        with self._state:
            staged = self._staged.get(key)
        return staged or self._view.files.get(key)

    def _find(self, key: str) -> str | None:
        sha = self._lookup(key)
        if sha is None:
            self._refresh(MISS_REFRESH_INTERVAL)
            sha = self._lookup(key)
        return sha

    def _read(self, sha: str, cache: bool) -> bytes:
        """The blob's bytes; a ranged read (`cache`) keeps them for the next ranges.

        Ranged reads of one blob come in parallel (a pull reads a pack's spans in several
        threads): one `cat-file` runs and the others wait for its bytes, instead of each
        piping the whole pack out of git again.
        """
        with self._state:
            cached = self._cache.get(sha)
            if cached is not None:
                self._cache.move_to_end(sha)
                return cached
            running = self._loading.get(sha)
            loading: Future[bytes] | None = None
            if running is None and cache:
                loading = self._loading[sha] = Future()
        if running is not None:
            return running.result()
        if loading is None:
            return self.mirror.read_blob(sha)
        try:
            data = self.mirror.read_blob(sha)
        except BaseException as failure:
            with self._state:
                del self._loading[sha]
            loading.set_exception(failure)
            raise
        with self._state:
            del self._loading[sha]
            if len(data) <= BLOB_CACHE_BYTES and sha not in self._cache:
                self._cache[sha] = data
                self._cache_bytes += len(data)
            while self._cache_bytes > BLOB_CACHE_BYTES:
                _old, dropped = self._cache.popitem(last=False)
                self._cache_bytes -= len(dropped)
        loading.set_result(data)
        return data

    # -- objects ----------------------------------------------------------------------------

    def get(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        validate_key(key)
        sha = self._find(key)
        if sha is None:
            raise ObjectNotFound(key)
        ranged = offset > 0 or length is not None
        if ranged:
            # a pull reads each pack object once, in spans: read only the span
            part = self.mirror.read_range(sha, offset, length)
            if part is not None:
                return part
        data = self._read(sha, cache=ranged)
        end = None if length is None else offset + length
        return data[offset:end]

    def exists(self, key: str) -> bool:
        return self._find(validate_key(key)) is not None

    def put_new(self, key: str, data: bytes) -> None:
        validate_key(key)
        if len(data) > self.settings.max_object_size:
            raise BackendError(f"object {key} is {len(data)} bytes, over git_max_object_mb "
                               f"({self.settings.max_object_mb} MiB)")
        if self._refreshed_at is None:
            self._refresh()
        with self._state:
            view = self._view
            if key in self._staged or key in view.files:
                raise ObjectExists(key)
            parents = _parents_of({key})
            clash = next((p for p in parents if p in view.files or p in self._staged), None)
            if clash or key in view.dirs or key in self._staged_dirs:
                raise BackendError(f"object {key} clashes with {clash or key + '/…'} in the "
                                   "git store (a path cannot be both a file and a folder)")
            self._staged[key] = None
            self._staged_sizes[key] = len(data)
            self._staged_dirs |= parents
        try:
            sha = self.mirror.hash_blob(bytes(data))
        except BaseException:
            with self._state:
                self._staged.pop(key, None)
                self._staged_sizes.pop(key, None)
                self._staged_dirs = _parents_of(self._staged)
            raise
        with self._state:
            self._staged[key] = sha

    def list(self, prefix: str = "") -> Iterator[str]:
        # within one operation (one deadline) the look its first read took is recent enough:
        # a key published since is at worst an index not yet known (its blobs sent again)
        current = _deadline.current()
        if current is not None and self._refreshed_in is current:
            view = self._view
        else:
            view = self._refresh()
        with self._state:
            staged = {key for key, sha in self._staged.items() if sha}
        keys = {key for key in view.files if not key.startswith(".")} | staged
        return iter(sorted(key for key in keys if key.startswith(prefix)))

    # -- the ref ----------------------------------------------------------------------------

    def read_ref(self, name: str) -> tuple[bytes, str] | None:
        path = REF_DIR + validate_ref(name)
        current = _deadline.current()
        if name != "HEAD" and current is not None and self._refreshed_in is current:
            # every ref lives in the one branch: the look that read HEAD in this operation
            # read LEASE too (a push reads both; a lease change is a compare-and-swap anyway)
            view = self._view
        else:
            view = self._refresh()
        sha = view.files.get(path)
        if sha is None or view.commit is None:
            return None
        return self.mirror.read_blob(sha), sha

    def swap_ref(self, name: str, data: bytes, expected_version: str | None) -> str:
        path = REF_DIR + validate_ref(name)
        with self._publish:
            view = self._view
            if self._refreshed_at is None or self._ref_moved(view, path, expected_version):
                # the lease below makes the remote check the tip anyway: look again only
                # when this instance's last look disagrees with the caller's
                view = self._refresh()
            ref_blob = self.mirror.hash_blob(bytes(data))
            for _attempt in range(PUBLISH_ATTEMPTS):
                if self._ref_moved(view, path, expected_version):
                    raise RefConflict(f"ref {name} moved (expected {expected_version}, "
                                      f"found {view.files.get(path)})")
                entries = {path: ref_blob}
                with self._state:
                    batch = {k: s for k, s in self._staged.items()
                             if s and k not in view.files}
                parts = self._parts(batch)
                try:
                    for part in parts[:-1]:
                        view = self._push_part(view, part)
                except RefConflict:
                    view = self._refresh()
                    continue
                batch = parts[-1]
                entries.update(batch)
                if view.commit is None:
                    entries[README_PATH] = self.mirror.hash_blob(README)
                message = (f"roam: {name} with {len(batch)} new objects\n\n"
                           f"nonce {secrets.token_hex(8)}\n")
                commit = self.mirror.commit(view.commit, sorted(entries.items()), message)
                try:
                    self._push(commit, view.commit, self._bytes_of(batch))
                except RefConflict:
                    # the branch moved: another ref, another device's objects or a
                    # deletion. Only a move of this ref is the caller's conflict.
                    view = self._refresh()
                    continue
                files = dict(view.files)
                files.update(entries)
                self._published(commit, files)
                return ref_blob
        raise RefConflict(f"the branch kept moving while ref {name} was published")

    def _parts(self, batch: dict[str, str]) -> tuple[dict[str, str], ...]:
        """`batch` in pushes of at most `git_max_push_mb` of objects each, in key order."""
        budget = self.settings.max_push_size
        parts = [dict[str, str]()]
        held = 0
        with self._state:
            sizes = {key: self._staged_sizes.get(key, 0) for key in batch}
        for key in sorted(batch):
            if parts[-1] and held + sizes[key] > budget:
                parts.append({})
                held = 0
            parts[-1][key] = batch[key]
            held += sizes[key]
        return tuple(parts)

    def _bytes_of(self, objects: Mapping[str, str]) -> int:
        with self._state:
            return sum(self._staged_sizes.get(key, 0) for key in objects)

    def _push_part(self, view: _View, part: dict[str, str]) -> _View:
        """Publish `part` of a publish too large for one push, ahead of the ref's commit.

        Its commit moves the branch but no ref, as another device's objects do; readers see
        objects no generation names yet (a prune's to free if this device never ends).
        """
        entries = dict(part)
        if view.commit is None:
            entries[README_PATH] = self.mirror.hash_blob(README)
        message = (f"roam: {len(part)} new objects, part of a publish over one push's "
                   f"{self.settings.max_push_mb} MiB\n\nnonce {secrets.token_hex(8)}\n")
        commit = self.mirror.commit(view.commit, sorted(entries.items()), message)
        self._push(commit, view.commit, self._bytes_of(part))
        files = dict(view.files)
        files.update(entries)
        self._published(commit, files)
        return self._view

    @staticmethod
    def _ref_moved(view: _View, path: str, expected: str | None) -> bool:
        """Whether the ref at `path` no longer holds the blob `expected` in `view`.

        A ref's version is its own file's blob id, not the tip's commit: other refs, other
        devices' objects and deletions move the branch without moving the ref (the argument
        is in docs/decisions.md, "Deleting on git").
        """
        return view.files.get(path) != expected

    def _published(self, commit: str, files: dict[str, str]) -> None:
        """This instance's own commit is the branch's tip now."""
        self.mirror.set_tracking(commit)
        self._set_view(commit, files)
        self._refreshed_at = time.monotonic()
        try:
            self.mirror.maintain()
        except BackendError as failure:  # published already: tidying up can wait
            log.info("roam: git mirror maintenance skipped: %s", failure)

    def delete(self, keys: Iterable[str]) -> None:
        """Publish a commit whose tree is the tip's minus `keys`, with no parent.

        Compare-and-swap like every publish: when another device's commit lands first, the
        deletion is made again on top of its tree, so nothing it added is dropped. Without a
        parent the deleted objects are unreachable from the branch, so the host frees them
        at its next gc and a fresh clone never downloads them.
        """
        wanted = {validate_key(key) for key in keys}
        with self._state:
            for key in wanted & self._staged.keys():
                del self._staged[key]
                self._staged_sizes.pop(key, None)
            self._staged_dirs = _parents_of(self._staged)
        if not wanted:
            return
        with self._publish:
            view = self._refresh()
            for _attempt in range(PUBLISH_ATTEMPTS):
                gone = sorted(wanted & view.files.keys())
                if not gone or view.commit is None:
                    return
                message = (f"roam: deleted {len(gone)} objects (this commit replaces the "
                           f"branch's history so they can be freed)\n\n"
                           f"nonce {secrets.token_hex(8)}\n")
                commit = self.mirror.commit(view.commit, (), message, removed=gone,
                                            parentless=True)
                try:
                    self._push(commit, view.commit)
                except RefConflict:
                    view = self._refresh()
                    continue
                except TransientBackendError:
                    raise
                except BackendError as refused:  # a protected branch, a hook
                    raise BackendError(f"{refused} (deleting replaces the branch's history: "
                                       "the branch must accept roam's force-push)") from None
                self._published(commit, {k: s for k, s in view.files.items()
                                         if k not in wanted})
                return
        raise TransientBackendError("the git branch kept moving while objects were deleted; "
                                    "run the command again")

    def _push(self, commit: str, lease: str | None, size: int = 0) -> None:
        """Push under the lease; RefConflict when the remote moved, staged objects kept.

        `size`: the bytes of the new objects it carries (their time on a slow link).
        """
        try:
            with self.mirror.locked(CONNECT_BUDGET):
                outcome = self.mirror.push(commit, lease, size)
        except DeadlineExceeded:
            raise
        except TransientBackendError:
            # The connection may have failed after the remote took the push.
            if self._remote_tip_or_none() == commit:
                return
            raise
        if not outcome.accepted:
            self._rejected(commit, lease, outcome)

    def _remote_tip_or_none(self) -> str | None:
        try:
            return self.mirror.remote_tip()
        except BackendError:
            return None

    def _rejected(self, commit: str, lease: str | None, outcome: PushOutcome) -> None:
        if "stale info" in outcome.summary:
            raise RefConflict(f"ref moved on the remote while publishing ({outcome.summary})")
        # A lease that passed the client's check can still lose on the server's atomic
        # update; only the remote's tip tells a lost race from a refusal (hooks, rights).
        tip = self.mirror.remote_tip()
        if tip == commit:
            return
        if tip != lease:
            raise RefConflict(f"ref moved on the remote while publishing ({outcome.summary})")
        detail = self._redact(outcome.summary or one_line(outcome.stderr))
        if TOO_LARGE_PATTERNS.search(outcome.stderr):
            raise BackendError(f"git push rejected by {self.settings.public_remote}: the host "
                               f"refused a push of up to {self.settings.max_push_mb} MiB as "
                               f"too large ({detail}); {TOO_LARGE_HINT}")
        raise BackendError(f"git push rejected by {self.settings.public_remote}: {detail}")

    # -- the remote ---------------------------------------------------------------------------

    def identity(self) -> str:
        return f"{self.settings.public_remote}#{self.settings.branch}"

    def remote_tip(self) -> str | None:
        """The branch's commit on the remote right now (None: no branch); one round trip."""
        self._prepare()
        return self.mirror.remote_tip()

    def ping(self) -> None:
        """One look at the remote (capped, so a blackhole fails fast); the next look reuses it.

        A joining device pings and then reads HEAD at once: that read fetches the tip this
        look saw instead of listing the remote a second time.
        """
        tip = self.remote_tip()
        self._looked = (tip, _deadline.current(), time.monotonic())

    def create_remote(self) -> None:
        with self._publish:
            view = self._refresh()
            if view.commit is not None:
                return
            entries = [(README_PATH, self.mirror.hash_blob(README))]
            commit = self.mirror.commit(None, entries, "roam: store created\n")
            try:
                self._push(commit, None)
            except RefConflict:
                pass  # another device created it first: the branch exists, which is the goal
            self._refresh()

    def doctor(self) -> DoctorChecks:
        from roam_backend_git.doctor import checks

        return checks(self)

    def close(self) -> None:
        try:
            # staged objects stay readable for a retry, as loose objects did
            self.mirror.staging.finish()
        except BackendError as failure:
            log.info("roam: git mirror staging not finished: %s", failure)
        self.mirror.packs.close()
        with self._state:
            self._cache.clear()
            self._cache_bytes = 0
