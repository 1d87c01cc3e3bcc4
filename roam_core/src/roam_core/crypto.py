"""The archive key, its sub-keys, and sealed objects (AES-256-GCM with authenticated headers).

One 32-byte archive key per fleet. HKDF-SHA256 derives three independent sub-keys: one
encrypts objects, one authenticates (and encrypts) HEAD, one names objects by a keyed hash
so the store learns nothing about content. The exact byte layout is in docs/format.md.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import string
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from roam_core.errors import ArchiveKeyError, IntegrityError

KEY_ENV = "ROAM_ARCHIVE_KEY"
KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
MAGIC = b"RM"
FORMAT_VERSION = 1
HEADER_BYTES = len(MAGIC) + 2 + NONCE_BYTES
HKDF_SALT = b"roam archive v1"

#: One byte after the magic names what a sealed object holds.
KIND_BLOB = b"B"
KIND_TREE = b"T"
KIND_SNAPSHOT = b"S"
KIND_INDEX = b"I"
KIND_HEAD = b"H"
#: A record that some packs and indexes are gone: their blobs no longer count as stored.
KIND_VOID = b"V"
#: A record of generations `roam forget` dropped: who, when, under which policy.
KIND_FORGET = b"F"
#: A prune's list of objects found unreferenced, deleted once its grace period has passed.
KIND_MARK = b"M"
#: The LEASE ref (sealed under the HEAD sub-key, like HEAD): who may delete objects now.
KIND_LEASE = b"L"
#: A key rotation's journal record, sealed under the NEW key (`roam key rotate`).
KIND_ROTATION = b"R"
#: The one record a rotation leaves under the OLD key: rotated when, by whom, nothing else.
KIND_TOMBSTONE = b"X"
KINDS = {KIND_BLOB, KIND_TREE, KIND_SNAPSHOT, KIND_INDEX, KIND_HEAD, KIND_VOID, KIND_FORGET,
         KIND_MARK, KIND_LEASE, KIND_ROTATION, KIND_TOMBSTONE}

_HEX = re.compile(r"^[0-9a-fA-F]{64}$")


def parse_key(text: str | None) -> bytes:
    """Decode an archive key: 64 hex characters, or base64/base64url, padded or not."""
    if text is None or not text.strip():
        raise ArchiveKeyError(
            f"{KEY_ENV} is not set; make one with: python3 -c "
            "\"import secrets;print(secrets.token_urlsafe(32))\""
        )
    raw = text.strip()
    if _HEX.match(raw):
        return bytes.fromhex(raw)
    if all(char in string.hexdigits for char in raw) and abs(len(raw) - 2 * KEY_BYTES) <= 8:
        # hex digits are base64 too, but a near-64 run of them is a hex key cut or padded
        raise ArchiveKeyError(f"{KEY_ENV} looks like a hex key of {len(raw)} characters; "
                              f"a hex key is exactly {2 * KEY_BYTES}")
    cleaned = raw.replace("-", "+").replace("_", "/")
    cleaned += "=" * (-len(cleaned) % 4)
    try:
        key = base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError):
        raise ArchiveKeyError(
            f"{KEY_ENV} is neither 64 hex characters nor base64 ({len(raw)} characters given)"
        ) from None
    if len(key) != KEY_BYTES:
        raise ArchiveKeyError(f"{KEY_ENV} decodes to {len(key)} bytes; it must be {KEY_BYTES}")
    return key


def hkdf(key: bytes, info: bytes, length: int = 32) -> bytes:
    """HKDF-SHA256 (RFC 5869) with roam's fixed salt."""
    prk = hmac.new(HKDF_SALT, key, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


@dataclass(frozen=True)
class Keys:
    """The three sub-keys derived from one archive key (hidden from repr: they are secrets)."""

    encryption: bytes = field(repr=False)
    head: bytes = field(repr=False)
    naming: bytes = field(repr=False)

    @classmethod
    def derive(cls, archive_key: bytes) -> Keys:
        if len(archive_key) != KEY_BYTES:
            raise ArchiveKeyError(f"the archive key must be {KEY_BYTES} bytes")
        return cls(
            encryption=hkdf(archive_key, b"roam/v1/object-encryption"),
            head=hkdf(archive_key, b"roam/v1/head-authentication"),
            naming=hkdf(archive_key, b"roam/v1/object-naming"),
        )

    @property
    def fingerprint(self) -> str:
        """16 hex digits naming this key (an HKDF output of its own: reveals nothing of it)."""
        return hmac.new(self.naming, b"roam/v1/fingerprint", hashlib.sha256).hexdigest()[:16]

    def name(self, kind: bytes, digest: bytes) -> str:
        """The object id for content whose SHA-256 is `digest` (keyed, so it reveals nothing).

        HMAC-SHA256 (RFC 2104) from the key's two padded hash states, copied: a push names
        every new blob and tree, and `hmac.new` cost three times as much per name.
        """
        inner, outer = _hmac_states(self.naming)
        inner = inner.copy()
        inner.update(kind + b"\0" + digest)
        outer = outer.copy()
        outer.update(inner.digest())
        return outer.hexdigest()


_states_lock = threading.Lock()
_states: dict[bytes, tuple[Any, Any]] = {}


def _hmac_states(key: bytes) -> tuple[Any, Any]:
    """SHA-256 after the inner and the outer padded key (HMAC's first block of each)."""
    found = _states.get(key)
    if found is None:
        block = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
        found = (hashlib.sha256(bytes(b ^ 0x36 for b in block)),
                 hashlib.sha256(bytes(b ^ 0x5C for b in block)))
        with _states_lock:
            if len(_states) > 16:  # a few keys live in one process (a rotation: two)
                _states.clear()
            _states[key] = found
    return found


_ciphers = threading.local()


def _aead(key: bytes) -> Any:
    # one cipher object per key and thread: making one per object cost ~5 µs each, a
    # noticeable share of sealing 20,000 small blobs
    made: dict[bytes, Any] | None = getattr(_ciphers, "made", None)
    if made is None:
        made = _ciphers.made = {}
    found = made.get(key)
    if found is None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        found = made[key] = AESGCM(key)
        if len(made) > 8:  # a process holds a handful of keys; never grow without bound
            made.pop(next(iter(made)))
    return found


def seal(key: bytes, kind: bytes, object_id: str, plaintext: bytes,
         nonce: bytes | None = None, version: int = FORMAT_VERSION) -> bytes:
    """Encrypt and authenticate `plaintext`; the header and the object's id are bound as AAD.

    `version` is the header's format byte: 1 for every object; HEAD carries the store's
    format version (see `roam_core.store.objects.STORE_FORMAT`).
    """
    nonce = nonce if nonce is not None else os.urandom(NONCE_BYTES)
    header = MAGIC + bytes([version]) + kind + nonce
    return header + _aead(key).encrypt(nonce, plaintext, header + object_id.encode("ascii"))


def open_sealed(key: bytes, kind: bytes, object_id: str, sealed: bytes | memoryview,
                what: str, versions: Collection[int] = (FORMAT_VERSION,)) -> bytes:
    """Authenticate and decrypt a sealed object, or raise `IntegrityError` naming `what`.

    `versions`: the header format bytes accepted (HEAD accepts each store format).
    `sealed` may be a view into a larger buffer (a blob in a pack span): the body is
    decrypted where it lies, never copied first (a copy of each blob, and another of its
    body, were two fresh buffers the size of every file a pull wrote).
    """
    from cryptography.exceptions import InvalidTag

    header = bytes(sealed[:HEADER_BYTES])
    if len(sealed) < HEADER_BYTES + TAG_BYTES or header[:2] != MAGIC:
        raise IntegrityError(f"integrity error: {what} is truncated or not a roam object")
    if header[2] not in versions:
        raise IntegrityError(f"integrity error: {what} has unknown format version {header[2]}")
    if header[3:4] != kind:
        raise IntegrityError(f"integrity error: {what} is not the kind of object expected")
    body = memoryview(sealed)[HEADER_BYTES:]
    nonce = header[4:]
    try:
        return _aead(key).decrypt(nonce, body, header + object_id.encode("ascii"))
    except InvalidTag:
        raise IntegrityError(f"integrity error: {what} failed authentication") from None
