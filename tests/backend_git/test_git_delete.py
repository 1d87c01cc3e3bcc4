"""Issue 23: deleting on the git backend (prune, key rotation) against a real bare remote.

A deletion is a parentless commit whose tree is the tip's minus the deleted keys, pushed
under the same lease as every publish: the deleted objects are unreachable afterwards, so
`git gc --prune=now` frees them and a fresh clone never holds them; a device's push that
lands first is kept; and a ref's version is its own, so a deletion or another ref moving the
branch is no conflict for a HEAD swap.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from roam_backend_git.backend import REF_DIR, GitBackend
from roam_core.errors import BackendError, ObjectNotFound, RefConflict
from support.git_remotes import bare_repo, file_url

Opener = Callable[..., GitBackend]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True,
                          capture_output=True, text=True, timeout=60).stdout


def _has_object(repo: Path, sha: str) -> bool:
    return subprocess.run(["git", f"--git-dir={repo}", "cat-file", "-e", sha],
                          capture_output=True, timeout=60).returncode == 0


def _published(url: str, open_backend: Opener, *packs: str
               ) -> tuple[GitBackend, GitBackend, str]:
    """Two devices on `url`: the first stores `packs/<name>` (its name as bytes) for each of
    `packs` and publishes HEAD `gen-1`, which the second reads. Returns both and its version.
    """
    writer, reader = open_backend(url), open_backend(url)
    for name in packs:
        writer.put_new(f"packs/{name}", name.encode())
    version = writer.swap_ref("HEAD", b"gen-1", None)
    assert reader.read_ref("HEAD") == (b"gen-1", version)
    return writer, reader, version


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return bare_repo(tmp_path / "remote")


def test_a_deletion_drops_history_so_gc_and_a_fresh_clone_free_the_objects(
        repo: Path, tmp_path: Path, open_backend: Opener) -> None:
    backend = open_backend(file_url(repo))
    for name in ("dead", "live"):
        backend.put_new(f"packs/{name}", f"{name} pack bytes".encode() * 100)
    version = backend.swap_ref("HEAD", b"gen-1", None)
    backend.put_new("packs/later", b"later")
    backend.swap_ref("HEAD", b"gen-2", version)
    dead = _git(repo, "rev-parse", "refs/heads/roam:packs/dead").strip()

    backend.delete(["packs/dead", "packs/never-there"])

    tip = _git(repo, "rev-parse", "refs/heads/roam").strip()
    assert _git(repo, "rev-list", "--count", tip).strip() == "1"  # no parent: no history
    files = set(_git(repo, "ls-tree", "-r", "--name-only", tip).split())
    assert {"packs/live", "packs/later", f"{REF_DIR}HEAD"} <= files
    assert "packs/dead" not in files
    clone = tmp_path / "clone.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", "--no-local", "--branch", "roam",
                    file_url(repo), str(clone)], check=True, capture_output=True, timeout=60)
    assert not _has_object(clone, dead)
    assert _has_object(repo, dead)  # still on the host until its own gc
    _git(repo, "gc", "--quiet", "--prune=now")
    assert not _has_object(repo, dead)
    reader = open_backend(file_url(repo))
    assert reader.read_ref("HEAD") == (b"gen-2", backend.read_ref("HEAD")[1])  # type: ignore[index]
    assert reader.get("packs/live") == b"live pack bytes" * 100
    with pytest.raises(ObjectNotFound):
        reader.get("packs/dead")


def test_a_push_that_lands_during_a_deletion_keeps_its_objects(repo: Path,
                                                                 open_backend: Opener) -> None:
    url = file_url(repo)
    pruner, pusher, base = _published(url, open_backend, "old", "kept")
    real_push = pruner.mirror.push
    raced: list[str] = []

    def push_after_someone_else(commit: str, lease: str | None, size: int = 0):
        if not raced:  # another device publishes between the pruner's look and its push
            raced.append(commit)
            pusher.put_new("packs/new", b"new")
            pusher.swap_ref("HEAD", b"gen-2", base)
        return real_push(commit, lease, size)

    pruner.mirror.push = push_after_someone_else  # type: ignore[method-assign]
    pruner.delete(["packs/old"])
    pruner.mirror.push = real_push  # type: ignore[method-assign]

    assert raced, "the race did not happen"
    reader = open_backend(url)
    assert sorted(reader.list("packs/")) == ["packs/kept", "packs/new"]
    assert reader.get("packs/new") == b"new"
    assert reader.read_ref("HEAD")[0] == b"gen-2"  # type: ignore[index]


def test_a_ref_keeps_its_version_while_the_branch_moves_around_it(
        repo: Path, open_backend: Opener) -> None:
    url = file_url(repo)
    pusher, pruner, head = _published(url, open_backend, "a", "b")
    lease = pruner.swap_ref("LEASE", b"lease-1", None)
    pruner.delete(["packs/a"])
    pruner.swap_ref("LEASE", b"lease-2", lease)
    # the branch moved three times, HEAD did not: the push's swap from `head` goes through
    pusher.put_new("packs/c", b"c")
    moved = pusher.swap_ref("HEAD", b"gen-2", head)
    reader = open_backend(url)
    assert reader.read_ref("HEAD") == (b"gen-2", moved)
    assert reader.read_ref("LEASE")[0] == b"lease-2"  # type: ignore[index]
    assert sorted(reader.list("packs/")) == ["packs/b", "packs/c"]
    # a HEAD that did move is still a conflict, whatever the branch did since
    with pytest.raises(RefConflict):
        pruner.swap_ref("HEAD", b"stale", head)
    assert reader.read_ref("HEAD")[0] == b"gen-2"  # type: ignore[index]


def test_deleting_a_staged_object_unstages_it(repo: Path, open_backend: Opener) -> None:
    backend = open_backend(file_url(repo))
    version = backend.swap_ref("HEAD", b"gen-1", None)
    backend.put_new("marks/m1", b"staged, never published")
    backend.delete(["marks/m1"])
    assert not backend.exists("marks/m1")
    backend.swap_ref("HEAD", b"gen-2", version)
    assert list(open_backend(file_url(repo)).list("marks/")) == []


def test_a_branch_that_refuses_force_pushes_says_so_and_keeps_everything(
        repo: Path, open_backend: Opener) -> None:
    backend = open_backend(file_url(repo))
    backend.put_new("packs/p", b"p")
    version = backend.swap_ref("HEAD", b"gen-1", None)
    tip = _git(repo, "rev-parse", "refs/heads/roam")
    _git(repo, "config", "receive.denyNonFastForwards", "true")
    with pytest.raises(BackendError) as caught:
        backend.delete(["packs/p"])
    assert not isinstance(caught.value, RefConflict)
    assert "force-push" in str(caught.value) and "\n" not in str(caught.value)
    assert _git(repo, "rev-parse", "refs/heads/roam") == tip
    assert open_backend(file_url(repo)).get("packs/p") == b"p"
    assert backend.read_ref("HEAD") == (b"gen-1", version)
