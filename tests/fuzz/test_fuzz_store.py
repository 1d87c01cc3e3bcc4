"""Fuzzing the store's decoders: random and mutated bytes, hostile but authentic plaintexts.

Two kinds of input: bytes an attacker without the key controls (they must fail
authentication), and plaintexts sealed with the right key and named correctly, as a buggy or
hostile fleet member could write them (they reach the JSON and field decoders). Either way
only `RoamError` subclasses may escape, and whatever decodes satisfies the format's rules.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roam_core import crypto
from roam_core.errors import IntegrityError, RoamError
from roam_core.storage import GuardedBackend
from roam_core.store import codec
from roam_core.store.manifest import check_path
from roam_core.store.objects import HEAD_REF, canonical, index_key, snapshot_key, tree_key
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
KEYS = crypto.Keys.derive(bytes(range(32)))
KINDS = [crypto.KIND_BLOB, crypto.KIND_TREE, crypto.KIND_SNAPSHOT, crypto.KIND_INDEX]

#: JSON values, including what Python's json module also reads: NaN, ±Infinity, huge ints.
specials = st.sampled_from([float("inf"), float("-inf"), float("nan"), 10**400, -1, 2**63,
                            1.5, "", "0" * 64, "a" * 64, True, None, [], {}])
scalars = (specials | st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
           | st.text(max_size=20))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=20)
hexid = st.sampled_from(["a" * 64, "0" * 64]) | st.text("0123456789abcdef", min_size=64,
                                                          max_size=64)


def _repo() -> Repository:
    return Repository(GuardedBackend(MemoryBackend()), KEYS, None)


def _store(repo: Repository, kind: bytes, plain: bytes, key_of: Any,
           payload: bytes | None = None) -> str:
    """Seal `plain` under its correct name, so decoding gets past authentication."""
    object_id = KEYS.name(kind, hashlib.sha256(plain).digest())
    data = crypto.seal(KEYS.encryption, kind, object_id,
                       codec.encode(plain) if payload is None else payload)
    repo.backend.put_new(key_of(object_id), data)
    return object_id


def _plain(value: Any) -> bytes:
    try:
        return canonical(value)
    except (ValueError, TypeError):
        return json.dumps(value).encode()


@FUZZ
@given(st.binary(max_size=300), st.sampled_from(KINDS), hexid)
def test_random_bytes_never_open(data: bytes, kind: bytes, object_id: str) -> None:
    with pytest.raises(IntegrityError):
        crypto.open_sealed(KEYS.encryption, kind, object_id, data, "fuzzed")


@FUZZ
@given(st.binary(max_size=200), st.data())
def test_any_mutation_of_a_sealed_object_fails(plain: bytes, data: st.DataObject) -> None:
    object_id = KEYS.name(crypto.KIND_BLOB, hashlib.sha256(plain).digest())
    sealed = bytearray(crypto.seal(KEYS.encryption, crypto.KIND_BLOB, object_id, plain))
    how = data.draw(st.sampled_from(["flip", "truncate", "extend", "rename"]))
    if how == "flip":
        at = data.draw(st.integers(0, len(sealed) - 1))
        sealed[at] ^= data.draw(st.integers(1, 255))
    elif how == "truncate":
        del sealed[data.draw(st.integers(0, len(sealed) - 1)):]
    elif how == "extend":
        sealed += data.draw(st.binary(min_size=1, max_size=20))
    else:
        object_id = data.draw(hexid.filter(lambda other: other != object_id))
    with pytest.raises(IntegrityError):
        crypto.open_sealed(KEYS.encryption, crypto.KIND_BLOB, object_id, bytes(sealed), "x")


@FUZZ
@given(st.binary(max_size=400))
def test_payload_codec(payload: bytes) -> None:
    try:
        codec.decode(payload, "fuzzed payload")
    except IntegrityError:
        pass


head_like = st.fixed_dictionaries(
    {"v": st.just(1) | scalars, "generation": scalars | st.integers(0, 9),
     "snapshot": scalars | hexid, "store": scalars, "device": scalars, "time": scalars})


@FUZZ
@given(st.one_of(st.binary(max_size=200), json_values.map(_plain), head_like.map(_plain)),
       st.booleans())
def test_head_decoder(plain: bytes, sealed_right: bool) -> None:
    _head(plain, sealed_right)


@FUZZ
@given(head_like.map(_plain))
def test_authentic_head_fields(plain: bytes) -> None:
    _head(plain, True)


def _head(plain: bytes, sealed_right: bool) -> None:
    repo = _repo()
    raw = crypto.seal(KEYS.head, crypto.KIND_HEAD, HEAD_REF, plain) if sealed_right else plain
    repo.backend.swap_ref(HEAD_REF, raw, None)
    try:
        head = repo.read_head()
    except RoamError:
        return
    assert head is not None and isinstance(head.generation, int) and head.generation >= 0
    assert all(isinstance(v, str) for v in (head.snapshot, head.store, head.device, head.time))


snapshot_like = st.fixed_dictionaries(
    {"v": st.just(1), "generation": scalars, "device": scalars, "created": scalars,
     "root": scalars | hexid, "roam_version": scalars},
    optional={"parent": scalars | hexid, "hermes_version": scalars, "files": scalars,
              "bytes": scalars, "roster": json_values})


@FUZZ
@given(json_values | snapshot_like, st.sampled_from(["as-is", "v1"]))
def test_snapshot_decoder(value: Any, shape: str) -> None:
    if shape != "as-is" and isinstance(value, dict):
        value = {**value, "v": 1}
    repo = _repo()
    snapshot_id = _store(repo, crypto.KIND_SNAPSHOT, _plain(value), snapshot_key)
    try:
        snapshot = repo.load_snapshot(snapshot_id)
    except RoamError:
        return
    assert isinstance(snapshot.generation, int) and isinstance(snapshot.files, int)


names = st.text(max_size=6) | st.sampled_from(["..", ".", "", "a/b", "/", "x\x00", "ok"])
blob_refs = st.lists(st.tuples(hexid | scalars, st.just("packs/ab/" + "ab" * 32) | scalars,
                               st.integers(0, 99) | scalars, st.integers(0, 99) | scalars
                               ).map(list), max_size=3)
file_nodes = st.fixed_dictionaries(
    {"t": st.just("f"), "size": st.integers(0, 9) | scalars, "mode": st.just(420) | scalars,
     "sha256": st.just("a" * 64) | scalars, "blobs": blob_refs | scalars},
    optional={"scope": scalars})
trees = st.recursive(st.dictionaries(names, file_nodes | json_values, max_size=4),
                     lambda inner: st.dictionaries(names, inner | file_nodes, max_size=3),
                     max_leaves=12)


def _write_tree(repo: Repository, entries: Any) -> str:
    """Store a (fuzzed) tree; nested dicts become subtrees referenced by id."""
    if isinstance(entries, dict):
        nodes = {}
        for name, node in entries.items():
            if isinstance(node, dict) and node.get("t") != "f":
                nodes[name] = {"t": "d", "tree": _write_tree(repo, node)}
            else:
                nodes[name] = node
        entries = nodes
    plain = _plain({"v": 1, "entries": entries})
    object_id = KEYS.name(crypto.KIND_TREE, hashlib.sha256(plain).digest())
    if not repo.backend.exists(tree_key(object_id)):
        _store(repo, crypto.KIND_TREE, plain, tree_key)
    return object_id


@FUZZ
@given(st.dictionaries(names, file_nodes, min_size=1, max_size=3))
def test_file_entry_fields(entries: Any) -> None:
    test_tree_and_manifest_decoder.hypothesis.inner_test(entries)  # type: ignore[attr-defined]


@FUZZ
@given(trees | json_values)
def test_tree_and_manifest_decoder(entries: Any) -> None:
    repo = _repo()
    root = _write_tree(repo, entries)
    try:
        manifest = repo.load_manifest(root)
    except RoamError:
        return
    for path, entry in manifest.items():
        assert check_path(path) == path == entry.path
        assert entry.size >= 0 and 0 <= entry.mode <= 0o777
        for blob_id, pack, offset, length in entry.blobs:
            assert isinstance(blob_id, str) and isinstance(pack, str)
            assert offset >= 0 and length >= 0


@FUZZ
@given(json_values, st.sampled_from(["as-is", "index-like"]))
def test_index_decoder(value: Any, shape: str) -> None:
    if shape == "index-like":
        value = {"v": 1, "pack": value, "blobs": value}
    repo = _repo()
    index_id = _store(repo, crypto.KIND_INDEX, _plain(value), index_key)
    try:
        refs = repo.load_index(index_id)
        repo.known_blobs()
    except RoamError:
        return
    assert all(isinstance(ref[2], int) and isinstance(ref[3], int) for ref in refs)


@FUZZ
@given(st.binary(max_size=300), hexid | st.text(max_size=70),
       st.sampled_from(["packs/ab/" + "ab" * 32, "../x", "", "packs/" + "a" * 600]),
       st.integers(-5, 400), st.integers(-5, 400))
def test_blob_reads_from_hostile_references(pack: bytes, blob_id: str, key: str,
                                            offset: int, length: int) -> None:
    repo = _repo()
    repo.backend.inner.put_new("packs/ab/" + "ab" * 32, pack)
    try:
        repo.read_blob((blob_id, key, offset, length))
    except RoamError:
        return
    raise AssertionError("random bytes decoded as a blob")


def test_deeply_nested_json_is_an_integrity_error() -> None:
    """A plaintext nested deeper than Python's recursion limit is refused, not a crash."""
    repo = _repo()
    deep = b"[" * 100_000 + b"]" * 100_000
    snapshot_id = _store(repo, crypto.KIND_SNAPSHOT, deep, snapshot_key)
    with pytest.raises(IntegrityError):
        repo.load_snapshot(snapshot_id)
    repo.backend.swap_ref(HEAD_REF, crypto.seal(KEYS.head, crypto.KIND_HEAD, HEAD_REF, deep),
                          None)
    with pytest.raises(IntegrityError):
        repo.read_head()
