"""What the git backend promises beyond the shared contract: layout, leases, staging, setup."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from roam_backend_git.backend import README_PATH, REF_DIR, GitBackend
from roam_core.errors import BackendError, ObjectExists, RefConflict
from roam_core.storage import GuardedBackend
from support.git_remotes import bare_repo, file_url

Opener = Callable[..., GitBackend]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True, capture_output=True,
                          text=True, timeout=30).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return bare_repo(tmp_path / "remote")


def test_objects_are_files_at_their_key_and_never_rewritten(repo: Path,
                                                           open_backend: Opener) -> None:
    backend = open_backend(file_url(repo))
    backend.put_new("data/ab/abcdef", b"first object")
    version = backend.swap_ref("HEAD", b"gen-1", None)
    first = _git(repo, "rev-parse", "refs/heads/roam").strip()
    backend.put_new("packs/p1", b"a pack")
    backend.swap_ref("HEAD", b"gen-2", version)
    second = _git(repo, "rev-parse", "refs/heads/roam").strip()
    files = set(_git(repo, "ls-tree", "-r", "--name-only", second).split())
    assert files == {"data/ab/abcdef", "packs/p1", f"{REF_DIR}HEAD", README_PATH}
    assert _git(repo, "show", f"{second}:data/ab/abcdef") == "first object"
    assert _git(repo, "show", f"{second}:{REF_DIR}HEAD") == "gen-2"
    assert _git(repo, "rev-parse", f"{second}^").strip() == first
    changes = _git(repo, "diff-tree", "-r", "--name-status", first, second).split("\n")
    assert sorted(filter(None, changes)) == ["A\tpacks/p1", f"M\t{REF_DIR}HEAD"]
    assert "roam" in _git(repo, "log", "-1", "--format=%an <%ae> / %cn", second)


def test_stale_lease_at_push_time_conflicts_and_keeps_staged_objects(
        repo: Path, open_backend: Opener) -> None:
    url = file_url(repo)
    mine, theirs = open_backend(url), open_backend(url)
    base = mine.swap_ref("HEAD", b"base", None)
    assert theirs.read_ref("HEAD") == (b"base", base)
    mine.put_new("packs/mine", b"my pack")
    real_push = mine.mirror.push

    def push_after_someone_else(commit: str, lease: str | None, size: int = 0):
        # Another device publishes between our fetch and our push: the lease is now stale.
        theirs.swap_ref("HEAD", b"theirs", base)
        return real_push(commit, lease, size)

    mine.mirror.push = push_after_someone_else  # type: ignore[method-assign]
    with pytest.raises(RefConflict):
        mine.swap_ref("HEAD", b"mine", base)
    mine.mirror.push = real_push  # type: ignore[method-assign]
    assert open_backend(url).read_ref("HEAD")[0] == b"theirs"  # type: ignore[index]
    assert "packs/mine" not in set(open_backend(url).list())
    assert mine.get("packs/mine") == b"my pack"   # still staged, still readable
    current = mine.read_ref("HEAD")
    assert current is not None and current[0] == b"theirs"
    mine.swap_ref("HEAD", b"mine, after pulling", current[1])
    assert open_backend(url).get("packs/mine") == b"my pack"


def test_a_push_refused_for_another_reason_is_not_a_conflict(repo: Path,
                                                           open_backend: Opener) -> None:
    backend = open_backend(file_url(repo))
    version = backend.swap_ref("HEAD", b"gen-1", None)
    hook = repo / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'quota exceeded' >&2\nexit 1\n")
    hook.chmod(0o755)
    backend.put_new("packs/p", b"x")
    with pytest.raises(BackendError) as caught:
        backend.swap_ref("HEAD", b"gen-2", version)
    assert not isinstance(caught.value, RefConflict)
    assert "rejected" in str(caught.value)
    hook.unlink()
    assert backend.swap_ref("HEAD", b"gen-2", version) != version
    assert open_backend(file_url(repo)).get("packs/p") == b"x"


def test_create_remote_is_idempotent_and_leaves_other_branches(repo: Path, tmp_path: Path,
                                                               open_backend: Opener) -> None:
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(repo), str(work)], check=True, timeout=30)
    (work / "notes.txt").write_text("mine")
    env = {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@x", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for args in (["add", "."], ["commit", "-qm", "n"], ["push", "-q", "origin", "HEAD:main"]):
        subprocess.run(["git", "-C", str(work), *args], check=True, env=env, timeout=30)
    main = _git(repo, "rev-parse", "refs/heads/main")
    backend = open_backend(file_url(repo))
    backend.create_remote()
    created = _git(repo, "rev-parse", "refs/heads/roam")
    backend.create_remote()
    open_backend(file_url(repo)).create_remote()
    assert _git(repo, "rev-parse", "refs/heads/roam") == created
    assert _git(repo, "rev-parse", "refs/heads/main") == main
    assert backend.read_ref("HEAD") is None
    assert list(backend.list()) == []
    backend.swap_ref("HEAD", b"gen-1", None)
    tip = _git(repo, "rev-parse", "refs/heads/roam")
    assert _git(repo, "rev-parse", f"{tip.strip()}^") == created
    open_backend(file_url(repo)).create_remote()
    assert _git(repo, "rev-parse", "refs/heads/roam") == tip


def test_objects_over_the_size_limit_are_refused(repo: Path, open_backend: Opener) -> None:
    backend = open_backend(file_url(repo), git_max_object_mb=1)
    assert backend.capabilities.max_object_size == 1024 * 1024
    assert backend.capabilities.batched_publish and not backend.capabilities.remote
    backend.put_new("packs/fits", b"x" * 1024 * 1024)
    with pytest.raises(BackendError):
        backend.put_new("packs/big", b"x" * (1024 * 1024 + 1))
    with pytest.raises(BackendError):
        GuardedBackend(backend).put_new("packs/big", b"x" * (1024 * 1024 + 1))


#: What the test's host takes in one push (`receive.maxInputSize`), as GitHub takes 2 GiB.
HOST_PUSH_LIMIT = 1536 * 1024


def _limited_repo(repo: Path) -> list[bytes]:
    """`repo` refusing a push over HOST_PUSH_LIMIT; blobs that together exceed it twice."""
    _git(repo, "config", "receive.maxInputSize", str(HOST_PUSH_LIMIT))
    return [os.urandom(700 * 1024) for _ in range(5)]  # 3.4 MiB that will not compress


def test_a_publish_over_the_host_s_push_limit_goes_in_parts(repo: Path,
                                                            open_backend: Opener) -> None:
    blobs = _limited_repo(repo)
    backend = open_backend(file_url(repo), git_max_object_mb=1, git_max_push_mb=1)
    for number, data in enumerate(blobs):
        backend.put_new(f"packs/p{number}", data)
    version = backend.swap_ref("HEAD", b"gen-1", None)
    tip = _git(repo, "rev-parse", "refs/heads/roam").strip()
    # parts of at most 1 MiB of objects, each pushed alone: the last one moves the ref
    commits = _git(repo, "rev-list", tip).split()
    assert len(commits) >= 4, commits
    for commit in commits[1:]:
        assert f"{REF_DIR}HEAD" not in _git(repo, "ls-tree", "-r", "--name-only", commit)
    assert _git(repo, "show", f"{tip}:{REF_DIR}HEAD") == "gen-1"
    other = open_backend(file_url(repo))
    assert other.read_ref("HEAD") == (b"gen-1", version)
    assert [other.get(f"packs/p{number}") for number in range(len(blobs))] == blobs
    # the next publish builds on the parts like on any other device's commit
    backend.put_new("packs/next", b"small")
    assert other.swap_ref("HEAD", b"gen-2", version)
    with pytest.raises(RefConflict):
        backend.swap_ref("HEAD", b"gen-2 too", version)


def test_a_publish_over_the_host_s_push_limit_in_one_push_is_refused_in_one_line(
        repo: Path, open_backend: Opener) -> None:
    blobs = _limited_repo(repo)
    backend = open_backend(file_url(repo), git_max_object_mb=1)  # 1024 MiB a push
    for number, data in enumerate(blobs):
        backend.put_new(f"packs/p{number}", data)
    with pytest.raises(BackendError) as refused:
        backend.swap_ref("HEAD", b"gen-1", None)
    assert "\n" not in str(refused.value) and "git_max_push_mb" in str(refused.value)


def test_a_key_cannot_be_both_a_file_and_a_folder(repo: Path, open_backend: Opener) -> None:
    backend = open_backend(file_url(repo))
    backend.put_new("data/a", b"1")
    with pytest.raises(BackendError):
        backend.put_new("data/a/b", b"2")
    backend.put_new("data/c/d", b"3")
    with pytest.raises(BackendError):
        backend.put_new("data/c", b"4")
    version = backend.swap_ref("HEAD", b"gen", None)
    other = open_backend(file_url(repo))
    with pytest.raises(BackendError):
        other.put_new("data/a/b", b"2")
    with pytest.raises(ObjectExists):
        other.put_new("data/c/d", b"again")
    assert other.read_ref("HEAD") == (b"gen", version)


def test_same_key_published_elsewhere_first_keeps_the_published_object(
        repo: Path, open_backend: Opener) -> None:
    url = file_url(repo)
    first, second = open_backend(url), open_backend(url)
    base = first.swap_ref("HEAD", b"base", None)
    assert second.read_ref("HEAD") is not None
    first.put_new("packs/same", b"published first")
    second.put_new("packs/same", b"staged second")
    version = first.swap_ref("HEAD", b"first", base)
    assert second.read_ref("HEAD") == (b"first", version)
    assert second.get("packs/same") == b"published first"
    second.swap_ref("HEAD", b"second", version)
    assert open_backend(url).get("packs/same") == b"published first"


def test_parallel_put_new_on_one_instance_all_publish(repo: Path, open_backend: Opener) -> None:
    backend = open_backend(file_url(repo))
    keys = [f"packs/{i:03d}" for i in range(40)]
    errors: list[BaseException] = []

    def upload(chunk: list[str]) -> None:
        try:
            for key in chunk:
                backend.put_new(key, key.encode())
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=upload, args=(keys[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    backend.swap_ref("HEAD", b"gen", None)
    reader = open_backend(file_url(repo))
    assert sorted(reader.list("packs/")) == keys
    assert all(reader.get(key) == key.encode() for key in keys[::7])


def test_ranged_reads_of_one_blob_read_it_once(repo: Path, open_backend: Opener) -> None:
    backend = open_backend(file_url(repo))
    payload = bytes(range(256)) * 64
    backend.put_new("packs/p", payload)
    calls = []
    real = backend.mirror.read_blob
    backend.mirror.read_blob = lambda sha: calls.append(sha) or real(sha)  # type: ignore
    for offset in range(0, len(payload), 1024):
        assert backend.get("packs/p", offset, 100) == payload[offset:offset + 100]
    assert len(calls) == 1


def test_users_git_config_cannot_break_the_plumbing(
        make_remote: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        open_backend: Opener) -> None:
    # Over HTTP the remote runs with the server's environment, so only our side sees this
    # hostile global config (a file:// remote would run the hooks itself, rightly).
    url = make_remote("http")
    home = tmp_path / "user-home"
    hooks = home / "hooks"
    hooks.mkdir(parents=True)
    for name in ("pre-push", "pre-commit", "post-commit", "reference-transaction"):
        (hooks / name).write_text("#!/bin/sh\nexit 1\n")
        (hooks / name).chmod(0o755)
    (home / ".gitconfig").write_text(
        "[commit]\n\tgpgSign = true\n[push]\n\tgpgSign = true\n"
        f"[core]\n\thooksPath = {hooks}\n[init]\n\ttemplateDir = {home}/nowhere\n"
        "[user]\n\tuseConfigOnly = true\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    backend = open_backend(url)
    backend.create_remote()
    backend.put_new("data/a", b"1")
    version = backend.swap_ref("HEAD", b"gen-1", backend.read_ref("HEAD") and None)
    assert open_backend(url).read_ref("HEAD") == (b"gen-1", version)
    assert open_backend(url).get("data/a") == b"1"


def test_the_mirror_packs_its_loose_objects(repo: Path, open_backend: Opener,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Fetches arrive as packs and staged objects are packed already (staging.py), but
    write-tree and commit-tree write loose trees and commits, and every fetch and publish adds
    a pack: the upkeep after a publish packs them all once there are many."""
    from roam_backend_git import mirror

    monkeypatch.setattr(mirror, "GC_AUTO_PACKS", 4)
    other = open_backend(file_url(repo))  # another device, publishing small generations
    backend = open_backend(file_url(repo))
    contents = {}
    for number in range(3):
        for item in range(4):
            key = f"packs/{number:02x}/{item:062x}"
            contents[key] = f"object {number} {item}".encode()
            other.put_new(key, contents[key])
        seen = other.read_ref("HEAD")
        other.swap_ref("HEAD", f"head {number}".encode(), seen and seen[1])
        # this device fetches them (a small fetch: kept as a pack, never loose files)
        seen = backend.read_ref("HEAD")
        for key in contents:
            sha = backend._lookup(key)
            assert sha and not (backend.mirror.path / "objects" / sha[:2] / sha[2:]).exists()
        backend.put_new(f"data/{number}", b"x")
        backend.swap_ref("HEAD", f"head {number}b".encode(), seen and seen[1])
    counts = dict(line.split(": ") for line in
                  _git(backend.mirror.path, "count-objects", "-v").splitlines())
    assert int(counts["packs"]) <= 2, counts  # 3 fetches and 3 publishes made 6
    assert int(counts["count"]) <= 3, counts  # the loose trees and commits were packed
    for key, data in contents.items():
        assert backend.get(key) == data  # still readable after packing
