"""docs/format.md's test vectors, read from the document itself so the two cannot drift."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from roam_core import crypto
from roam_core.errors import ArchiveKeyError, IntegrityError
from roam_core.store import codec
from roam_core.store.objects import Head, canonical

DOC = (Path(__file__).resolve().parents[2] / "docs" / "format.md").read_text()
KEY = bytes(range(32))


def vector(label: str) -> str:
    row = next(line for line in DOC.splitlines() if line.startswith(f"| {label} |"))
    return re.findall(r"`([0-9a-f]+)`", row)[-1]


def test_sub_keys() -> None:
    keys = crypto.Keys.derive(KEY)
    assert keys.encryption.hex() == vector("encryption sub-key")
    assert keys.head.hex() == vector("head sub-key")
    assert keys.naming.hex() == vector("naming sub-key")


def test_blob_vector_seals_and_opens() -> None:
    keys = crypto.Keys.derive(KEY)
    data = b"hello, roam\n"
    blob_id = keys.name(crypto.KIND_BLOB, hashlib.sha256(data).digest())
    assert blob_id == vector("blob id of `hello, roam\\n`".replace("\\n", "\\n"))
    payload = codec.encode(data)
    assert payload.hex() == vector("its payload (raw)")
    sealed = crypto.seal(keys.encryption, crypto.KIND_BLOB, blob_id, payload, nonce=bytes(12))
    assert sealed.hex() == vector("sealed with nonce `00`×12")
    assert codec.decode(crypto.open_sealed(keys.encryption, crypto.KIND_BLOB, blob_id,
                                           sealed, "vector"), "vector") == data


def test_head_vector() -> None:
    keys = crypto.Keys.derive(KEY)
    head = Head(1, "ab" * 32, "cd" * 16, "desktop", "2026-11-30T00:00:00+00:00")
    sealed = crypto.seal(keys.head, crypto.KIND_HEAD, "HEAD", canonical(head.as_json()),
                         nonce=bytes(range(12)))
    assert sealed.hex() == vector("HEAD sealed with nonce `00 01 … 0b`")


@pytest.mark.parametrize("damage", ["flip-body", "flip-header", "truncate", "other-id",
                                    "other-kind", "version"])
def test_damaged_objects_fail_authentication(damage: str) -> None:
    keys = crypto.Keys.derive(KEY)
    sealed = bytearray(crypto.seal(keys.encryption, crypto.KIND_BLOB, "a" * 64, b"\0payload"))
    object_id, kind = "a" * 64, crypto.KIND_BLOB
    if damage == "flip-body":
        sealed[-1] ^= 1
    elif damage == "flip-header":
        sealed[6] ^= 1
    elif damage == "truncate":
        sealed = sealed[:20]
    elif damage == "other-id":
        object_id = "b" * 64
    elif damage == "other-kind":
        kind = crypto.KIND_TREE
    else:
        sealed[2] = 2
    with pytest.raises(IntegrityError):
        crypto.open_sealed(keys.encryption, kind, object_id, bytes(sealed), "the object")


def test_wrong_key_fails() -> None:
    good = crypto.Keys.derive(KEY)
    other = crypto.Keys.derive(bytes(32))
    sealed = crypto.seal(good.encryption, crypto.KIND_TREE, "c" * 64, b"\0{}")
    with pytest.raises(IntegrityError, match="failed authentication"):
        crypto.open_sealed(other.encryption, crypto.KIND_TREE, "c" * 64, sealed, "tree")


def test_compression_is_used_only_when_it_pays() -> None:
    import os

    text = b"memories and skills " * 5000
    assert codec.encode(text)[0] == codec.CODEC_ZSTD
    noise = os.urandom(100_000)
    assert codec.encode(noise)[0] == codec.CODEC_RAW
    assert codec.decode(codec.encode(text), "t") == text


@pytest.mark.parametrize("raw", ["00" * 32, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="])
def test_parse_key_accepts(raw: str) -> None:
    assert len(crypto.parse_key(raw)) == 32


@pytest.mark.parametrize("raw", [None, "", "zz" * 32, "abc", "AAAA" * 12])
def test_parse_key_refuses(raw: str | None) -> None:
    with pytest.raises(ArchiveKeyError):
        crypto.parse_key(raw)
