"""The git backend spends no CPU on compression or delta search: roam's objects are encrypted.

Encrypted bytes neither compress nor delta, so zlib and git's delta search over them are pure
cost: on the benchmark's `large` home (371 MiB of packs) git's default `pack-objects` spent
three minutes of a first push looking for deltas and deflating at level 6, and `hash-object`
another 40 s deflating loose objects. These tests write compressible, near-identical objects
(which a default git would deflate and delta) and check the mirror and the pushed pack hold
them as they are.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from roam_backend_git.backend import GitBackend
from roam_core.store.uploads import Uploads
from support.git_remotes import bare_repo, file_url

Opener = Callable[..., GitBackend]
#: Compressible and near-identical: zlib would shrink each, git's delta search pair them.
FIRST = b"roam " * 40_000
SECOND = FIRST[:100_000] + b"changed" + FIRST[100_007:]


def _git(repo: Path, *args: str, input: bytes | None = None) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True, capture_output=True,
                          input=input, timeout=60).stdout.decode()


def _sizes(repo: Path, shas: list[str]) -> dict[str, tuple[int, int]]:
    """Each object's size and its size on disk (loose or packed)."""
    out = _git(repo, "cat-file", "--batch-check=%(objectname) %(objectsize) %(objectsize:disk)",
               input="".join(f"{sha}\n" for sha in shas).encode())
    return {name: (int(size), int(disk))
            for name, size, disk in (line.split() for line in out.splitlines())}


def _blob_ids(repo: Path, commit: str, *paths: str) -> list[str]:
    return [_git(repo, "rev-parse", f"{commit}:{path}").strip() for path in paths]


def test_the_mirror_stores_objects_without_deflating_them(tmp_path: Path,
                                                          open_backend: Opener) -> None:
    backend = open_backend(file_url(bare_repo(tmp_path / "remote")))
    backend.put_new("packs/a", FIRST)
    backend.swap_ref("HEAD", b"gen-1", None)
    commit = backend.remote_tip()  # a ref's version is its own blob, not the commit
    assert commit is not None
    mirror = backend.mirror.path
    for size, disk in _sizes(mirror, _blob_ids(mirror, commit, "packs/a")).values():
        assert disk >= size, f"the mirror deflated an object: {disk} bytes on disk for {size}"


def test_the_push_sends_objects_without_deltas_or_deflating(tmp_path: Path,
                                                            open_backend: Opener) -> None:
    remote = bare_repo(tmp_path / "remote")
    # the remote keeps the pack as sent (git unpacks pushes of < 100 objects by default)
    _git(remote, "config", "receive.unpackLimit", "1")
    backend = open_backend(file_url(remote))
    backend.put_new("packs/a", FIRST)
    backend.put_new("packs/b", SECOND)
    backend.swap_ref("HEAD", b"gen-1", None)
    commit = _git(remote, "rev-parse", "refs/heads/roam").strip()
    packs = sorted((remote / "objects" / "pack").glob("pack-*.idx"))
    assert packs, "the remote kept no pack"
    pushed = set()
    for index in packs:
        for line in _git(remote, "verify-pack", "-v", str(index)).splitlines():
            fields = line.split()
            if len(fields) >= 5 and fields[1] in ("blob", "tree", "commit"):
                pushed.add(fields[0])
                assert len(fields) == 5, f"the push sent a delta: {line}"
    blobs = _blob_ids(remote, commit, "packs/a", "packs/b")
    assert set(blobs) <= pushed
    for size, disk in _sizes(remote, blobs).values():
        assert disk >= size, f"the push deflated an object: {disk} bytes in the pack for {size}"


def test_concurrent_ranged_reads_of_one_object_read_the_mirror_once(
        tmp_path: Path, open_backend: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull reads a pack's spans in several threads: they must share one `cat-file`.

    Each read of the mirror pipes the whole object (a 16 MiB pack) out of git; on the large
    home two spans of each pack read at once made 118 reads of 66 objects.
    """
    url = file_url(bare_repo(tmp_path / "remote"))
    writer = open_backend(url)
    data = bytes(range(256)) * 4096
    writer.put_new("packs/p", data)
    writer.swap_ref("HEAD", b"gen-1", None)
    reader = open_backend(url)
    assert reader.exists("packs/p")
    reads: list[str] = []
    real_read = reader.mirror.read_blob

    def slow_read(sha: str) -> bytes:
        reads.append(sha)
        time.sleep(0.3)  # the other threads ask while this read is still running
        return real_read(sha)

    monkeypatch.setattr(reader.mirror, "read_blob", slow_read)
    threads = 8
    ready = threading.Barrier(threads)
    step = len(data) // threads

    def ranged(number: int) -> bytes:
        ready.wait()
        return reader.get("packs/p", number * step, step)

    with ThreadPoolExecutor(threads) as pool:
        parts = list(pool.map(ranged, range(threads)))
    assert b"".join(parts) == data
    assert len(reads) == 1, f"{len(reads)} reads of one object for {threads} ranged reads"


def test_packs_are_sealed_and_staged_on_both_cores(tmp_path: Path, open_backend: Opener) -> None:
    """On git a push's packing jobs (seal, then `put_new` into the mirror) run two at once.

    git publishes in one transfer, but sealing a pack and `hash-object` are CPU work: run one
    at a time, a first push of the large home used one core of two.
    """
    backend = open_backend(file_url(bare_repo(tmp_path / "remote")))
    uploads = Uploads(backend)
    both = threading.Barrier(2, timeout=20)  # a lone job waits here in vain
    try:
        uploads.run(both.wait, 1)
        uploads.run(both.wait, 1)
        uploads.wait()
    finally:
        uploads.close()
