"""A push's objects go into the mirror as one pack, written by roam: no git process per object.

On the benchmark's `large` home a first push wrote 66 objects (371 MiB) with one
`git hash-object -w` each: a process start, git's collision-detecting SHA-1 and a loose file
per object (14 s of a 41 s push at 100 ms RTT), which the push's `pack-objects` then read back
and packed again. Staged objects now stream into one pack file of the mirror, hashed with
hashlib; the commit finishes it (count, checksum, a version-2 index), so git sees a pack like
the ones it writes and `pack-objects` copies its entries as they are.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from roam_backend_git.backend import GitBackend
from roam_backend_git.runner import GitRunner
from support.git_remotes import bare_repo, file_url

Opener = Callable[..., GitBackend]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True, capture_output=True,
                          timeout=120).stdout.decode()


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every git process any backend runs, by its action."""
    calls: Counter[str] = Counter()
    real_run = GitRunner.run

    def counted(self: GitRunner, args: list[str], **kwargs: object) -> object:
        calls[str(kwargs["action"])] += 1
        return real_run(self, args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(GitRunner, "run", counted)
    yield calls


def _objects(count: int) -> dict[str, bytes]:
    # sizes around the pack header's 4-bit and 7-bit size boundaries, and an empty object
    sizes = [0, 1, 15, 16, 127, 128, 2047, 2048, 65_535, 65_536, 300_000]
    return {f"packs/{number:02x}/p{number}": bytes([number % 256]) * sizes[number % len(sizes)]
            + number.to_bytes(4, "big") for number in range(count)}


def test_staging_many_objects_runs_a_fixed_number_of_git_processes(
        tmp_path: Path, open_backend: Opener, git_calls: Counter[str]) -> None:
    backend = open_backend(file_url(bare_repo(tmp_path / "remote")))
    assert backend.read_ref("HEAD") is None  # the push's first look
    git_calls.clear()
    objects = _objects(40)
    with ThreadPoolExecutor(4) as pool:  # the push's packing workers stage in parallel
        list(pool.map(lambda item: backend.put_new(*item), objects.items()))
    assert sum(git_calls.values()) <= 2, f"staging 40 objects ran git {dict(git_calls)}"
    for key, data in objects.items():  # read back before the commit
        assert backend.get(key) == data
    backend.swap_ref("HEAD", b"gen-1", None)
    # a look, the commit (read-tree, update-index, write-tree, commit-tree), the push, its
    # tracking ref and the mirror's upkeep: the same for 4 objects or 4,000
    assert sum(git_calls.values()) <= 12, dict(git_calls)
    assert "hash-object" not in git_calls


def test_staged_objects_are_a_valid_pack_that_git_reads_and_pushes(
        tmp_path: Path, open_backend: Opener) -> None:
    remote = bare_repo(tmp_path / "remote")
    url = file_url(remote)
    writer = open_backend(url)
    objects = _objects(25)
    for key, data in objects.items():
        writer.put_new(key, data)
    assert writer.get("packs/03/p3", 2, 5) == objects["packs/03/p3"][2:7]
    writer.swap_ref("HEAD", b"gen-1", None)
    mirror = writer.mirror.path
    packs = sorted((mirror / "objects" / "pack").glob("pack-*.pack"))
    assert len(packs) == 1, packs
    assert not list((mirror / "objects" / "pack").glob("tmp_*")), "a staging file was left"
    _git(mirror, "verify-pack", str(packs[0].with_suffix(".idx")))
    _git(mirror, "fsck", "--full", "--strict", "--no-dangling")
    _git(remote, "fsck", "--full", "--strict", "--no-dangling")
    tip = _git(remote, "rev-parse", "refs/heads/roam").strip()
    for key, data in objects.items():  # git's own reading of what roam hashed and packed
        blob = subprocess.run(["git", f"--git-dir={remote}", "cat-file", "blob", f"{tip}:{key}"],
                              check=True, capture_output=True, timeout=60).stdout
        assert blob == data, key
    # another device fetches them and reads them back the usual way
    reader = open_backend(url)
    assert {key: reader.get(key) for key in objects} == objects

    # a second generation: a second pack, both readable, the first untouched
    writer.put_new("packs/ff/second", b"second generation")
    writer.swap_ref("HEAD", b"gen-2", writer.read_ref("HEAD")[1])  # type: ignore[index]
    assert len(list((mirror / "objects" / "pack").glob("pack-*.pack"))) == 2
    _git(mirror, "fsck", "--full", "--strict", "--no-dangling")
    assert open_backend(url).get("packs/ff/second") == b"second generation"


def test_a_pack_past_two_gib_of_offsets_is_indexed_with_large_offsets(tmp_path: Path) -> None:
    """Offsets of 2**31 and more go to the index's 64-bit table (checked by git)."""
    from roam_backend_git.staging import index_v2

    names = [bytes([n]) * 20 for n in (7, 3, 200)]
    offsets = [12, 2**31 + 5, 2**33]
    index = index_v2(list(zip(names, [1, 2, 3], offsets, strict=True)), b"\x01" * 20)
    count = int.from_bytes(index[8 + 255 * 4:8 + 256 * 4], "big")
    assert count == 3
    table = index[8 + 1024 + 3 * 20 + 3 * 4:]
    small = [int.from_bytes(table[i * 4:i * 4 + 4], "big") for i in range(3)]
    # sorted by name: 3, 7, 200 -> offsets 2**31 + 5, 12, 2**33
    assert small[1] == 12
    assert small[0] == 0x80000000 and small[2] == 0x80000001
    large = table[12:28]
    assert [int.from_bytes(large[i:i + 8], "big") for i in (0, 8)] == [2**31 + 5, 2**33]


def _published(tmp_path: Path, open_backend: Opener,
               count: int) -> tuple[GitBackend, GitBackend, dict[str, bytes]]:
    """`count` objects written and published by one device, then fetched by a second."""
    url = file_url(bare_repo(tmp_path / "remote"))
    writer = open_backend(url)
    objects = _objects(count)
    for key, data in objects.items():
        writer.put_new(key, data)
    writer.swap_ref("HEAD", b"gen-1", None)
    reader = open_backend(url)
    assert reader.read_ref("HEAD") is not None  # the fetch
    return writer, reader, objects


def test_reads_come_straight_from_the_packs_without_a_git_process(
        tmp_path: Path, open_backend: Opener, git_calls: Counter[str]) -> None:
    """A pull reads every pack of the store: no `git cat-file` (a process and a pipe) per object.

    On the large home a pull ran 71 `cat-file` processes piping 371 MiB out of git; the
    objects sit whole in the mirror's packs (level-0 zlib, no deltas), so roam reads them there.
    """
    writer, reader, objects = _published(tmp_path, open_backend, 110)
    git_calls.clear()
    assert {key: reader.get(key) for key in objects} == objects
    assert reader.get("packs/0a/p10", 100, 50) == objects["packs/0a/p10"][100:150]
    assert "cat-file" not in git_calls, dict(git_calls)
    assert {key: writer.get(key) for key in objects} == objects  # the pack roam wrote
    assert "cat-file" not in git_calls, dict(git_calls)


def test_a_small_fetch_is_kept_as_a_pack_and_read_without_git(
        tmp_path: Path, open_backend: Opener, git_calls: Counter[str]) -> None:
    """An incremental pull fetches a few objects: git unpacked fewer than 100 into loose files,
    and each was then read through its own `git cat-file`."""
    _, reader, objects = _published(tmp_path, open_backend, 11)
    git_calls.clear()
    assert {key: reader.get(key) for key in objects} == objects
    assert {key: reader.get(key, 3, 70_000) for key in objects} == {
        key: data[3:70_003] for key, data in objects.items()}
    assert "cat-file" not in git_calls, dict(git_calls)


@pytest.mark.parametrize("repack", [
    # deltas (near-identical compressible objects) and deflated entries: what a host's own
    # repack or an older roam's mirror holds; read through git instead
    ["-c", "pack.window=10", "-c", "pack.compression=9", "repack", "-a", "-d", "-f", "-q"],
    # loose objects (a small fetch is unpacked into them)
    ["unpack-objects", "-q"],
])
def test_objects_git_stored_otherwise_are_still_read(
        tmp_path: Path, open_backend: Opener, repack: list[str]) -> None:
    url = file_url(bare_repo(tmp_path / "remote"))
    writer = open_backend(url)
    base = b"roam " * 20_000
    objects = {f"packs/0{n}/p": base[:n * 1000] + b"changed %d" % n + base[n * 1000:]
               for n in range(6)}
    for key, data in objects.items():
        writer.put_new(key, data)
    writer.swap_ref("HEAD", b"gen-1", None)
    reader = open_backend(url)
    assert reader.read_ref("HEAD") is not None
    mirror = reader.mirror.path
    if repack[0] == "unpack-objects":
        packs = list((mirror / "objects" / "pack").glob("pack-*.pack"))
        for pack in packs:
            moved = tmp_path / pack.name
            pack.rename(moved)
            pack.with_suffix(".idx").unlink()
            subprocess.run(["git", f"--git-dir={mirror}", *repack], input=moved.read_bytes(),
                           check=True, capture_output=True, timeout=60)
    else:
        _git(mirror, *repack)
        deltas = [line for index in (mirror / "objects" / "pack").glob("pack-*.idx")
                  for line in _git(mirror, "verify-pack", "-v", str(index)).splitlines()
                  if len(line.split()) == 7]
        assert deltas, "the repack made no deltas: the test would not test them"
    assert {key: reader.get(key) for key in objects} == objects
    # ranges of objects stored otherwise: read whole, then cut
    assert {key: reader.get(key, 7, 1000) for key in objects} == {
        key: data[7:1007] for key, data in objects.items()}


def test_packs_a_repack_removed_are_let_go_at_upkeep(tmp_path: Path,
                                                     open_backend: Opener) -> None:
    """The reader maps packs; once git's gc replaced them, their disk space must come back.

    A mapped file stays on disk after it is deleted until it is unmapped: a long-lived
    backend would hold every pack a `gc --auto` repacked away.
    """
    maps = Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("needs /proc")
    backend = open_backend(file_url(bare_repo(tmp_path / "remote")))
    version = None
    for number in range(3):  # three commits, three packs
        backend.put_new(f"packs/0{number}/p", bytes([number]) * 5000)
        version = backend.swap_ref("HEAD", b"gen %d" % number, version)
    assert backend.get("packs/00/p", 1, 2) == b"\0\0"
    mirror = backend.mirror.path
    assert str(mirror) in maps.read_text()
    _git(mirror, "repack", "-a", "-d", "-q")  # what gc --auto does with too many packs
    backend.mirror.maintain()
    held = [line for line in maps.read_text().splitlines()
            if str(mirror) in line and "(deleted)" in line]
    assert not held, held
    assert {backend.get(f"packs/0{n}/p") for n in range(3)} == {bytes([n]) * 5000
                                                                 for n in range(3)}
