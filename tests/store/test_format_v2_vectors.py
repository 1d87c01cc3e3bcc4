"""docs/format.md's version 2 vectors, read from the document, and version 2 on a real store.

Version 2 packs trees into tree packs located by their indexes; HEAD carries the version.
A version 1 store keeps working, an older reader stops at a version 2 HEAD, and this reader
names a version it does not know.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from roam_core import crypto
from roam_core.errors import IntegrityError, UserError
from roam_core.store import codec
from roam_core.store.manifest import FileEntry
from roam_core.store.objects import HEAD_REF, Head, canonical, pack_key
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend

DOC = (Path(__file__).resolve().parents[2] / "docs" / "format.md").read_text()
KEYS = crypto.Keys.derive(bytes(range(32)))


def vector(label: str) -> str:
    row = next(line for line in DOC.splitlines() if line.startswith(f"| {label} |"))
    return re.findall(r"`([^`]+)`", row)[-1]


def test_head_v2_vector_seals_opens_and_stops_a_version_1_reader() -> None:
    head = Head(1, "ab" * 32, "cd" * 16, "desktop", "2026-11-30T00:00:00+00:00", format=2)
    plain = canonical(head.as_json())
    assert plain.endswith(b',"v":2}')
    sealed = crypto.seal(KEYS.head, crypto.KIND_HEAD, HEAD_REF, plain, nonce=bytes(range(12)),
                         version=2)
    assert sealed.hex() == vector("HEAD v2 sealed with nonce `00 01 … 0b`")
    assert crypto.open_sealed(KEYS.head, crypto.KIND_HEAD, HEAD_REF, sealed, "HEAD",
                              (1, 2)) == plain
    # what a version 1 reader does (it accepts the header byte 1 only): a clear stop
    with pytest.raises(IntegrityError, match="HEAD has unknown format version 2"):
        crypto.open_sealed(KEYS.head, crypto.KIND_HEAD, HEAD_REF, sealed, "HEAD")


def test_tree_pack_and_index_vectors() -> None:
    plain = canonical({"v": 1, "entries": {}})
    assert plain.decode() == vector("empty tree plaintext")
    tree_id = KEYS.name(crypto.KIND_TREE, hashlib.sha256(plain).digest())
    assert tree_id == vector("its tree id")
    sealed = crypto.seal(KEYS.encryption, crypto.KIND_TREE, tree_id, codec.encode(plain),
                         nonce=bytes(12))
    assert sealed.hex() == vector("its payload sealed with nonce `00`×12")
    pack = pack_key(hashlib.sha256(sealed).hexdigest())
    assert pack == vector("tree pack of that one tree")
    index = canonical({"v": 1, "pack": pack, "blobs": [], "trees": [[tree_id, 0, len(sealed)]]})
    assert index.decode() == vector("its index plaintext")
    assert KEYS.name(crypto.KIND_INDEX, hashlib.sha256(index).digest()) \
        == vector("its index id")


def _entry(path: str, text: str) -> FileEntry:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return FileEntry(path, len(text), 0o644, digest, "shared", ())


def _manifest(folders: int, changed: str = "") -> dict[str, FileEntry]:
    found = {f"skills/s{n}/SKILL.md": _entry(f"skills/s{n}/SKILL.md", f"skill {n}")
             for n in range(folders)}
    found["SOUL.md"] = _entry("SOUL.md", f"soul {changed}")
    return found


def _head(repo: Repository, generation: int, root: str, expected: str | None) -> str:
    return repo.write_head(Head(generation, root, "cd" * 16, "desk", "t"), expected)


def test_a_new_store_packs_trees_and_reads_them_back_in_few_requests() -> None:
    backend = MemoryBackend()
    repo = Repository(backend, KEYS)
    assert repo.read_head() is None and repo.format == 2  # a store founded now is v2
    manifest = _manifest(30)
    root = repo.write_manifest(manifest)
    _head(repo, 1, root, None)
    assert not [key for key in backend.store.objects if key.startswith("trees/")]
    tree_packs = {ref[1] for copies in repo.tree_places().values() for ref in copies}
    assert len(tree_packs) == 1 and len(repo.tree_places()) == 32  # root, skills/, 30 skills
    assert backend.read_ref(HEAD_REF)[0][2] == 2  # type: ignore[index]  # the header byte

    reader = Repository(backend, KEYS)
    assert reader.read_head().format == 2  # type: ignore[union-attr]
    gets: list[str] = []
    original = backend.get

    def spy(key: str, offset: int = 0, length: int | None = None) -> bytes:
        gets.append(key)
        return original(key, offset, length)

    backend.get = spy  # type: ignore[method-assign]
    assert reader.load_manifest(root) == manifest
    # one index, then one ranged read per level (root, skills/, the skills): not 32 GETs
    assert len([key for key in gets if key.startswith("packs/")]) <= 3, gets
    assert not [key for key in gets if key.startswith("trees/")]


def test_a_tampered_packed_tree_is_an_integrity_error() -> None:
    backend = MemoryBackend()
    repo = Repository(backend, KEYS)
    repo.read_head()
    root = repo.write_manifest(_manifest(3))
    (pack,) = {ref[1] for copies in repo.tree_places().values() for ref in copies}
    data = bytearray(backend.store.objects[pack])
    data[-5] ^= 1  # inside the last tree written: the root
    backend.store.objects[pack] = bytes(data)
    with pytest.raises(IntegrityError, match="tree"):
        Repository(backend, KEYS).load_manifest(root)


def test_a_version_1_store_keeps_working_and_reads_mixed_after_upgrade() -> None:
    backend = MemoryBackend()
    old = Repository(backend, KEYS)
    old.format = 1  # as a version 1 roam writes: every tree an object of its own
    first = _manifest(5)
    root = old.write_manifest(first)
    version = _head(old, 1, root, None)
    loose = {key for key in backend.store.objects if key.startswith("trees/")}
    assert len(loose) == 7

    repo = Repository(backend, KEYS)
    head = repo.read_head()
    assert head is not None and head.format == 1 and repo.format == 1
    assert repo.load_manifest(root) == first
    second = _manifest(5, "v2")
    root2 = repo.write_manifest(second, first, repo.folders[root])
    version = _head(repo, 2, root2, version)
    # a push to a version 1 store writes version 1 trees: older devices can still read it
    assert {key for key in backend.store.objects if key.startswith("trees/")} > loose
    assert not repo.tree_places()

    repo.format = 2  # what `roam upgrade` does
    version = _head(repo, 2, root2, version)
    upgraded = Repository(backend, KEYS)
    assert upgraded.read_head().format == 2  # type: ignore[union-attr]
    third = _manifest(5, "v3")
    root3 = upgraded.write_manifest(third, second, None)
    assert upgraded.tree_places()  # the new root is packed, the unchanged skills stay loose
    assert Repository(backend, KEYS).load_manifest(root3) == third
    reader = Repository(backend, KEYS)
    reader.read_head()
    assert reader.load_manifest(root) == first


def test_a_head_of_a_newer_version_is_named_and_a_mismatch_refused() -> None:
    backend = MemoryBackend()
    plain = canonical({**Head(1, "ab" * 32, "cd" * 16, "d", "t").as_json(), "v": 3})
    backend.swap_ref(HEAD_REF, crypto.seal(KEYS.head, crypto.KIND_HEAD, HEAD_REF, plain,
                                           version=3), None)
    with pytest.raises(UserError, match="format version 3, newer than this roam reads"):
        Repository(backend, KEYS).read_head()
    # header says 2, plaintext says 1: refused
    other = MemoryBackend()
    plain = canonical(Head(1, "ab" * 32, "cd" * 16, "d", "t").as_json())
    other.swap_ref(HEAD_REF, crypto.seal(KEYS.head, crypto.KIND_HEAD, HEAD_REF, plain,
                                         version=2), None)
    with pytest.raises(IntegrityError, match="HEAD is malformed"):
        Repository(other, KEYS).read_head()
    assert json.loads(plain)["v"] == 1
